package loki

import (
	"bytes"
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
// any other type is snappy-compressed (raw block format) protobuf.
// Content-Encoding gzip or deflate is removed first; snappy (which some
// clients send for the protobuf body's own compression) changes nothing, as
// in Loki. A JSON body with Content-Encoding snappy is taken as plain JSON,
// as Loki takes it, or, when it does not start like JSON, snappy-decoded
// (a client that compressed it as the header says). No more than maxBytes
// are read or decompressed.
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
	snappyEncoded := false
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "snappy":
		snappyEncoded = true
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
		return nil, fmt.Errorf("%w: unsupported Content-Encoding %q (supported: gzip, deflate, snappy)", ErrMalformed, contentEncoding)
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
		if !snappyEncoded || looksLikeJSON(b) {
			if err := charge(len(b)); err != nil { // the request decoded from it
				return nil, err
			}
			req, err := DecodeJSON(b)
			if err == nil || !snappyEncoded {
				return req, err
			}
		}
		raw, err := decodeSnappy(b, maxBytes, "JSON body", charge)
		if err != nil {
			return nil, err
		}
		return DecodeJSON(raw)
	}
	raw, err := decodeSnappy(b, maxBytes, "protobuf body", charge)
	if err != nil {
		return nil, err
	}
	return DecodeProto(raw)
}

// decodeSnappy decodes a raw snappy block of at most maxBytes decoded,
// charging the decoded size twice first: the decoded bytes, and the request
// decoded from them.
func decodeSnappy(b []byte, maxBytes int64, what string, charge func(int) error) ([]byte, error) {
	n, err := s2.DecodedLen(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not valid snappy (%w)", ErrMalformed, what, err)
	}
	if int64(n) > maxBytes {
		return nil, fmt.Errorf("%w: %s decompresses to %d bytes, limit %d", ErrTooLarge, what, n, maxBytes)
	}
	if err := charge(2 * n); err != nil {
		return nil, err
	}
	raw, err := s2.Decode(nil, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not valid snappy (%w)", ErrMalformed, what, err)
	}
	return raw, nil
}

// looksLikeJSON reports whether b starts, after white space, with a JSON
// object. A snappy block starts with its decoded length as a varint, whose
// first byte is '{' only for a length of exactly 123 bytes; DecodeBody then
// tries JSON first and the snappy block second.
func looksLikeJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}
