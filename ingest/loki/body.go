package loki

import (
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
)

// ErrTooLarge: the (decompressed) body is over the limit given to
// DecodeBody.
var ErrTooLarge = errors.New("push request too large")

// DecodeBody reads and decodes a push body given its Content-Type and
// Content-Encoding header values, as Loki does: application/json is JSON,
// any other type is snappy-compressed protobuf; Content-Encoding gzip or
// deflate is removed first. No more than maxBytes are read or decompressed.
func DecodeBody(contentType, contentEncoding string, body io.Reader, maxBytes int64) (*Request, error) {
	return DecodeBodyBudget(contentType, contentEncoding, body, maxBytes, nil)
}

// Budget charges the memory one push holds to the server's ingest budget;
// its errors abort the decoding and are returned wrapped. Implemented by the
// API's admission.
type Budget interface {
	// Reader returns r charging every byte read through it.
	Reader(r io.Reader) io.Reader
	// Charge charges n bytes more.
	Charge(n int64) error
}

// DecodeBodyBudget is DecodeBody charging b (nil: nothing) with the
// decompressed bytes as they are produced, the snappy-decoded size before
// decoding, and as much again for the decoded request.
func DecodeBodyBudget(contentType, contentEncoding string, body io.Reader, maxBytes int64, budget Budget) (*Request, error) {
	r := body
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
		}
		defer zr.Close()
		r = zr
	case "deflate":
		fr := flate.NewReader(body)
		defer fr.Close()
		r = fr
	default:
		return nil, fmt.Errorf("%w: unsupported Content-Encoding %q", ErrMalformed, contentEncoding)
	}
	if budget != nil {
		r = budget.Reader(r)
	}
	charge := func(n int) error {
		if budget == nil {
			return nil
		}
		return budget.Charge(int64(n))
	}
	b, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %w", ErrMalformed, err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/json" {
		if err := charge(len(b)); err != nil {
			return nil, err
		}
		return DecodeJSON(b)
	}
	n, err := s2.DecodedLen(b)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrMalformed, err)
	}
	if int64(n) > maxBytes {
		return nil, fmt.Errorf("%w: decompresses to %d bytes, limit %d", ErrTooLarge, n, maxBytes)
	}
	if err := charge(2 * n); err != nil { // the decoded body, and the request decoded from it
		return nil, err
	}
	raw, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %w", ErrMalformed, err)
	}
	return DecodeProto(raw)
}
