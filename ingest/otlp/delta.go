package otlp

import (
	"container/list"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// deltaState converts delta temporality to cumulative: per stream (resource,
// scope, metric identity and point attributes, hashed to 64 bits) it keeps
// the running total and rewrites each delta point into the cumulative point
// since the stream's first delta.
//
// Memory is bounded by DeltaOptions: at most MaxStreams streams, least
// recently updated evicted first, and streams idle for MaxIdle expired at
// the next request that has delta points. An evicted or expired stream that
// reports again restarts from zero with a new start time, which PromQL's
// rate() reads as a counter reset.
//
// A single mutex guards the state; it is held only while points are
// accumulated, not while they are appended to storage.
type deltaState struct {
	mu      sync.Mutex
	max     int
	maxIdle time.Duration
	now     func() time.Time
	streams map[uint64]*list.Element // of *deltaStream
	lru     *list.List               // front: most recently updated
	version uint64
}

type deltaStream struct {
	key     uint64
	seen    time.Time
	version uint64 // deltaState.version of the last update
	init    bool   // false until the first point with a value
	start   pcommon.Timestamp
	last    pcommon.Timestamp

	isInt bool
	i     int64
	f     float64
	hist  *histState
	expo  *expoState
}

func (s *deltaStream) clone() *deltaStream {
	c := *s
	if s.hist != nil {
		c.hist = s.hist.clone()
	}
	if s.expo != nil {
		c.expo = s.expo.clone()
	}
	return &c
}

// undoEntry restores one stream to its state before a request, unless a
// later request changed it since.
type undoEntry struct {
	key     uint64
	prev    *deltaStream // nil: the stream did not exist
	version uint64
}

func newDeltaState(o DeltaOptions) *deltaState {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &deltaState{max: o.MaxStreams, maxIdle: o.MaxIdle, now: now, streams: make(map[uint64]*list.Element), lru: list.New()}
}

// Len returns the number of streams with state.
func (d *deltaState) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Len()
}

func hasDelta(md pmetric.Metrics) bool {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				if temporality(ms.At(k)) == pmetric.AggregationTemporalityDelta {
					return true
				}
			}
		}
	}
	return false
}

// convert rewrites every delta metric of md into cumulative, rejecting
// out-of-order points, and returns the log that undo needs if the request
// fails after all.
func (d *deltaState) convert(md pmetric.Metrics, rej *rejections) []undoEntry {
	if !hasDelta(md) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.expire(now)
	d.version++
	var (
		undo    []undoEntry
		touched = make(map[uint64]bool)
		h       hasher
	)
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		resHash := h.mapHash(0, rm.Resource().Attributes())
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			scopeHash := h.scopeHash(resHash, sm.Scope())
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				if temporality(m) != pmetric.AggregationTemporalityDelta {
					return false
				}
				mHash := h.metricHash(scopeHash, m)
				stream := func(attrs pcommon.Map) *deltaStream {
					key := h.mapHash(mHash, attrs)
					if !touched[key] {
						touched[key] = true
						e := undoEntry{key: key}
						if el, ok := d.streams[key]; ok {
							e.prev = el.Value.(*deltaStream).clone()
						}
						undo = append(undo, e)
					}
					return d.get(key, now)
				}
				reject := func(reason string) bool {
					rej.add(ReasonDeltaConversion, 1, fmt.Sprintf("metric %q: %s", m.Name(), reason))
					return true
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
						if err := stream(p.Attributes()).addNumber(p); err != "" {
							return reject(err)
						}
						return false
					})
					m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				case pmetric.MetricTypeHistogram:
					m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool {
						if err := stream(p.Attributes()).addHistogram(p); err != "" {
							return reject(err)
						}
						return false
					})
					m.Histogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				case pmetric.MetricTypeExponentialHistogram:
					m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool {
						if err := stream(p.Attributes()).addExponential(p); err != "" {
							return reject(err)
						}
						return false
					})
					m.ExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
				}
				return dataPointCount(m) == 0
			})
		}
	}
	for i := range undo {
		if el, ok := d.streams[undo[i].key]; ok {
			undo[i].version = el.Value.(*deltaStream).version
		}
	}
	return undo
}

// get returns the stream for key, creating it (and evicting the least
// recently updated stream when full) if needed. d.mu must be held.
func (d *deltaState) get(key uint64, now time.Time) *deltaStream {
	if el, ok := d.streams[key]; ok {
		s := el.Value.(*deltaStream)
		s.seen, s.version = now, d.version
		d.lru.MoveToFront(el)
		return s
	}
	for d.lru.Len() >= d.max {
		d.remove(d.lru.Back())
	}
	s := &deltaStream{key: key, seen: now, version: d.version}
	d.streams[key] = d.lru.PushFront(s)
	return s
}

