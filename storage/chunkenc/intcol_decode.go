package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Decoding of integer columns (format in intcol.go and docs/format/chunkenc.md).

// readFOR reads a FOR header and checks that n packed values follow.
func readFOR(src []byte, n int) (base uint64, w uint, rest []byte, err error) {
	lo, src, err := readVarint(src, "for base")
	if err != nil {
		return 0, 0, src, err
	}
	wb, src, err := readByte(src, "for width")
	if err != nil {
		return 0, 0, src, err
	}
	if wb > 64 {
		return 0, 0, src, fmt.Errorf("for width %d: %w", wb, ErrCorrupt)
	}
	w = uint(wb)
	if l := packedLen(n, w); len(src) < l {
		return 0, 0, src, fmt.Errorf("packed values need %d bytes, have %d: %w", l, len(src), ErrCorrupt)
	}
	return uint64(lo), w, src, nil
}

// decodeInts decodes n values written by appendInts into dst[:n] and returns
// the rest of src. len(dst) must be >= n.
func decodeInts(dst []uint64, src []byte, n int) ([]byte, error) {
	if n == 0 || len(src) == 0 || src[0] != intModePaged {
		return decodeIntsPage(dst, src, n, 0)
	}
	src = src[1:]
	prev := uint64(0)
	for i := 0; i < n; i += intPageLen {
		j := min(i+intPageLen, n)
		var err error
		if src, err = decodeIntsPage(dst[i:j], src, j-i, prev); err != nil {
			return src, fmt.Errorf("page %d: %w", i/intPageLen, err)
		}
		prev = dst[j-1]
	}
	return src, nil
}

// decodeIntsPage decodes one unpaged column (page) of n values whose first
// value and FOR base are relative to prev.
func decodeIntsPage(dst []uint64, src []byte, n int, prev uint64) ([]byte, error) {
	if n == 0 {
		return src, nil
	}
	mode, src, err := readByte(src, "int mode")
	if err != nil {
		return src, err
	}
	dst = dst[:n]
	if mode == intModeFOR {
		base, w, src, err := readFOR(src, n)
		if err != nil {
			return src, err
		}
		unpack(dst, src, n, w, base+prev)
		return src[packedLen(n, w):], nil
	}
	// A one-value column is always FOR and DoD needs three values, so that
	// no input has two readings.
	if mode >= numIntModes || n == 1 || (mode == intModeDoD && n < 3) {
		return src, fmt.Errorf("int mode %d for %d values: %w", mode, n, ErrCorrupt)
	}
	v0, src, err := readVarint(src, "first value")
	if err != nil {
		return src, err
	}
	dst[0] = uint64(v0) + prev
	switch mode {
	case intModeDelta:
		base, w, rest, err := readFOR(src, n-1)
		if err != nil {
			return rest, err
		}
		unpackDeltas(dst[1:], rest, n-1, w, base, dst[0])
		return rest[packedLen(n-1, w):], nil
	case intModeDoD:
		d1, rest, err := readVarint(src, "first delta")
		if err != nil {
			return rest, err
		}
		dst[1] = dst[0] + uint64(d1)
		base, w, rest, err := readFOR(rest, n-2)
		if err != nil {
			return rest, err
		}
		unpack(dst[2:], rest, n-2, w, base)
		d, v := uint64(d1), dst[1]
		for i := 2; i < n; i++ {
			d += dst[i]
			v += d
			dst[i] = v
		}
		return rest[packedLen(n-2, w):], nil
	case intModeDeltaVarint:
		for i := 1; i < n; i++ {
			u, k := binary.Uvarint(src)
			if k <= 0 {
				return src, fmt.Errorf("read delta %d: %w", i, ErrCorrupt)
			}
			src = src[k:]
			dst[i] = dst[i-1] + uint64(unzigzag(u))
		}
		return src, nil
	case intModeSparseDelta:
		bmLen := (n - 1 + 7) / 8
		if len(src) < bmLen {
			return src, fmt.Errorf("read delta bitmap: %w", ErrCorrupt)
		}
		bm, rest := src[:bmLen], src[bmLen:]
		nz := 0
		for _, b := range bm {
			nz += bits.OnesCount8(b)
		}
		if r := (n - 1) % 8; r != 0 && bm[bmLen-1]>>r != 0 {
			return src, fmt.Errorf("delta bitmap padding: %w", ErrCorrupt)
		}
		base, w, rest, err := readFOR(rest, nz)
		if err != nil {
			return rest, err
		}
		// Unpack the non-zero deltas to the end of dst, then expand forward;
		// the read position never falls behind the write position.
		j := n - nz
		unpack(dst[j:], rest, nz, w, base)
		// Branch-free: plateaus and flat counters make the bitmap
		// unpredictable enough that a branch per value mispredicts often.
		for i := 1; i < n; i++ {
			bit := uint64(bm[(i-1)>>3]>>((i-1)&7)) & 1
			// j reaches n once every non-zero delta is consumed; the
			// clamped read is then masked out.
			dst[i] = dst[i-1] + dst[min(j, n-1)]&-bit
			j += int(bit)
		}
		return rest[packedLen(nz, w):], nil
	case intModePatched:
		return decodePatched(dst, src, n)
	case intModeLinear:
		slope, rest, err := readVarint(src, "slope")
		if err != nil {
			return rest, err
		}
		base, w, rest, err := readFOR(rest, n-1)
		if err != nil {
			return rest, err
		}
		unpack(dst[1:], rest, n-1, w, base)
		acc := dst[0]
		for i := 1; i < n; i++ {
			acc += uint64(slope)
			dst[i] += acc
		}
		return rest[packedLen(n-1, w):], nil
	}
	return src, fmt.Errorf("BUG: unhandled int mode %d", mode)
}

// decodePatched decodes the rest of an intModePatched page; dst[0] is set.
func decodePatched(dst []uint64, src []byte, n int) ([]byte, error) {
	median, src, err := readVarint(src, "median delta")
	if err != nil {
		return src, err
	}
	wb, src, err := readByte(src, "patched width")
	if err != nil {
		return src, err
	}
	if wb > 64 {
		return src, fmt.Errorf("patched width %d: %w", wb, ErrCorrupt)
	}
	w := uint(wb)
	if l := packedLen(n-1, w); len(src) < l {
		return src, fmt.Errorf("packed values need %d bytes, have %d: %w", l, len(src), ErrCorrupt)
	}
	xs := dst[1:n]
	unpack(xs, src, n-1, w, 0)
	src = src[packedLen(n-1, w):]
	k, src, err := readCount(src, "exception count", n-1)
	if err != nil {
		return src, err
	}
	idx := -1
	for j := 0; j < k; j++ {
		var gap, hi uint64
		if gap, src, err = readUvarint(src, "exception index"); err != nil {
			return src, err
		}
		if gap >= uint64(n) || idx+1+int(gap) >= n-1 {
			return src, fmt.Errorf("exception index out of range: %w", ErrCorrupt)
		}
		idx += 1 + int(gap)
		if hi, src, err = readUvarint(src, "exception value"); err != nil {
			return src, err
		}
		if hi == 0 || w == 64 || hi>>(64-w) != 0 {
			return src, fmt.Errorf("exception high bits %#x at width %d: %w", hi, w, ErrCorrupt)
		}
		xs[idx] |= hi << w
	}
	m := uint64(median)
	for i := 1; i < n; i++ {
		dst[i] = dst[i-1] + uint64(unzigzag(dst[i])) + m
	}
	return src, nil
}
