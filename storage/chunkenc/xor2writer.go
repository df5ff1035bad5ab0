package chunkenc

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/prometheus/prometheus/model/value"
)

// XOR2Writer appends float samples to a chunk in Prometheus' XOR2 encoding
// (tsdb/chunkenc.EncXOR2: joint timestamp/value control bits, byte-packed
// delta-of-delta bins, optional per-sample start timestamps). Its output is
// byte for byte what Prometheus' XOR2 appender writes for the same samples
// (TestXOR2WriterMatchesPrometheus, FuzzXOR2Writer), so the chunk is read
// with Prometheus' iterator and stored as an EncXOR2 chunk; the format is
// Prometheus' and is not described again in docs/format/chunkenc.md.
//
// It exists for the head's per-sample cost: Prometheus' bit stream writes a
// bit or a byte at a time with an append and a bounds check each, where
// this writer merges the bits of each field with the partial last byte and
// stores them as one 64-bit big-endian word, and sizes its buffer from the
// bytes per sample seen so far instead of doubling from a small start.
//
// Bytes returns a valid chunk after every Append, so a reader holding the
// owner's lock may copy it at any time. Append does not store the sample
// count in the chunk header; Bytes and Compact do, so that a sample costs no
// store to the header's cache line (on a head with many series, a miss per
// sample when the chunk is longer than a line). Not safe for concurrent use,
// Bytes included (it writes the header); the owner serialises Append, Bytes,
// Size, NumSamples and Compact.
type XOR2Writer struct {
	// buf holds the chunk in its first (pos+7)/8 bytes; every bit after
	// pos is zero, so a write ORs into the partial last byte unmasked.
	buf []byte
	pos uint32 // bits written, header included

	leading, trailing uint8 // value window; leading 0xff before the first
	// tail is the partial last byte (buf[pos/8] when pos%8 != 0, else 0),
	// kept here so that put only stores to the buffer: the buffer's last
	// cache line is then not read back, a miss per sample on a head with
	// many series.
	tail byte

	n               uint16 // samples so far (stored in buf[0:2] by Bytes and Compact)
	firstSTChangeOn uint16

	st, t  int64
	v      uint64 // bits of the previous non-stale value
	tDelta uint64
	stDiff int64
}

const (
	xor2HeaderSize = 3 // u16 sample count, ST header byte
	// xor2MaxFirstSTChangeOn is the largest sample index the ST header byte
	// can name (7 bits).
	xor2MaxFirstSTChangeOn = 0x7f
	// xor2PutSlack is the room put needs after the partial last byte: it
	// stores a 64-bit word there and one byte after it.
	xor2PutSlack = 9
	// xor2SampleRoom is the room Append makes before a sample: the largest
	// sample (second sample: 10-byte delta varint, 78-bit new value window,
	// 72-bit start timestamp varbit; 29 bytes) plus xor2PutSlack, rounded
	// up. put and putZero then need no capacity check of their own.
	xor2SampleRoom = 40
	// xor2PlainRoom is the room for a later sample that writes no start
	// timestamp bits (the common case): a 5+64-bit dod escape and a 78-bit
	// value at most, 19 bytes, plus xor2PutSlack.
	xor2PlainRoom = 28
)

// NewXOR2Writer returns a writer of an empty chunk in a new buffer of
// initialCap bytes (at least the header and one sample's room); the buffer
// doubles when a sample needs more room.
func NewXOR2Writer(initialCap int) *XOR2Writer {
	w := &XOR2Writer{}
	w.Init(initialCap)
	return w
}

// Init makes w the writer of an empty chunk in a new buffer, as
// NewXOR2Writer does, for a writer embedded in another struct.
func (w *XOR2Writer) Init(initialCap int) {
	*w = XOR2Writer{leading: 0xff, pos: 8 * xor2HeaderSize}
	w.buf = make([]byte, max(initialCap, xor2HeaderSize+xor2SampleRoom))
}

// Bytes returns the chunk: Prometheus XOR2 bytes including the header,
// which it brings up to date. The slice aliases the writer's buffer and is
// valid until the next Append or Compact.
func (w *XOR2Writer) Bytes() []byte {
	binary.BigEndian.PutUint16(w.buf, w.n)
	return w.buf[:(w.pos+7)/8]
}

// Size returns len(Bytes()).
func (w *XOR2Writer) Size() int { return int(w.pos+7) / 8 }

// NumSamples returns the number of samples appended.
func (w *XOR2Writer) NumSamples() int { return int(w.n) }

// Compact drops spare capacity beyond a small threshold by copying the
// chunk into a buffer of its size, for a chunk that will take no more
// samples. The writer may still be appended to afterwards.
func (w *XOR2Writer) Compact() {
	binary.BigEndian.PutUint16(w.buf, w.n)
	if l := int(w.pos+7) / 8; len(w.buf) > l+32 {
		w.buf = append(make([]byte, 0, l), w.buf[:l]...)
	}
}

