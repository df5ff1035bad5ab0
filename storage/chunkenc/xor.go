package chunkenc

import (
	"fmt"
	"math"
	"math/bits"
)

// Gorilla-style XOR float codec (Pelkonen et al., VLDB 2015), on the LSB-first
// bit stream of bitpack.go. The first value is 64 raw bits. Each later value
// is XORed with its predecessor:
//
//	'0'                       same bits as the previous value
//	'1' '0' <m bits>          the meaningful bits fit the previous window of
//	                          m = 64-leading-trailing bits; write them
//	'1' '1' <5 bits leading> <6 bits m-1> <m bits>
//	                          a new window: leading zeros (capped at 31), then
//	                          the meaningful length minus one, then the bits
//
// The stream is padded to a whole byte.

func appendXOR(dst []byte, vs []float64) []byte {
	w := bitWriter{buf: dst}
	prev := math.Float64bits(vs[0])
	w.write(prev, 64)
	leading, trailing := uint(0xff), uint(0)
	for _, v := range vs[1:] {
		cur := math.Float64bits(v)
		x := cur ^ prev
		prev = cur
		if x == 0 {
			w.write(0, 1)
			continue
		}
		lz, tz := uint(bits.LeadingZeros64(x)), uint(bits.TrailingZeros64(x))
		if lz > 31 {
			lz = 31
		}
		if leading != 0xff && lz >= leading && tz >= trailing {
			m := 64 - leading - trailing
			w.write(0b01, 2) // '1' then '0', LSB first
			w.write(x>>trailing, m)
			continue
		}
		leading, trailing = lz, tz
		m := 64 - lz - tz
		w.write(0b11, 2)
		w.write(uint64(lz), 5)
		w.write(uint64(m-1), 6)
		w.write(x>>tz, m)
	}
	return w.finish()
}

// decodeXOR decodes n values into dst[:n] and returns the rest of src.
func decodeXOR(dst []float64, src []byte, n int) ([]byte, error) {
	r := bitReader{src: src}
	prev := r.read(64)
	dst[0] = math.Float64frombits(prev)
	leading, trailing := uint(0), uint(0)
	haveWindow := false
	for i := 1; i < n && !r.over; i++ {
		if !r.readBit() {
			dst[i] = math.Float64frombits(prev)
			continue
		}
		if r.readBit() {
			leading = uint(r.read(5))
			m := uint(r.read(6)) + 1
			if leading+m > 64 {
				return src, fmt.Errorf("xor value %d: window %d+%d bits: %w", i, leading, m, ErrCorrupt)
			}
			trailing = 64 - leading - m
			haveWindow = true
		} else if !haveWindow {
			return src, fmt.Errorf("xor value %d: reuses a window before any: %w", i, ErrCorrupt)
		}
		m := 64 - leading - trailing
		prev ^= r.read(m) << trailing
		dst[i] = math.Float64frombits(prev)
	}
	if r.over {
		return src, fmt.Errorf("xor stream truncated: %w", ErrCorrupt)
	}
	return src[r.bytesUsed():], nil
}
