package storage

import (
	"math"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// source is one time-ordered run of samples of a series: an encoded chunk
// (from Pebble or the head) or a slice (the out-of-order buffer).
type source struct {
	mint, maxt int64
	enc        chunkenc.Encoding
	data       []byte
	samples    []sample
}

// openSrc is a source being iterated, positioned on a valid sample.
type openSrc struct {
	it   chunkenc.Iterator
	chk  chunkenc.Chunk // reused for the next source of its encoding
	maxt int64
	t    int64
	vt   chunkenc.ValueType
}

// seriesIterator merges a series' sources in time order. Non-overlapping
// sources (the normal case) are simply concatenated: only one is open at a
// time. Overlapping ones (out-of-order data, a chunk sealed while a query
// copied the head) are merged; equal timestamps yield one sample.
//
// It implements chunkenc.Iterator fully and is reused through
// Series.Iterator. Not safe for concurrent use.
type seriesIterator struct {
	srcs  []source // sorted by mint; never modified (shared with the series)
	next  int
	open  []*openSrc
	cur   *openSrc
	tombs []interval
	low   int64 // samples below low are skipped when opening sources (after Seek)
	err   error

	free []*openSrc
}

// reset starts iterating srcs, which must be sorted by mint (sortSources).
func (it *seriesIterator) reset(srcs []source, tombs []interval) {
	it.free = append(it.free, it.open...)
	*it = seriesIterator{srcs: srcs, tombs: tombs, low: math.MinInt64, open: it.open[:0], free: it.free}
}

// openSource positions a new iterator over s at the first sample >= it.low.
func (it *seriesIterator) openSource(s *source) {
	var o *openSrc
	if n := len(it.free); n > 0 {
		o, it.free = it.free[n-1], it.free[:n-1]
	} else {
		o = &openSrc{}
	}
	o.maxt = s.maxt
	if s.data != nil && s.enc == encColumnar {
		ci, ok := o.it.(*colIterator)
		if !ok {
			ci = &colIterator{}
		}
		ci.load(s.data)
		if ci.err != nil {
			it.err = ci.err
			it.free = append(it.free, o)
			return
		}
		o.it = ci
	} else if s.data != nil {
		if o.chk != nil && o.chk.Encoding() == s.enc {
			o.chk.Reset(s.data)
		} else {
			c, err := chunkenc.FromData(s.enc, s.data)
			if err != nil {
				it.err = err
				it.free = append(it.free, o)
				return
			}
			o.chk = c
		}
		o.it = o.chk.Iterator(o.it)
	} else {
		if si, ok := o.it.(*sliceIterator); ok {
			si.samples, si.i = s.samples, -1
		} else {
			o.it = &sliceIterator{samples: s.samples, i: -1}
		}
	}
	var vt chunkenc.ValueType
	if it.low == math.MinInt64 {
		vt = o.it.Next()
	} else {
		vt = o.it.Seek(it.low)
	}
	if vt == chunkenc.ValNone {
		if err := o.it.Err(); err != nil {
			it.err = err
		}
		it.free = append(it.free, o)
		return
	}
	o.vt, o.t = vt, o.it.AtT()
	it.open = append(it.open, o)
}

func (it *seriesIterator) advance(o *openSrc) {
	o.vt = o.it.Next()
	if o.vt == chunkenc.ValNone {
		if err := o.it.Err(); err != nil {
			it.err = err
		}
		it.drop(o)
		return
	}
	o.t = o.it.AtT()
}

func (it *seriesIterator) drop(o *openSrc) {
	for i, x := range it.open {
		if x == o {
			it.open = append(it.open[:i], it.open[i+1:]...)
			break
		}
	}
	it.free = append(it.free, o)
}

// pick opens sources that may hold the next sample, selects the smallest
// timestamp and drops equal timestamps from the other sources.
func (it *seriesIterator) pick() chunkenc.ValueType {
	for {
		for it.next < len(it.srcs) && it.err == nil {
			s := &it.srcs[it.next]
			if len(it.open) > 0 && s.mint > it.minOpen() {
				break
			}
			it.next++
			if s.maxt < it.low {
				continue
			}
			it.openSource(s)
		}
		if it.err != nil || len(it.open) == 0 {
			it.cur = nil
			return chunkenc.ValNone
		}
		var best *openSrc
		for _, o := range it.open {
			if best == nil || o.t < best.t {
				best = o
			}
		}
		for i := 0; i < len(it.open); i++ {
			o := it.open[i]
			if o != best && o.t == best.t {
				before := len(it.open)
				it.advance(o)
				if len(it.open) < before {
					i--
				}
			}
		}
		it.cur = best
		if len(it.tombs) > 0 && isDeleted(it.tombs, best.t) {
			it.advance(best)
			continue
		}
		return best.vt
	}
}

func (it *seriesIterator) minOpen() int64 {
	m := int64(math.MaxInt64)
	for _, o := range it.open {
		m = min(m, o.t)
	}
	return m
}

// Next advances to the next sample.
func (it *seriesIterator) Next() chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	if o := it.cur; o != nil {
		it.low = o.t + 1
		it.advance(o)
		it.cur = nil
		// The only open source, no tombstones and no source starting at
		// or before its next sample: that sample is pick's answer (most
		// samples, a series' chunks not overlapping).
		if len(it.open) == 1 && it.open[0] == o && len(it.tombs) == 0 && it.err == nil &&
			(it.next == len(it.srcs) || it.srcs[it.next].mint > o.t) {
			it.cur = o
			return o.vt
		}
	}
	return it.pick()
}

