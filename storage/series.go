package storage

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// memSeries is the head state of one series. It is kept small (80 bytes on
// 64-bit) because there is one per active series: everything rare (histogram
// last values, out-of-order samples, sealed chunks not yet in Pebble,
// exemplars) hangs off ext, which is nil for a plain float series.
//
// All fields are guarded by mu.
type memSeries struct {
	mu    sync.Mutex
	id    uint64
	lastT atomic.Int64 // newest in-order timestamp; math.MinInt64 before the first sample. Written under mu, read without it by Append's fast path
	lastV float64      // value at lastT (floats)
	chunk chunkenc.Chunk
	app   chunkenc.Appender
	cmint int64 // first timestamp of chunk
	ext   *seriesExt
}

// seriesExt holds the rare parts of a series.
type seriesExt struct {
	lastH   *histogram.Histogram
	lastFH  *histogram.FloatHistogram
	ooo     []sample       // sorted by t, all < lastT
	pending []*sealedChunk // sealed, not yet written to Pebble (ascending mint)
	ex      []exemplar.Exemplar
	exNext  int // ring write position once ex is full
}

// sample is one decoded sample of any type; used off the hot path (OOO
// buffer, merges, re-encoding).
type sample struct {
	st, t int64
	v     float64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

func (s sample) valType() chunkenc.ValueType {
	switch {
	case s.fh != nil:
		return chunkenc.ValFloatHistogram
	case s.h != nil:
		return chunkenc.ValHistogram
	default:
		return chunkenc.ValFloat
	}
}

// sealedChunk is an immutable encoded chunk. Its data is never modified
// after sealing, so queries share it without copying.
type sealedChunk struct {
	mint, maxt int64
	enc        chunkenc.Encoding
	n          int
	data       []byte
}

func newMemSeries(id uint64) *memSeries {
	s := &memSeries{id: id}
	s.lastT.Store(math.MinInt64)
	return s
}

func (s *memSeries) extOrNew() *seriesExt {
	if s.ext == nil {
		s.ext = &seriesExt{}
	}
	return s.ext
}

// seriesShards spreads the ID → series map over independently locked maps
// so that concurrent appenders rarely contend.
const seriesShards = 256

type seriesMap struct {
	shards [seriesShards]struct {
		mu sync.RWMutex
		m  map[uint64]*memSeries
	}
}

func newSeriesMap() *seriesMap {
	sm := &seriesMap{}
	for i := range sm.shards {
		sm.shards[i].m = map[uint64]*memSeries{}
	}
	return sm
}

func (sm *seriesMap) get(id uint64) *memSeries {
	sh := &sm.shards[id%seriesShards]
	sh.mu.RLock()
	s := sh.m[id]
	sh.mu.RUnlock()
	return s
}

// getOrCreate returns the series for id, creating it if absent.
func (sm *seriesMap) getOrCreate(id uint64) *memSeries {
	if s := sm.get(id); s != nil {
		return s
	}
	sh := &sm.shards[id%seriesShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.m[id]; s != nil {
		return s
	}
	s := newMemSeries(id)
	sh.m[id] = s
	return s
}

func (sm *seriesMap) remove(id uint64) {
	sh := &sm.shards[id%seriesShards]
	sh.mu.Lock()
	delete(sh.m, id)
	sh.mu.Unlock()
}

// forEach calls fn for every series; fn must not call back into sm.
func (sm *seriesMap) forEach(fn func(*memSeries)) {
	var buf []*memSeries
	for i := range sm.shards {
		sh := &sm.shards[i]
		sh.mu.RLock()
		buf = buf[:0]
		for _, s := range sh.m {
			buf = append(buf, s)
		}
		sh.mu.RUnlock()
		for _, s := range buf {
			fn(s)
		}
	}
}

func (sm *seriesMap) len() int {
	n := 0
	for i := range sm.shards {
		sh := &sm.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
