package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// A histogram layout is everything about a native histogram's bucket shape:
// its spans, its bucket counts per side, its custom bounds and which of those
// slices are nil. Consecutive histograms of a series almost always share a
// layout, so the histogram codecs store a layout only when it changes and the
// bucket counts of a run of same-layout histograms column by column (bucket j
// of every histogram in the run, then bucket j+1), where deltas over time are
// small.
//
// Layout record: byte nil flags (layoutNil*), uvarint positive span count,
// per span varint offset and uvarint length, the same for negative spans,
// uvarint positive bucket count, uvarint negative bucket count, and unless
// layoutNilCustom is set a float column (AppendFloats) of the custom bounds.
type layout struct {
	flags    byte
	pos, neg []histogram.Span
	nPos     int
	nNeg     int
	custom   []float64
}

const (
	layoutNilPosSpans   = 1 << 0
	layoutNilNegSpans   = 1 << 1
	layoutNilPosBuckets = 1 << 2
	layoutNilNegBuckets = 1 << 3
	layoutNilCustom     = 1 << 4
	layoutNilMask       = 1<<5 - 1
)

func makeLayout[BC int64 | float64](pos, neg []histogram.Span, pb, nb []BC, custom []float64) layout {
	l := layout{pos: pos, neg: neg, nPos: len(pb), nNeg: len(nb), custom: custom}
	if pos == nil {
		l.flags |= layoutNilPosSpans
	}
	if neg == nil {
		l.flags |= layoutNilNegSpans
	}
	if pb == nil {
		l.flags |= layoutNilPosBuckets
	}
	if nb == nil {
		l.flags |= layoutNilNegBuckets
	}
	if custom == nil {
		l.flags |= layoutNilCustom
	}
	return l
}

func (l *layout) equal(o *layout) bool {
	if l.flags != o.flags || l.nPos != o.nPos || l.nNeg != o.nNeg ||
		len(l.pos) != len(o.pos) || len(l.neg) != len(o.neg) || len(l.custom) != len(o.custom) {
		return false
	}
	for i := range l.pos {
		if l.pos[i] != o.pos[i] {
			return false
		}
	}
	for i := range l.neg {
		if l.neg[i] != o.neg[i] {
			return false
		}
	}
	for i := range l.custom {
		if math.Float64bits(l.custom[i]) != math.Float64bits(o.custom[i]) {
			return false
		}
	}
	return true
}

func appendSpans(dst []byte, spans []histogram.Span) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	for _, s := range spans {
		dst = binary.AppendVarint(dst, int64(s.Offset))
		dst = binary.AppendUvarint(dst, uint64(s.Length))
	}
	return dst
}

func (l *layout) append(dst []byte) []byte {
	if len(l.pos) > MaxHistogramSpans || len(l.neg) > MaxHistogramSpans ||
		l.nPos > MaxHistogramSpans || l.nNeg > MaxHistogramSpans {
		panic("BUG: chunkenc: histogram with more than MaxHistogramSpans spans or buckets per side")
	}
	dst = append(dst, l.flags)
	dst = appendSpans(dst, l.pos)
	dst = appendSpans(dst, l.neg)
	dst = binary.AppendUvarint(dst, uint64(l.nPos))
	dst = binary.AppendUvarint(dst, uint64(l.nNeg))
	if l.flags&layoutNilCustom == 0 {
		dst = AppendFloats(dst, l.custom)
	}
	return dst
}

func readSpans(src []byte, nilSpans bool) ([]histogram.Span, []byte, error) {
	n, src, err := readCount(src, "span count", MaxHistogramSpans)
	if err != nil {
		return nil, src, err
	}
	if nilSpans {
		if n != 0 {
			return nil, src, fmt.Errorf("nil spans with %d entries: %w", n, ErrCorrupt)
		}
		return nil, src, nil
	}
	spans := make([]histogram.Span, n)
	for i := range spans {
		var off int64
		var length uint64
		if off, src, err = readVarint(src, "span offset"); err != nil {
			return nil, src, err
		}
		if length, src, err = readUvarint(src, "span length"); err != nil {
			return nil, src, err
		}
		if off != int64(int32(off)) || length > math.MaxUint32 {
			return nil, src, fmt.Errorf("span (%d, %d) out of range: %w", off, length, ErrCorrupt)
		}
		spans[i] = histogram.Span{Offset: int32(off), Length: uint32(length)}
	}
	return spans, src, nil
}

