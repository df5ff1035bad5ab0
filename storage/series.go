package storage

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// memSeries is the head state of one series. It is kept small (160 bytes on
// 64-bit, half of it the open float chunk's writer state, fc) because there
// is one per active series: everything rare (histogram last values,
// out-of-order samples, sealed chunks not yet in Pebble, exemplars) hangs
// off ext, which is nil for a plain float series.
//
// All fields are guarded by mu.
type memSeries struct {
	mu    sync.Mutex
	id    uint64
	lastT atomic.Int64   // newest in-order timestamp; math.MinInt64 before the first sample. Written under mu, read without it by Append's fast path
	lastV float64        // value at lastT (floats)
	chunk chunkenc.Chunk // the open chunk: &fc for floats; its appender is appender()
	cmint int64          // first timestamp of chunk
	ext   *seriesExt

	// fc is the storage of the open float chunk: chunk is &fc while one is
	// open. Keeping it inline saves a dependent cache miss per
	// appended sample (series, then chunk state) and an allocation per
	// chunk; a series with no open float chunk carries it unused.
	fc headFloatChunk
}

// seriesExt holds the rare parts of a series.
type seriesExt struct {
	lastH   *histogram.Histogram
	lastFH  *histogram.FloatHistogram
	happ    chunkenc.Appender // the open histogram chunk's appender
	ooo     []sample          // sorted by t, all < lastT
	pending []*sealedChunk    // sealed, not yet written to Pebble (ascending mint)
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

// dropExtIfEmptyLocked frees ext once it holds nothing (no pending chunks,
// out-of-order samples, exemplars or histogram last values). Sealing a
// chunk allocates ext for its pending list; without this every series that
// ever sealed a chunk would keep a ~96-byte ext (plus its OOO slice) for
// the rest of its life.
func (s *memSeries) dropExtIfEmptyLocked() {
	e := s.ext
	if e != nil && len(e.pending) == 0 && len(e.ooo) == 0 && len(e.ex) == 0 && e.lastH == nil && e.lastFH == nil && e.happ == nil {
		s.ext = nil
	}
}

// appender returns the open chunk's appender, nil without an open chunk.
// A float chunk is its own appender; a histogram chunk's is kept in ext
// (floats are the common case, and the field would cost every series 16
// bytes).
func (s *memSeries) appender() chunkenc.Appender {
	if s.chunk == nil {
		return nil
	}
	if s.chunk == chunkenc.Chunk(&s.fc) {
		return &s.fc
	}
	return s.ext.happ
}

func (s *memSeries) extOrNew() *seriesExt {
	if s.ext == nil {
		s.ext = &seriesExt{}
	}
	return s.ext
}

// seriesPageBits sizes the pages of the ID → series table: 4096 slots
// (32 KiB) per page. Stream IDs are dense (allocated monotonically), so a
// paged array costs 8 bytes per ID and a lookup is two loads, no lock and no
// hashing, where a map costs ~40 bytes per entry and a hash per append.
const (
	seriesPageBits = 12
	seriesPageSize = 1 << seriesPageBits
)

type seriesPage [seriesPageSize]atomic.Pointer[memSeries]

// seriesMap is the ID → head series table. Lookups are lock-free; inserts
// and directory growth take mu. Safe for concurrent use.
type seriesMap struct {
	mu    sync.Mutex
	dir   atomic.Pointer[[]*seriesPage] // copy-on-write directory
	count atomic.Int64
}

func newSeriesMap() *seriesMap {
	sm := &seriesMap{}
	sm.dir.Store(new([]*seriesPage))
	return sm
}

func (sm *seriesMap) get(id uint64) *memSeries {
	dir := *sm.dir.Load()
	p := id >> seriesPageBits
	if p >= uint64(len(dir)) || dir[p] == nil {
		return nil
	}
	return dir[p][id&(seriesPageSize-1)].Load()
}

// getOrCreate returns the series for id, creating it if absent.
func (sm *seriesMap) getOrCreate(id uint64) *memSeries {
	if s := sm.get(id); s != nil {
		return s
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	dir := *sm.dir.Load()
	p := id >> seriesPageBits
	if p >= uint64(len(dir)) || dir[p] == nil {
		nd := make([]*seriesPage, max(uint64(len(dir)), p+1))
		copy(nd, dir)
		nd[p] = new(seriesPage)
		sm.dir.Store(&nd)
		dir = nd
	}
	slot := &dir[p][id&(seriesPageSize-1)]
	if s := slot.Load(); s != nil {
		return s
	}
	s := newMemSeries(id)
	slot.Store(s)
	sm.count.Add(1)
	return s
}

func (sm *seriesMap) remove(id uint64) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	dir := *sm.dir.Load()
	p := id >> seriesPageBits
	if p < uint64(len(dir)) && dir[p] != nil {
		if dir[p][id&(seriesPageSize-1)].Swap(nil) != nil {
			sm.count.Add(-1)
		}
	}
}

// forEach calls fn for every series.
func (sm *seriesMap) forEach(fn func(*memSeries)) {
	for _, pg := range *sm.dir.Load() {
		if pg == nil {
			continue
		}
		for i := range pg {
			if s := pg[i].Load(); s != nil {
				fn(s)
			}
		}
	}
}

func (sm *seriesMap) len() int { return int(sm.count.Load()) }
