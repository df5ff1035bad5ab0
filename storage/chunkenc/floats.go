package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Float column codec tags (the byte after the count).
const (
	floatTagConst   = 1 // 8 bytes: the bit pattern every value shares
	floatTagXOR     = 2 // Gorilla XOR bit stream (xor.go)
	floatTagDecimal = 3 // decimal exponent, exceptions, integer column (decimal.go)
	// floatTagZstd is ORed into the XOR or decimal tag when the body after
	// the tag is zstd-compressed (zstd.go).
	floatTagZstd = 0x80
)

// zstdMinValues is the shortest column for which zstd is tried. Below a few
// hundred values the frame overhead (~10 bytes) and the already bit-packed
// body leave zstd nothing to win, and trying costs encode time.
const zstdMinValues = 256

// AppendFloats appends a lossless encoding of vs to dst and returns the
// extended buffer. Every value round trips bit-exactly: NaN payloads
// (Prometheus' StaleNaN), -0 and ±Inf included.
//
// Per column it writes the smallest of: a constant (all bit patterns equal),
// Gorilla XOR, or decimal conversion (the smallest power of ten that makes
// every value an exact integer, values that are not become exceptions) over
// the integer column codec (delta, delta-of-delta, linear, FOR bit packing);
// long columns are also tried through zstd. The byte after the count says
// which.
//
// It panics if len(vs) > MaxColumnLen. Safe for concurrent use.
func AppendFloats(dst []byte, vs []float64) []byte {
	checkLen(len(vs))
	dst = binary.AppendUvarint(dst, uint64(len(vs)))
	if len(vs) == 0 {
		return dst
	}
	if isConst(vs) {
		dst = append(dst, floatTagConst)
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(vs[0]))
	}
	start := len(dst)
	dst = append(dst, floatTagXOR)
	dst = appendXOR(dst, vs)
	xorLen := len(dst) - start

	dec := getBytes()
	defer putBytes(dec)
	var ok bool
	*dec, ok = appendDecimal(append((*dec)[:0], floatTagDecimal), vs, xorLen)
	if ok && len(*dec) < xorLen {
		dst = append(dst[:start], *dec...)
	}
	if len(vs) >= zstdMinValues {
		dst = tryZstd(dst, start)
	}
	return dst
}

func isConst(vs []float64) bool {
	b := math.Float64bits(vs[0])
	for _, v := range vs[1:] {
		if math.Float64bits(v) != b {
			return false
		}
	}
	return true
}

// DecodeFloats decodes one column written by AppendFloats, appends its values
// to dst and returns the extended slice and the rest of src. It never panics
// on corrupt input; errors wrap ErrCorrupt or ErrTooLarge, and on error dst is
// returned unextended. Safe for concurrent use.
func DecodeFloats(dst []float64, src []byte) ([]float64, []byte, error) {
	out, rest, err := decodeFloats(dst, src)
	if err != nil {
		return dst, src, fmt.Errorf("decode floats: %w", err)
	}
	return out, rest, nil
}

func decodeFloats(dst []float64, src []byte) ([]float64, []byte, error) {
	n, src, err := readCount(src, "count", MaxColumnLen)
	if err != nil || n == 0 {
		return dst, src, err
	}
	tag, src, err := readByte(src, "codec tag")
	if err != nil {
		return dst, src, err
	}
	out := grow(dst, n)
	vs := out[len(dst):]
	if tag&floatTagZstd != 0 {
		body, rest, err := readZstd(src)
		if err != nil {
			return dst, src, err
		}
		defer putBytes(body)
		tail, err := decodeFloatBody(vs, *body, n, tag&^floatTagZstd)
		if err != nil {
			return dst, src, err
		}
		if len(tail) != 0 {
			return dst, src, fmt.Errorf("%d bytes after compressed body: %w", len(tail), ErrCorrupt)
		}
		return out, rest, nil
	}
	rest, err := decodeFloatBody(vs, src, n, tag)
	if err != nil {
		return dst, src, err
	}
	return out, rest, nil
}

func decodeFloatBody(vs []float64, src []byte, n int, tag byte) ([]byte, error) {
	switch tag {
	case floatTagConst:
		if len(src) < 8 {
			return src, fmt.Errorf("read constant: %w", ErrCorrupt)
		}
		c := math.Float64frombits(binary.LittleEndian.Uint64(src))
		for i := range vs {
			vs[i] = c
		}
		return src[8:], nil
	case floatTagXOR:
		return decodeXOR(vs, src, n)
	case floatTagDecimal:
		return decodeDecimal(vs, src, n)
	}
	return src, fmt.Errorf("unknown codec tag %#x: %w", tag, ErrCorrupt)
}
