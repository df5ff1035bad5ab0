package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// This file holds the bit-level primitives shared by every codec: fixed-width
// bit packing (LSB first), a bit stream writer and reader for the XOR codec,
// and bounds-checked varint readers. Bit order everywhere: bit k of a stream is
// bit (k mod 8) of byte k/8, so a value's least significant bit comes first.

// packedLen is the number of bytes n values of width w bits occupy.
func packedLen(n int, w uint) int {
	return int((uint64(n)*uint64(w) + 7) / 8)
}

// appendPacked appends the low w bits of every value of vs, LSB first, padded
// with zero bits to a whole byte. Values must fit in w bits.
func appendPacked(dst []byte, vs []uint64, w uint) []byte {
	if w == 0 || len(vs) == 0 {
		return dst
	}
	var acc uint64
	var nbits uint
	for _, v := range vs {
		acc |= v << nbits
		if nbits+w >= 64 {
			dst = binary.LittleEndian.AppendUint64(dst, acc)
			// Go defines shifts >= 64 of unsigned values as 0.
			acc = v >> (64 - nbits)
			nbits = nbits + w - 64
		} else {
			nbits += w
		}
	}
	for nbits > 0 {
		dst = append(dst, byte(acc))
		acc >>= 8
		nbits -= min(8, nbits)
	}
	return dst
}

// unpack reads n values of width w from src into dst[:n], adding base to each
// (wrapping). The caller has checked len(src) >= packedLen(n, w) and
// len(dst) >= n.
func unpack(dst []uint64, src []byte, n int, w uint, base uint64) {
	dst = dst[:n]
	if w == 0 {
		for i := range dst {
			dst[i] = base
		}
		return
	}
	mask := uint64(1)<<w - 1
	if w == 64 {
		mask = ^uint64(0)
	}
	i, bit := 0, uint64(0)
	// Fast path: one unaligned 8-byte load per value for the values whose
	// load stays inside src; no per-value length branch.
	if w <= 56 && len(src) >= 8 {
		fast := min(n, int((uint64(len(src)-8)*8)/uint64(w))+1)
		for ; i < fast; i++ {
			dst[i] = (binary.LittleEndian.Uint64(src[bit>>3:])>>(bit&7))&mask + base
			bit += uint64(w)
		}
	}
	for ; i < n; i++ {
		dst[i] = readBitsAt(src, bit, w) + base
		bit += uint64(w)
	}
}

// unpackDeltas is unpack followed by a running sum: dst[i] = dst[i-1] +
// packed_i + base, with dst[-1] = start. Fusing the two passes is what makes
// delta columns (most timestamp chunks) cheap to decode.
func unpackDeltas(dst []uint64, src []byte, n int, w uint, base, start uint64) {
	dst = dst[:n]
	acc := start
	if w == 0 {
		for i := range dst {
			acc += base
			dst[i] = acc
		}
		return
	}
	mask := uint64(1)<<w - 1
	if w == 64 {
		mask = ^uint64(0)
	}
	i, bit := 0, uint64(0)
	if w <= 56 && len(src) >= 8 {
		fast := min(n, int((uint64(len(src)-8)*8)/uint64(w))+1)
		for ; i < fast; i++ {
			acc += (binary.LittleEndian.Uint64(src[bit>>3:])>>(bit&7))&mask + base
			dst[i] = acc
			bit += uint64(w)
		}
	}
	for ; i < n; i++ {
		acc += readBitsAt(src, bit, w) + base
		dst[i] = acc
		bit += uint64(w)
	}
}

// readBitsAt reads w (1..64) bits starting at bit offset bit. Bytes past the
// end of src read as zero; callers check lengths beforehand.
func readBitsAt(src []byte, bit uint64, w uint) uint64 {
	off := bit >> 3
	s := uint(bit & 7)
	var lo uint64
	for k := uint64(0); k < 8 && off+k < uint64(len(src)); k++ {
		lo |= uint64(src[off+k]) << (8 * k)
	}
	lo >>= s
	if s > 0 && w > 64-s && off+8 < uint64(len(src)) {
		lo |= uint64(src[off+8]) << (64 - s)
	}
	if w == 64 {
		return lo
	}
	return lo & (uint64(1)<<w - 1)
}

// bitWriter appends a bit stream (LSB first) to buf.
type bitWriter struct {
	buf   []byte
	acc   uint64
	nbits uint
}

// write appends the low n (0..64) bits of v; v must fit in n bits.
func (w *bitWriter) write(v uint64, n uint) {
	if n == 0 {
		return
	}
	w.acc |= v << w.nbits
	if w.nbits+n >= 64 {
		w.buf = binary.LittleEndian.AppendUint64(w.buf, w.acc)
		w.acc = v >> (64 - w.nbits)
		w.nbits = w.nbits + n - 64
		return
	}
	w.nbits += n
}

// finish flushes the partial byte and returns the buffer.
func (w *bitWriter) finish() []byte {
	for w.nbits > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nbits -= min(8, w.nbits)
	}
	return w.buf
}

// bitReader reads a bit stream written by bitWriter. Reads past the end set
// the sticky overflow flag and return zeros; the caller checks ok().
type bitReader struct {
	src  []byte
	bit  uint64
	over bool
}

func (r *bitReader) read(n uint) uint64 {
	if n == 0 {
		return 0
	}
	if r.bit+uint64(n) > uint64(len(r.src))*8 {
		r.over = true
		r.bit = uint64(len(r.src)) * 8
		return 0
	}
	off := r.bit >> 3
	var v uint64
	if n <= 56 && off+8 <= uint64(len(r.src)) {
		v = (binary.LittleEndian.Uint64(r.src[off:]) >> (r.bit & 7)) & (uint64(1)<<n - 1)
	} else {
		v = readBitsAt(r.src, r.bit, n)
	}
	r.bit += uint64(n)
	return v
}

func (r *bitReader) readBit() bool {
	if r.bit >= uint64(len(r.src))*8 {
		r.over = true
		return false
	}
	b := r.src[r.bit>>3]>>(r.bit&7)&1 == 1
	r.bit++
	return b
}

// bytesUsed is the number of whole bytes the stream consumed so far.
func (r *bitReader) bytesUsed() int { return int((r.bit + 7) / 8) }

// width is the number of bits needed for the unsigned value v.
func width(v uint64) uint { return uint(bits.Len64(v)) }

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// readUvarint reads a uvarint or returns ErrCorrupt naming what.
func readUvarint(src []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, src, fmt.Errorf("read %s: %w", what, ErrCorrupt)
	}
	return v, src[n:], nil
}

func readVarint(src []byte, what string) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, src, fmt.Errorf("read %s: %w", what, ErrCorrupt)
	}
	return v, src[n:], nil
}

func readByte(src []byte, what string) (byte, []byte, error) {
	if len(src) == 0 {
		return 0, src, fmt.Errorf("read %s: %w", what, ErrCorrupt)
	}
	return src[0], src[1:], nil
}

// readCount reads a uvarint element count and checks it against limit.
func readCount(src []byte, what string, limit int) (int, []byte, error) {
	v, rest, err := readUvarint(src, what)
	if err != nil {
		return 0, src, err
	}
	if v > uint64(limit) {
		return 0, src, fmt.Errorf("read %s: %d > %d: %w", what, v, limit, ErrTooLarge)
	}
	return int(v), rest, nil
}
