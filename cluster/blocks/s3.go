package blocks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Options configure an S3-API bucket (AWS S3, MinIO, Ceph RGW, R2,
// versitygw, ...).
type S3Options struct {
	// Endpoint is host:port of the S3 API (required).
	Endpoint string
	// Bucket is the bucket's name (required; it must exist).
	Bucket string
	// Region is the bucket's region ("" lets the client find out).
	Region string
	// AccessKey and SecretKey are static credentials; empty takes them
	// from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, or
	// MINIO_ROOT_USER/MINIO_ROOT_PASSWORD).
	AccessKey, SecretKey string
	// Insecure talks plain HTTP (loopback tests); default HTTPS.
	Insecure bool
}

type s3Bucket struct {
	cl     *minio.Client
	bucket string
}

// NewS3Bucket returns the bucket of opts (through minio-go, path-style
// addressing so that any S3-API server works).
func NewS3Bucket(opts S3Options) (Bucket, error) {
	if opts.Endpoint == "" || opts.Bucket == "" {
		return nil, errors.New("s3 bucket: endpoint and bucket are required")
	}
	creds := credentials.NewStaticV4(opts.AccessKey, opts.SecretKey, "")
	if opts.AccessKey == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.EnvMinio{}})
	}
	cl, err := minio.New(opts.Endpoint, &minio.Options{Creds: creds, Secure: !opts.Insecure, Region: opts.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	return &s3Bucket{cl: cl, bucket: opts.Bucket}, nil
}

func (b *s3Bucket) Upload(ctx context.Context, name string, r io.Reader, size int64) error {
	if _, err := b.cl.PutObject(ctx, b.bucket, name, r, size, minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}

func (b *s3Bucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	obj, err := b.cl.GetObject(ctx, b.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	if _, err := obj.Stat(); err != nil { // GetObject is lazy: find a missing object now
		_ = obj.Close()
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("get %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return obj, nil
}

func (b *s3Bucket) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	for o := range b.cl.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, o.Err)
		}
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out, nil
}

func (b *s3Bucket) Delete(ctx context.Context, name string) error {
	if err := b.cl.RemoveObject(ctx, b.bucket, name, minio.RemoveObjectOptions{}); err != nil && minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