func (d *deltaState) remove(el *list.Element) {
	delete(d.streams, el.Value.(*deltaStream).key)
	d.lru.Remove(el)
}

// expire drops streams idle for longer than maxIdle. d.mu must be held.
func (d *deltaState) expire(now time.Time) {
	for el := d.lru.Back(); el != nil; el = d.lru.Back() {
		if now.Sub(el.Value.(*deltaStream).seen) <= d.maxIdle {
			return
		}
		d.remove(el)
	}
}

// undo reverts the streams a failed request changed, skipping those that a
// later request has changed since.
func (d *deltaState) undo(log []undoEntry) {
	if len(log) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range log {
		el, ok := d.streams[e.key]
		if !ok || el.Value.(*deltaStream).version != e.version {
			continue
		}
		if e.prev == nil {
			d.remove(el)
			continue
		}
		el.Value = e.prev
	}
}

// addNumber accumulates a delta sum point and rewrites it as cumulative.
// It returns a rejection reason, or "".
func (s *deltaStream) addNumber(p pmetric.NumberDataPoint) string {
	if reason, pass := s.begin(p.StartTimestamp(), p.Timestamp(), p.Flags()); reason != "" || pass {
		return reason
	}
	if s.last == 0 {
		s.isInt = p.ValueType() == pmetric.NumberDataPointValueTypeInt
	}
	s.last = p.Timestamp()
	switch {
	case s.isInt && p.ValueType() == pmetric.NumberDataPointValueTypeInt:
		s.i += p.IntValue()
		p.SetIntValue(s.i)
	default:
		if s.isInt {
			s.isInt, s.f = false, float64(s.i)
		}
		if p.ValueType() == pmetric.NumberDataPointValueTypeInt {
			s.f += float64(p.IntValue())
		} else {
			s.f += p.DoubleValue()
		}
		p.SetDoubleValue(s.f)
	}
	p.SetStartTimestamp(s.start)
	return ""
}

// begin checks a delta point against the stream: it returns a rejection
// reason for a point not after the previous one, or pass for a
// no-recorded-value point, which goes through as a staleness marker without
// touching the total. On a first point it sets the cumulative start time.
func (s *deltaStream) begin(start, t pcommon.Timestamp, flags pmetric.DataPointFlags) (reason string, pass bool) {
	if flags.NoRecordedValue() {
		return "", true
	}
	if !s.init {
		s.init, s.start = true, start
		return "", false
	}
	if t <= s.last {
		return "delta point out of order", false
	}
	return "", false
}

// hasher computes stream identities. Maps are hashed in key order so that
// attribute order on the wire does not matter.
type hasher struct {
	d    xxhash.Digest
	keys []string
	buf  []byte
}

func (h *hasher) begin(seed uint64) {
	h.d.Reset()
	h.buf = append(h.buf[:0], byte(seed), byte(seed>>8), byte(seed>>16), byte(seed>>24), byte(seed>>32), byte(seed>>40), byte(seed>>48), byte(seed>>56))
	_, _ = h.d.Write(h.buf)
}

func (h *hasher) str(s string) {
	_, _ = h.d.WriteString(s)
	_, _ = h.d.Write([]byte{0xff})
}

func (h *hasher) mapInto(m pcommon.Map) {
	h.keys = h.keys[:0]
	m.Range(func(k string, _ pcommon.Value) bool {
		h.keys = append(h.keys, k)
		return true
	})
	slices.Sort(h.keys)
	for _, k := range h.keys {
		v, _ := m.Get(k)
		h.str(k)
		_, _ = h.d.Write([]byte{byte(v.Type())})
		h.str(v.AsString())
	}
}

func (h *hasher) mapHash(seed uint64, m pcommon.Map) uint64 {
	h.begin(seed)
	h.mapInto(m)
	return h.d.Sum64()
}

func (h *hasher) scopeHash(seed uint64, s pcommon.InstrumentationScope) uint64 {
	h.begin(seed)
	h.str(s.Name())
	h.str(s.Version())
	h.mapInto(s.Attributes())
	return h.d.Sum64()
}

func (h *hasher) metricHash(seed uint64, m pmetric.Metric) uint64 {
	h.begin(seed)
	h.str(m.Name())
	h.str(m.Unit())
	mono := byte(0)
	if m.Type() == pmetric.MetricTypeSum && m.Sum().IsMonotonic() {
		mono = 1
	}
	_, _ = h.d.Write([]byte{byte(m.Type()), mono})
	return h.d.Sum64()
}
