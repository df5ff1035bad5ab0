package otlp

import (
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/histogram"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// maxDeltaExpoBuckets caps the buckets per sign of an accumulated
// exponential histogram; merging downscales further to stay under it. 160
// is the OpenTelemetry SDK default (and the deltatocumulative processor's).
const maxDeltaExpoBuckets = 160

// stats are the count/sum/min/max shared by both histogram kinds.
type stats struct {
	count                  uint64
	sum, min, max          float64
	hasSum, hasMin, hasMax bool
}

func (s *stats) set(count uint64, hasSum bool, sum float64, hasMin bool, minV float64, hasMax bool, maxV float64) {
	*s = stats{count: count, sum: sum, min: minV, max: maxV, hasSum: hasSum, hasMin: hasMin, hasMax: hasMax}
}

func (s *stats) add(count uint64, hasSum bool, sum float64, hasMin bool, minV float64, hasMax bool, maxV float64) {
	s.count += count
	s.sum += sum
	s.hasSum = s.hasSum && hasSum
	s.min = math.Min(s.min, minV)
	s.hasMin = s.hasMin && hasMin
	s.max = math.Max(s.max, maxV)
	s.hasMax = s.hasMax && hasMax
}

type histState struct {
	stats
	bounds []float64
	counts []uint64
}

func (h *histState) clone() *histState {
	c := *h
	c.bounds = slices.Clone(h.bounds)
	c.counts = slices.Clone(h.counts)
	return &c
}

// addHistogram accumulates a delta histogram point. Points whose explicit
// bounds differ from the state's restart the stream from them.
func (s *deltaStream) addHistogram(p pmetric.HistogramDataPoint) string {
	if reason, pass := s.begin(p.StartTimestamp(), p.Timestamp(), p.Flags()); reason != "" || pass {
		return reason
	}
	s.last = p.Timestamp()
	h := s.hist
	bounds := p.ExplicitBounds()
	same := h != nil && len(h.bounds) == bounds.Len() && len(h.counts) == p.BucketCounts().Len()
	for i := 0; same && i < bounds.Len(); i++ {
		same = h.bounds[i] == bounds.At(i)
	}
	if !same {
		if h != nil {
			s.start = p.StartTimestamp()
		}
		s.hist = &histState{bounds: bounds.AsRaw(), counts: p.BucketCounts().AsRaw()}
		s.hist.set(p.Count(), p.HasSum(), p.Sum(), p.HasMin(), p.Min(), p.HasMax(), p.Max())
	} else {
		for i := range h.counts {
			h.counts[i] += p.BucketCounts().At(i)
		}
		h.add(p.Count(), p.HasSum(), p.Sum(), p.HasMin(), p.Min(), p.HasMax(), p.Max())
	}
	h = s.hist
	p.SetStartTimestamp(s.start)
	p.BucketCounts().FromRaw(h.counts)
	p.SetCount(h.count)
	writeStats(h.stats, p)
	return ""
}

// statsPoint is what both histogram point kinds offer for sum/min/max.
type statsPoint interface {
	SetSum(float64)
	RemoveSum()
	SetMin(float64)
	RemoveMin()
	SetMax(float64)
	RemoveMax()
}

func writeStats(st stats, p statsPoint) {
	if st.hasSum {
		p.SetSum(st.sum)
	} else {
		p.RemoveSum()
	}
	if st.hasMin {
		p.SetMin(st.min)
	} else {
		p.RemoveMin()
	}
	if st.hasMax {
		p.SetMax(st.max)
	} else {
		p.RemoveMax()
	}
}

// expoBuckets are one sign's buckets: counts[i] is bucket offset+i.
type expoBuckets struct {
	offset int32
	counts []uint64
}

func bucketsFrom(b pmetric.ExponentialHistogramDataPointBuckets) expoBuckets {
	return expoBuckets{offset: b.Offset(), counts: b.BucketCounts().AsRaw()}
}

// downscale merges buckets pairwise by bits scale steps: bucket i becomes
// i >> by (an arithmetic shift floors negative indices too).
func (b *expoBuckets) downscale(by int32) {
	if by <= 0 || len(b.counts) == 0 {
		return
	}
	off := int64(b.offset)
	lo := off >> by
	hi := (off + int64(len(b.counts)) - 1) >> by
	out := make([]uint64, hi-lo+1)
	for i, c := range b.counts {
		out[((off+int64(i))>>by)-lo] += c
	}
	b.offset, b.counts = int32(lo), out
}

// merge adds o's buckets (at the same scale) into b.
func (b *expoBuckets) merge(o expoBuckets) {
	if len(o.counts) == 0 {
		return
	}
	if len(b.counts) == 0 {
		b.offset, b.counts = o.offset, slices.Clone(o.counts)
		return
	}
	bo, oo := int64(b.offset), int64(o.offset)
	lo := min(bo, oo)
	out := make([]uint64, combinedSpan(*b, o))
	for i, c := range b.counts {
		out[bo-lo+int64(i)] += c
	}
	for i, c := range o.counts {
		out[oo-lo+int64(i)] += c
	}
	b.offset, b.counts = int32(lo), out
}

// combinedSpan returns how many buckets merging a and b would cover.
func combinedSpan(a, b expoBuckets) int64 {
	switch {
	case len(a.counts) == 0:
		return int64(len(b.counts))
	case len(b.counts) == 0:
		return int64(len(a.counts))
	}
	lo := min(int64(a.offset), int64(b.offset))
	hi := max(int64(a.offset)+int64(len(a.counts)), int64(b.offset)+int64(len(b.counts)))
	return hi - lo
}

// span returns how many buckets b covers.
func (b *expoBuckets) span() int { return len(b.counts) }

type expoState struct {
	stats
	scale     int32
	zeroThr   float64
	zeroCount uint64
	pos, neg  expoBuckets
}

func (e *expoState) clone() *expoState {
	c := *e
	c.pos.counts = slices.Clone(e.pos.counts)
	c.neg.counts = slices.Clone(e.neg.counts)
	return &c
}

// addExponential accumulates a delta exponential histogram point: both are
// brought to the smaller scale, merged, and downscaled further while either
// sign spans more than maxDeltaExpoBuckets. A changed zero threshold
// restarts the stream from the point.
func (s *deltaStream) addExponential(p pmetric.ExponentialHistogramDataPoint) string {
	if reason, pass := s.begin(p.StartTimestamp(), p.Timestamp(), p.Flags()); reason != "" || pass {
		return reason
	}
	s.last = p.Timestamp()
	e := s.expo
	if e == nil || e.zeroThr != p.ZeroThreshold() {
		if e != nil {
			s.start = p.StartTimestamp()
		}
		e = &expoState{scale: p.Scale(), zeroThr: p.ZeroThreshold(), zeroCount: p.ZeroCount(),
			pos: bucketsFrom(p.Positive()), neg: bucketsFrom(p.Negative())}
		e.set(p.Count(), p.HasSum(), p.Sum(), p.HasMin(), p.Min(), p.HasMax(), p.Max())
		s.expo = e
	} else {
		pos, neg := bucketsFrom(p.Positive()), bucketsFrom(p.Negative())
		target := min(e.scale, p.Scale())
		e.pos.downscale(e.scale - target)
		e.neg.downscale(e.scale - target)
		pos.downscale(p.Scale() - target)
		neg.downscale(p.Scale() - target)
		e.scale = target
		// Downscale before merging so the merged buckets never span more than
		// the cap (a hostile offset could otherwise ask for gigabytes).
		for (combinedSpan(e.pos, pos) > maxDeltaExpoBuckets || combinedSpan(e.neg, neg) > maxDeltaExpoBuckets) && e.scale > histogram.ExponentialSchemaMin {
			e.pos.downscale(1)
			e.neg.downscale(1)
			pos.downscale(1)
			neg.downscale(1)
			e.scale--
		}
		e.pos.merge(pos)
		e.neg.merge(neg)
		e.zeroCount += p.ZeroCount()
		e.add(p.Count(), p.HasSum(), p.Sum(), p.HasMin(), p.Min(), p.HasMax(), p.Max())
	}
	for (e.pos.span() > maxDeltaExpoBuckets || e.neg.span() > maxDeltaExpoBuckets) && e.scale > histogram.ExponentialSchemaMin {
		e.pos.downscale(1)
		e.neg.downscale(1)
		e.scale--
	}
	p.SetStartTimestamp(s.start)
	p.SetScale(e.scale)
	p.SetZeroCount(e.zeroCount)
	p.Positive().SetOffset(e.pos.offset)
	p.Positive().BucketCounts().FromRaw(e.pos.counts)
	p.Negative().SetOffset(e.neg.offset)
	p.Negative().BucketCounts().FromRaw(e.neg.counts)
	p.SetCount(e.count)
	writeStats(e.stats, p)
	return ""
}