func readLayout(src []byte) (layout, []byte, error) {
	var l layout
	flags, src, err := readByte(src, "layout flags")
	if err != nil {
		return l, src, err
	}
	if flags&^layoutNilMask != 0 {
		return l, src, fmt.Errorf("layout flags %#x: %w", flags, ErrCorrupt)
	}
	l.flags = flags
	if l.pos, src, err = readSpans(src, flags&layoutNilPosSpans != 0); err != nil {
		return l, src, err
	}
	if l.neg, src, err = readSpans(src, flags&layoutNilNegSpans != 0); err != nil {
		return l, src, err
	}
	if l.nPos, src, err = readCount(src, "positive bucket count", MaxHistogramSpans); err != nil {
		return l, src, err
	}
	if l.nNeg, src, err = readCount(src, "negative bucket count", MaxHistogramSpans); err != nil {
		return l, src, err
	}
	if (flags&layoutNilPosBuckets != 0 && l.nPos != 0) || (flags&layoutNilNegBuckets != 0 && l.nNeg != 0) {
		return l, src, fmt.Errorf("nil buckets with a count: %w", ErrCorrupt)
	}
	if flags&layoutNilCustom == 0 {
		if l.custom, src, err = decodeFloats(make([]float64, 0), src); err != nil {
			return l, src, fmt.Errorf("custom values: %w", err)
		}
	}
	return l, src, nil
}

// cloneSpans copies spans for one decoded histogram, keeping nil as nil.
func cloneSpans(s []histogram.Span) []histogram.Span {
	if s == nil {
		return nil
	}
	return append(make([]histogram.Span, 0, len(s)), s...)
}

// readLayouts reads the layout-changed flag column and the layouts it calls
// for. It returns, per histogram, the index of its layout, and the layouts.
// The first histogram always starts a layout.
func readLayouts(src []byte, n int) ([]int, []layout, int, []byte, error) {
	sc := getScratch(n)
	defer putScratch(sc)
	changed := *sc
	src, err := decodeInts(changed, src, n)
	if err != nil {
		return nil, nil, 0, src, fmt.Errorf("layout flags: %w", err)
	}
	which := make([]int, n)
	var layouts []layout
	total := 0
	for i, c := range changed {
		if c > 1 || (i == 0 && c != 1) {
			return nil, nil, 0, src, fmt.Errorf("layout flag %d at %d: %w", c, i, ErrCorrupt)
		}
		if c == 1 {
			var l layout
			if l, src, err = readLayout(src); err != nil {
				return nil, nil, 0, src, fmt.Errorf("layout %d: %w", len(layouts), err)
			}
			layouts = append(layouts, l)
		}
		which[i] = len(layouts) - 1
		l := &layouts[len(layouts)-1]
		total += l.nPos + l.nNeg
		if total > MaxHistogramBuckets {
			return nil, nil, 0, src, fmt.Errorf("%d buckets: %w", total, ErrTooLarge)
		}
	}
	return which, layouts, total, src, nil
}

// appendLayouts writes the layout-changed column and the changed layouts and
// returns, per histogram, the index of its layout.
func appendLayouts(dst []byte, ls []layout) ([]byte, []int) {
	n := len(ls)
	sc := getScratch(n)
	defer putScratch(sc)
	changed := *sc
	which := make([]int, n)
	var distinct []int
	for i := range ls {
		changed[i] = 0
		if i == 0 || !ls[i].equal(&ls[i-1]) {
			changed[i] = 1
			distinct = append(distinct, i)
		}
		which[i] = len(distinct) - 1
	}
	dst = appendInts(dst, changed)
	for _, i := range distinct {
		dst = ls[i].append(dst)
	}
	return dst, which
}

// bucketOrder calls f(i, side, j) for every bucket count in storage order:
// runs of histograms sharing a layout, per run positive buckets then negative
// buckets, each bucket index over the run's histograms.
func bucketOrder(which []int, nPos, nNeg func(i int) int, f func(i int, neg bool, j int)) {
	for a := 0; a < len(which); {
		b := a + 1
		for b < len(which) && which[b] == which[a] {
			b++
		}
		for j := 0; j < nPos(a); j++ {
			for i := a; i < b; i++ {
				f(i, false, j)
			}
		}
		for j := 0; j < nNeg(a); j++ {
			for i := a; i < b; i++ {
				f(i, true, j)
			}
		}
		a = b
	}
}