// Seek advances to the first sample at or after t.
func (it *seriesIterator) Seek(t int64) chunkenc.ValueType {
	if it.err != nil {
		return chunkenc.ValNone
	}
	if it.cur != nil && it.cur.t >= t {
		return it.cur.vt
	}
	if t > it.low {
		it.low = t
	}
	for i := 0; i < len(it.open); i++ {
		o := it.open[i]
		if o.t >= t {
			continue
		}
		o.vt = o.it.Seek(t)
		if o.vt == chunkenc.ValNone {
			if err := o.it.Err(); err != nil {
				it.err = err
			}
			it.drop(o)
			i--
			continue
		}
		o.t = o.it.AtT()
	}
	it.cur = nil
	return it.pick()
}

// At returns the current float sample.
func (it *seriesIterator) At() (int64, float64) { return it.cur.it.At() }

// AtHistogram returns the current integer histogram, reusing h if not nil.
func (it *seriesIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	return it.cur.it.AtHistogram(h)
}

// AtFloatHistogram returns the current histogram as a float histogram,
// reusing fh if not nil.
func (it *seriesIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	return it.cur.it.AtFloatHistogram(fh)
}

// AtT returns the current timestamp.
func (it *seriesIterator) AtT() int64 { return it.cur.t }

// AtST returns the current start timestamp (0 if unknown).
func (it *seriesIterator) AtST() int64 { return it.cur.it.AtST() }

// Err returns the first decoding error.
func (it *seriesIterator) Err() error { return it.err }

// sliceIterator iterates a sorted []sample.
type sliceIterator struct {
	samples []sample
	i       int
}

func (s *sliceIterator) vt() chunkenc.ValueType {
	if s.i >= len(s.samples) {
		return chunkenc.ValNone
	}
	return s.samples[s.i].valType()
}

func (s *sliceIterator) Next() chunkenc.ValueType {
	if s.i < len(s.samples) {
		s.i++
	}
	return s.vt()
}

func (s *sliceIterator) Seek(t int64) chunkenc.ValueType {
	if s.i < 0 {
		s.i = 0
	}
	for s.i < len(s.samples) && s.samples[s.i].t < t {
		s.i++
	}
	return s.vt()
}

func (s *sliceIterator) At() (int64, float64) { return s.samples[s.i].t, s.samples[s.i].v }

func (s *sliceIterator) AtHistogram(h *histogram.Histogram) (int64, *histogram.Histogram) {
	x := s.samples[s.i]
	if h == nil {
		return x.t, x.h.Copy()
	}
	x.h.CopyTo(h)
	return x.t, h
}

func (s *sliceIterator) AtFloatHistogram(fh *histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	x := s.samples[s.i]
	src := x.fh
	if src == nil {
		if fh == nil {
			return x.t, x.h.ToFloat(nil)
		}
		return x.t, x.h.ToFloat(fh)
	}
	if fh == nil {
		return x.t, src.Copy()
	}
	src.CopyTo(fh)
	return x.t, fh
}

func (s *sliceIterator) AtT() int64  { return s.samples[s.i].t }
func (s *sliceIterator) AtST() int64 { return s.samples[s.i].st }
func (s *sliceIterator) Err() error  { return nil }

func sortSamples(ss []sample) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].t < ss[j].t })
}