// grow makes room for at least need bytes after the last one.
func (w *XOR2Writer) grow(need int) {
	l := int(w.pos+7) / 8
	buf := make([]byte, max(2*len(w.buf), l+need))
	copy(buf, w.buf[:l])
	w.buf = buf
}

// put appends the low nbits (1..64) bits of u, most significant first.
// Append has made room for it.
func (w *XOR2Writer) put(u uint64, nbits uint) {
	i := uint(w.pos >> 3)
	b := w.buf[i : i+xor2PutSlack]
	used := uint(w.pos & 7)
	u <<= 64 - nbits
	acc := uint64(w.tail)<<56 | u>>used
	// The bits that did not fit the word (none unless used+nbits > 64;
	// a shift by 64 yields 0).
	over := byte((u << (64 - used)) >> 56)
	binary.BigEndian.PutUint64(b, acc)
	b[8] = over
	total := used + nbits
	w.pos += uint32(nbits)
	if total >= 64 {
		w.tail = over
	} else {
		w.tail = byte((acc << (total &^ 7)) >> 56)
	}
}

// putZero appends a single 0 bit (the bits after pos are zero already).
func (w *XOR2Writer) putZero() {
	w.pos++
	if w.pos&7 == 0 {
		w.tail = 0
	}
}

// putBytes appends whole bytes at the current bit position.
func (w *XOR2Writer) putBytes(p []byte) {
	for _, c := range p {
		w.put(uint64(c), 8)
	}
}

// putVarbitInt writes val in Prometheus' varbit integer encoding
// (tsdb/chunkenc putVarbitIntFast).
func (w *XOR2Writer) putVarbitInt(val int64) {
	u := uint64(val)
	switch {
	case val == 0:
		w.putZero()
	case varbitRange(val, 3):
		w.put((0b10<<3)|(u&0x7), 5)
	case varbitRange(val, 6):
		w.put((0b110<<6)|(u&0x3F), 9)
	case varbitRange(val, 9):
		w.put((0b1110<<9)|(u&0x1FF), 13)
	case varbitRange(val, 12):
		w.put((0b11110<<12)|(u&0xFFF), 17)
	case varbitRange(val, 18):
		w.put((0b111110<<18)|(u&0x3FFFF), 24)
	case varbitRange(val, 25):
		w.put((0b1111110<<25)|(u&0x1FFFFFF), 32)
	case varbitRange(val, 56):
		w.put((0b11111110<<56)|(u&0xFFFFFFFFFFFFFF), 64)
	default:
		w.put(0b11111111, 8)
		w.put(u, 64)
	}
}

// varbitRange reports whether x fits the varbit bucket of nbits bits:
// -(2^(nbits-1)-1) <= x <= 2^(nbits-1).
func varbitRange(x int64, nbits uint8) bool {
	return -((1<<(nbits-1))-1) <= x && x <= 1<<(nbits-1)
}

// Append adds a sample with start timestamp st (0: none). Timestamps must
// increase; a chunk holds at most 65535 samples (Append panics beyond, as
// Prometheus' appender does).
func (w *XOR2Writer) Append(st, t int64, v float64) {
	// plain: a sample at index >= 2 that writes no start timestamp bits.
	plain := w.n >= 2 && w.firstSTChangeOn == 0 && st == w.st && w.n != xor2MaxFirstSTChangeOn
	need := xor2SampleRoom
	if plain {
		need = xor2PlainRoom
	}
	if int(w.pos>>3)+need > len(w.buf) {
		w.grow(need)
	}
	vb := math.Float64bits(v)
	switch w.n {
	case 0:
		var tmp [binary.MaxVarintLen64]byte
		w.putBytes(tmp[:binary.PutVarint(tmp[:], t)])
		w.put(vb, 64)
		if st != 0 {
			w.putBytes(tmp[:binary.PutVarint(tmp[:], t-st)])
			w.buf[2] = 0x80 // first ST known
		}
		w.st, w.t, w.tDelta, w.stDiff = st, t, 0, 0
	case 1:
		tDelta := uint64(t - w.t)
		var tmp [binary.MaxVarintLen64]byte
		w.putBytes(tmp[:binary.PutUvarint(tmp[:], tDelta)])
		w.putValueDod(0, 0, vb)
		var stDiff int64
		if st != w.st {
			stDiff = w.t - st
			w.firstSTChangeOn = 1
			w.buf[2] |= 1
			w.putVarbitInt(stDiff)
		}
		w.st, w.t, w.tDelta, w.stDiff = st, t, tDelta, stDiff
	case math.MaxUint16:
		panic("chunk capacity exceeded")
	default:
		tDelta := uint64(t - w.t)
		dod := int64(tDelta - w.tDelta)
		if plain {
			// No start timestamp data for this sample.
			w.putJoint(dod, vb)
		} else if w.firstSTChangeOn > 0 {
			// Start timestamps changed earlier: every sample carries the
			// change of its ST distance.
			newStDiff := w.t - st
			w.putJoint(dod, vb)
			w.putVarbitInt(newStDiff - w.stDiff)
			w.stDiff, w.st = newStDiff, st
		} else {
			// The first ST change (or the last index the header can name).
			w.putJoint(dod, vb)
			w.stDiff = w.t - st
			w.firstSTChangeOn = w.n
			w.buf[2] |= uint8(w.n)
			w.putVarbitInt(w.stDiff)
			w.st = st
		}
		w.t, w.tDelta = t, tDelta
	}
	if !value.IsStaleNaN(v) {
		w.v = vb
	}
	w.n++
}

