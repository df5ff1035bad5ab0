package record

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Compact float-samples records (TypeSamplesCompact, docs/format/wal.md).
//
// An entry is a control byte, then the fields it announces, then the
// value's leading bytes:
//
//	ctrl = id code << 5 | value code << 2 | hasST << 1 | newT
//	[zigzag(id − previous id) uvarint, when id code is 7]
//	[t − previous t varint, when newT]  [st varint, when hasST]
//	value: the first n bytes of the big-endian float bits, the rest being 0
//
// An id code of 0..6 is zigzag(id − previous id) itself (a delta of −3..3);
// a value code c stands for n = c bytes, 7 for all 8. The previous id and t
// start at 0 in every record. A scrape or push batch shares one timestamp
// and refers to series created one after another, and the values of
// counters and of many gauges are integers whose float bits end in zero
// bytes: a typical entry is one control byte and five value bytes.
const (
	compactNewT     = 1 << 0
	compactHasST    = 1 << 1
	compactValShift = 2
	compactIDShift  = 5
	compactIDVarint = 7 // id code: a zigzag delta uvarint follows
	// compactMaxEntry bounds one encoded entry: control byte, id, t delta
	// and st varints and the 8-byte value.
	compactMaxEntry = 1 + 3*binary.MaxVarintLen64 + 8
)

// SampleEncoder appends the entries of one compact float-samples record,
// started with AppendCompactSamplesHeader. The zero value is ready for a new
// record. Not safe for concurrent use.
type SampleEncoder struct {
	prevID uint64
	prevT  int64
}

// AppendCompactSamplesHeader starts a compact float-samples record on b.
// Reset (or a zero SampleEncoder) must go with it.
func AppendCompactSamplesHeader(b []byte) []byte {
	return append(b, byte(TypeSamplesCompact))
}

// Reset prepares e for a new record.
func (e *SampleEncoder) Reset() { *e = SampleEncoder{} }

// Append appends one entry (series id, start timestamp st, 0 for none, time
// t, value v) to b, the record being built.
//
// It is the per-sample step of every commit, so it makes room once and
// writes into it rather than appending field by field.
func (e *SampleEncoder) Append(b []byte, id uint64, st, t int64, v float64) []byte {
	n := len(b)
	if cap(b)-n < compactMaxEntry {
		b = append(b, make([]byte, compactMaxEntry+n)...)
	}
	dst := b[n : n+compactMaxEntry]
	d := int64(id - e.prevID)
	zz := uint64(d<<1) ^ uint64(d>>63)
	vb := math.Float64bits(v)
	// Significant bytes of the value: 8 less its trailing zero bytes (0
	// for +0), 7 rounded up to 8.
	nb := 8 - uint(bits.TrailingZeros64(vb))>>3
	code := nb
	if nb >= 7 {
		nb, code = 8, 7
	}
	ctrl := code << compactValShift
	if t != e.prevT {
		ctrl |= compactNewT
	}
	if st != 0 {
		ctrl |= compactHasST
	}
	k := 1
	if zz < compactIDVarint {
		ctrl |= uint(zz) << compactIDShift
	} else {
		ctrl |= compactIDVarint << compactIDShift
		k += binary.PutUvarint(dst[k:], zz)
	}
	dst[0] = byte(ctrl)
	if t != e.prevT {
		k += binary.PutVarint(dst[k:], t-e.prevT)
	}
	if st != 0 {
		k += binary.PutVarint(dst[k:], st)
	}
	binary.BigEndian.PutUint64(dst[k:], vb)
	e.prevID, e.prevT = id, t
	return b[:n+k+int(nb)]
}

// AppendCompactSamples encodes ss as one compact float-samples record.
func AppendCompactSamples(b []byte, ss []Sample) []byte {
	b = AppendCompactSamplesHeader(b)
	var e SampleEncoder
	for _, s := range ss {
		b = e.Append(b, s.ID, s.ST, s.T, s.V)
	}
	return b
}

// compactSamples decodes the entries of a compact float-samples record
// (after its type byte) into out.
func (d *Decoder) compactSamples(out []Sample) []Sample {
	var prevID uint64
	var prevT int64
	for len(d.b) > 0 && d.err == nil {
		ctrl := d.byte1()
		zz := uint64(ctrl >> compactIDShift)
		if zz == compactIDVarint {
			zz = d.uvarint()
		}
		s := Sample{ID: prevID + uint64(int64(zz>>1)^-int64(zz&1)), T: prevT}
		if ctrl&compactNewT != 0 {
			s.T += d.varint()
		}
		if ctrl&compactHasST != 0 {
			s.ST = d.varint()
		}
		nb := int(ctrl>>compactValShift) & 7
		if nb == 7 {
			nb = 8
		}
		if d.err != nil {
			break
		}
		if len(d.b) < nb {
			d.fail("compact sample value")
			break
		}
		var vb [8]byte
		copy(vb[:], d.b[:nb])
		d.b = d.b[nb:]
		s.V = math.Float64frombits(binary.BigEndian.Uint64(vb[:]))
		prevID, prevT = s.ID, s.T
		out = append(out, s)
	}
	return out
}
