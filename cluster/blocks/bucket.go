package blocks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Bucket is the object store blocks live in: S3-API storage (NewS3Bucket)
// or a directory (NewFSBucket: tests, single-node long-term storage).
// Names are slash-separated. Implementations are safe for concurrent use.
type Bucket interface {
	// Upload writes the object name from r (size bytes), replacing it.
	Upload(ctx context.Context, name string, r io.Reader, size int64) error
	// Get opens the object name; ErrNotFound when there is none.
	Get(ctx context.Context, name string) (io.ReadCloser, error)
	// List returns the names of the objects under prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object name; a missing object is not an error.
	Delete(ctx context.Context, name string) error
}

// Sentinels. Inspect with errors.Is.
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("object not found")
)

// fsBucket is a Bucket in a directory.
type fsBucket struct{ dir string }

// NewFSBucket returns a bucket stored under dir (created if missing).
func NewFSBucket(dir string) (Bucket, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("filesystem bucket: %w", err)
	}
	return &fsBucket{dir: dir}, nil
}

func (b *fsBucket) path(name string) (string, error) {
	clean := path.Clean("/" + name)
	if clean == "/" || strings.Contains(name, "\\") {
		return "", fmt.Errorf("bad object name %q", name)
	}
	return filepath.Join(b.dir, filepath.FromSlash(clean[1:])), nil
}

func (b *fsBucket) Upload(_ context.Context, name string, r io.Reader, _ int64) error {
	p, err := b.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".upload-*")
	if err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	_, err = io.Copy(tmp, r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p) // readers see the old or the whole new object
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}

func (b *fsBucket) Get(_ context.Context, name string) (io.ReadCloser, error) {
	p, err := b.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", name, ErrNotFound)
	}
	return f, err
}

func (b *fsBucket) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".upload-") {
			return nil
		}
		rel, err := filepath.Rel(b.dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	slices.Sort(out)
	return out, nil
}

func (b *fsBucket) Delete(_ context.Context, name string) error {
	p, err := b.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
