package chunkenc

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// AppendTimestamps appends the encoding of ts to dst and returns the extended
// buffer. Timestamps may be in any order and take any int64 value; the
// encoding round trips exactly.
//
// Layout: uvarint n, then (n > 0) an integer column (see intcol.go and
// docs/format/chunkenc.md). Scrape timestamps usually come out as the linear
// mode: a chunk on an exact grid start + i*step is (start, step) with zero-width
// residuals, about a dozen bytes whatever n is; scrape jitter of a few ms costs
// a few bits per sample (residuals from the grid, bit-packed). Gaps and
// irregular series fall to delta-of-delta, delta or zigzag varint deltas,
// whichever is smallest.
//
// It panics if len(ts) > MaxColumnLen. Safe for concurrent use.
func AppendTimestamps(dst []byte, ts []int64) []byte {
	checkLen(len(ts))
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	return appendInts(dst, asUint64s(ts))
}

// DecodeTimestamps decodes one column written by AppendTimestamps, appends
// its values to dst and returns the extended slice and the rest of src. It
// never panics on corrupt input; errors wrap ErrCorrupt or ErrTooLarge, and
// on error dst is returned unextended. Safe for concurrent use.
func DecodeTimestamps(dst []int64, src []byte) ([]int64, []byte, error) {
	n, rest, err := readCount(src, "timestamp count", MaxColumnLen)
	if err != nil {
		return dst, src, fmt.Errorf("decode timestamps: %w", err)
	}
	out := grow(dst, n)
	rest, err = decodeInts(asUint64s(out[len(dst):]), rest, n)
	if err != nil {
		return dst, src, fmt.Errorf("decode timestamps: %w", err)
	}
	return out, rest, nil
}

// grow returns s extended by n elements (contents of the new ones undefined).
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) < n {
		ns := make([]T, len(s), len(s)+n)
		copy(ns, s)
		s = ns
	}
	return s[:len(s)+n]
}

// asUint64s reinterprets 64-bit values as their bit patterns without copying;
// int64 and float64 share uint64's size and alignment, so this is sound.
func asUint64s[T int64 | float64](s []T) []uint64 {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&s[0])), len(s))
}