// putJoint writes the joint timestamp/value control sequence of a sample
// at index >= 2.
func (w *XOR2Writer) putJoint(dod int64, vb uint64) {
	var hdr uint64 // control and dod bits, written with the value's
	var hn uint
	switch {
	case dod == 0:
		if vb == w.v {
			w.putZero()
			return
		}
		if value.IsStaleNaN(math.Float64frombits(vb)) {
			w.put(0b11111, 5)
			return
		}
		// '10', then the value: '0' reuse window, '1' new window.
		w.putValue(0b10, 2, vb^w.v, true)
		return
	case dod >= -(1<<12) && dod <= (1<<12)-1:
		// '110' and a 13-bit dod: two bytes.
		hdr, hn = (0b110<<13)|(uint64(dod)&0x1FFF), 16
	case dod >= -(1<<19) && dod <= (1<<19)-1:
		// '1110' and a 20-bit dod: three bytes.
		hdr, hn = (0b1110<<20)|(uint64(dod)&0xFFFFF), 24
	default:
		w.put(0b11110, 5)
		w.put(uint64(dod), 64)
	}
	// putValueDod, inlined by hand: this is the path of every sample
	// whose interval changed.
	if vb == w.v {
		w.put(hdr<<1, hn+1)
		return
	}
	if value.IsStaleNaN(math.Float64frombits(vb)) {
		w.put(hdr<<3|0b111, hn+3)
		return
	}
	w.putValue(hdr<<1|1, hn+1, vb^w.v, false)
}

// putValueDod writes hdr (hn bits, hn <= 24) and a value after a non-zero
// dod (or of the second sample): '0' unchanged, '10' reuse window, '110'
// new window, '111' stale NaN.
func (w *XOR2Writer) putValueDod(hdr uint64, hn uint, vb uint64) {
	if vb == w.v {
		w.put(hdr<<1, hn+1)
		return
	}
	if value.IsStaleNaN(math.Float64frombits(vb)) {
		w.put(hdr<<3|0b111, hn+3)
		return
	}
	w.putValue(hdr<<1|1, hn+1, vb^w.v, false)
}

// putValue writes hdr (hn <= 25 bits) and a non-zero value XOR delta in a
// reused or a new window. After a zero dod (dodZero) the window control is
// '0' reuse / '1' new and a new window must save more than 11 bits;
// otherwise it is '0' reuse / '10' new (hdr ends in the leading '1' of
// '10' and '110') and must save more than 12 bits. Prometheus' choice of window
// is kept exactly, for identical output.
func (w *XOR2Writer) putValue(hdr uint64, hn uint, delta uint64, dodZero bool) {
	lead, trail := window(delta)
	extra, slack := uint8(12), uint8(6)
	if dodZero {
		extra, slack = 11, 5
	}
	if lead >= w.leading && trail >= w.trailing && lead+trail <= w.leading+w.trailing+extra {
		m := 64 - uint(w.leading) - uint(w.trailing)
		hdr, hn = hdr<<1, hn+1 // '0': reuse
		if x := delta >> w.trailing; hn+m <= 64 {
			w.put(hdr<<m|x, hn+m)
		} else {
			w.put(hdr, hn)
			w.put(x, m)
		}
		return
	}
	lead, trail = w.widen(lead, trail, slack)
	sig := 64 - uint(lead) - uint(trail)
	if dodZero {
		hdr, hn = hdr<<1|1, hn+1 // '1': new window
	} else {
		hdr, hn = hdr<<2|0b10, hn+2 // '10': new window
	}
	// 5 bits leading, 6 bits significant (64 as 0), the bits.
	w.put(hdr<<11|uint64(lead)<<6|uint64(sig)&0x3F, hn+11)
	w.put(delta>>trail, sig)
}

// window returns the leading (capped at 31) and trailing zero bits of a
// non-zero XOR delta.
func window(delta uint64) (lead, trail uint8) {
	lead = uint8(bits.LeadingZeros64(delta))
	trail = uint8(bits.TrailingZeros64(delta))
	return min(lead, 31), trail
}

// widen keeps the previous window's boundaries when a wider new window
// would cost at most slack extra payload bits with them, then records the
// window chosen (Prometheus' heuristic, for identical output).
func (w *XOR2Writer) widen(lead, trail, slack uint8) (uint8, uint8) {
	if w.leading != 0xff && (lead < w.leading || trail < w.trailing) {
		ul, ut := min(lead, w.leading), min(trail, w.trailing)
		if lead+trail-ul-ut <= slack {
			lead, trail = ul, ut
		}
	}
	w.leading, w.trailing = lead, trail
	return lead, trail
}
