package record

import (
	"encoding/binary"
	"math"
)

// Compact float-samples records (TypeSamplesCompact, docs/format/wal.md).
//
// An entry is a head uvarint, then the fields its flag bits announce, then
// the value:
//
//	head = zigzag(id − previous id) << 3 | absID << 2 | hasST << 1 | newT
//	[id uvarint, when absID]  [t − previous t varint, when newT]
//	[st varint, when hasST]   f64 value
//
// The previous id and t start at 0 in every record. A scrape or push batch
// shares one timestamp and refers to series created one after another, so a
// typical entry is 9 bytes: one head byte and the value.
const (
	compactNewT  = 1 << 0
	compactHasST = 1 << 1
	compactAbsID = 1 << 2
	compactFlags = 3
	// compactMaxEntry bounds one encoded entry: head, id, t delta and st
	// varints and the 8-byte value.
	compactMaxEntry = 4*binary.MaxVarintLen64 + 8
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
	var head uint64
	abs := zz >= 1<<(64-compactFlags)
	if abs {
		head = compactAbsID
	} else {
		head = zz << compactFlags
	}
	if t != e.prevT {
		head |= compactNewT
	}
	if st != 0 {
		head |= compactHasST
	}
	var k int
	if head < 0x80 {
		dst[0] = byte(head)
		k = 1
	} else {
		k = binary.PutUvarint(dst, head)
	}
	if abs {
		k += binary.PutUvarint(dst[k:], id)
	}
	if t != e.prevT {
		k += binary.PutVarint(dst[k:], t-e.prevT)
	}
	if st != 0 {
		k += binary.PutVarint(dst[k:], st)
	}
	binary.BigEndian.PutUint64(dst[k:], math.Float64bits(v))
	e.prevID, e.prevT = id, t
	return b[:n+k+8]
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
		head := d.uvarint()
		var s Sample
		if head&compactAbsID != 0 {
			if head>>compactFlags != 0 {
				d.fail("compact sample id")
				break
			}
			s.ID = d.uvarint()
		} else {
			zz := head >> compactFlags
			s.ID = prevID + uint64(int64(zz>>1)^-int64(zz&1))
		}
		s.T = prevT
		if head&compactNewT != 0 {
			s.T += d.varint()
		}
		if head&compactHasST != 0 {
			s.ST = d.varint()
		}
		s.V = d.f64()
		if d.err != nil {
			break
		}
		prevID, prevT = s.ID, s.T
		out = append(out, s)
	}
	return out
}
