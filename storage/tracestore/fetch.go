package tracestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/traceentry"
)

// ctxCheckEvery is how many trace parts an iterator looks at between
// context checks.
const ctxCheckEvery = 64

// pageCacheLen is how many decoded pages an iterator keeps: consecutive
// matches tend to lie in the same page, and assembling a trace from its
// parts reads a few more.
const pageCacheLen = 8

// view is a consistent snapshot of the store for one read: the head's
// traces as they were, the block list, and a Pebble snapshot holding every
// block in the list.
type view struct {
	s      *Store
	snap   *pebble.Snapshot
	head   []headView
	byID   map[traceentry.TraceID]int // index into head
	blocks []*blockMeta               // every block, newest first
	cache  []*cachedPage
	stats  ReadStats
	// keep, when not nil, are the streams whose spans the reader may see
	// (its tenants'); nil: every span.
	keep *roaring64.Bitmap
}

type headView struct {
	id         traceentry.TraceID
	spans      []traceentry.Span
	streams    []index.ID // per span
	start, end int64
}

// restrict limits v to the spans of the tenants of ctx (package tenant):
// a trace ID is the client's, so two tenants may send the same one.
func (v *view) restrict(ctx context.Context) error {
	if _, ok := tenant.FromContext(ctx); !ok {
		return nil
	}
	ids, err := v.s.ix.Postings(ctx, index.KindTrace, math.MinInt64, math.MaxInt64)
	if err != nil {
		return fmt.Errorf("tenant streams: %w", err)
	}
	v.keep = ids
	return nil
}

// appendKept appends the spans whose stream (streamOf(i)) v may see.
func (v *view) appendKept(dst, spans []traceentry.Span, streamOf func(i int) index.ID) []traceentry.Span {
	if v.keep == nil {
		return append(dst, spans...)
	}
	for i := range spans {
		if v.keep.Contains(uint64(streamOf(i))) {
			dst = append(dst, spans[i])
		}
	}
	return dst
}

type cachedPage struct {
	b     *blockMeta
	page  int
	pg    *lightPage
	heavy bool
	byID  map[traceentry.TraceID]int // index into pg.traces
}

// ReadStats count what a read did (Tempo's search metrics).
type ReadStats struct {
	Blocks, Pages     int   // blocks and pages looked at
	InspectedBytes    int64 // compressed bytes read from pages
	SkippedBlocks     int   // blocks ruled out by their header
	SkippedPages      int   // pages ruled out by their summary
	InspectedParts    int   // trace parts judged
	AssembledTraces   int   // traces read whole
	SkippedTraceParts int   // trace parts ruled out by the hints
}

// newView takes a view with the whole head in it (sorted newest first).
func (s *Store) newView(withHead bool) (*view, error) { return s.takeView(withHead, nil) }

// newTraceView takes a view whose head part is trace id's alone: a lookup
// by ID copies one head trace, not the whole head.
func (s *Store) newTraceView(id traceentry.TraceID) (*view, error) { return s.takeView(true, &id) }

func (s *Store) takeView(withHead bool, only *traceentry.TraceID) (*view, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	v := &view{s: s}
	s.mu.RLock()
	add := func(ht *headTrace) {
		hv := headView{id: ht.id, spans: ht.spans[:len(ht.spans):len(ht.spans)], streams: ht.streams[:len(ht.spans):len(ht.spans)]}
		p := part{spans: hv.spans}
		hv.start, hv.end = p.timeRange()
		v.head = append(v.head, hv)
	}
	switch {
	case withHead && only != nil:
		v.byID = make(map[traceentry.TraceID]int, 1)
		if ht, ok := s.head[*only]; ok {
			add(ht)
		}
	case withHead:
		v.head = make([]headView, 0, len(s.head))
		v.byID = make(map[traceentry.TraceID]int, len(s.head))
		for _, ht := range s.head {
			add(ht)
		}
	}
	v.blocks = slices.Clone(s.blocks)
	v.snap = s.db.NewSnapshot()
	s.mu.RUnlock()
	slices.SortFunc(v.head, func(a, b headView) int {
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		return compareIDs(a.id, b.id)
	})
	for i := range v.head {
		v.byID[v.head[i].id] = i
	}
	sortBlocksNewestFirst(v.blocks)
	return v, nil
}

func (v *view) close() error {
	if v.snap == nil {
		return nil
	}
	err := v.snap.Close()
	v.snap = nil
	return err
}

// page returns block b's page i decoded, with its heavy section when
// heavy is set.
func (v *view) page(b *blockMeta, i int, heavy bool) (*cachedPage, error) {
	var cp *cachedPage
	for j, c := range v.cache {
		if c.b == b && c.page == i {
			cp = c
			copy(v.cache[1:j+1], v.cache[:j]) // move to front
			v.cache[0] = cp
			break
		}
	}
	_, zdec := zstdCodecs()
	if cp == nil {
		raw, err := v.get(pageKey(tagLight, b.part, b.seq, i))
		if err != nil {
			return nil, err
		}
		v.stats.Pages++
		v.stats.InspectedBytes += int64(len(raw))
		dec, err := zdec.DecodeAll(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("block %d page %d light: %v: %w", b.seq, i, err, ErrCorrupt)
		}
		pg, err := decodeLight(dec)
		if err != nil {
			return nil, fmt.Errorf("block %d page %d light: %w", b.seq, i, err)
		}
		cp = &cachedPage{b: b, page: i, pg: pg, byID: make(map[traceentry.TraceID]int, len(pg.traces))}
		for ti, t := range pg.traces {
			cp.byID[t.id] = ti
		}
		if len(v.cache) < pageCacheLen {
			v.cache = append(v.cache, nil)
		}
		copy(v.cache[1:], v.cache[:len(v.cache)-1])
		v.cache[0] = cp
	}
	if heavy && !cp.heavy {
		raw, err := v.get(pageKey(tagHeavy, b.part, b.seq, i))
		if err != nil {
			return nil, err
		}
		v.stats.InspectedBytes += int64(len(raw))
		dec, err := zdec.DecodeAll(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("block %d page %d heavy: %v: %w", b.seq, i, err, ErrCorrupt)
		}
		if err := decodeHeavy(cp.pg, dec); err != nil {
			return nil, fmt.Errorf("block %d page %d heavy: %w", b.seq, i, err)
		}
		cp.heavy = true
	}
	return cp, nil
}

func (v *view) get(key []byte) ([]byte, error) {
	val, closer, err := v.snap.Get(key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, fmt.Errorf("missing page %x: %w", key, ErrCorrupt)
		}
		return nil, fmt.Errorf("read page: %w", err)
	}
	out := slices.Clone(val)
	closer.Close()
	return out, nil
}

// assemble returns every stored span of trace id: the head's and those of
// every block that may hold it (within [lo, hi] when bounded, lo > hi
// meaning every block), duplicates (a retried push, a replay) removed.
func (v *view) assemble(id traceentry.TraceID, lo, hi int64) (*traceentry.Trace, error) {
	tr, _, err := v.assembleStreams(id, lo, hi, false)
	return tr, err
}

// assembleStreams is assemble that also returns, when withStreams is set,
// the stream of each span (parallel to the trace's spans).
func (v *view) assembleStreams(id traceentry.TraceID, lo, hi int64, withStreams bool) (*traceentry.Trace, []index.ID, error) {
	tr := &traceentry.Trace{TraceID: id}
	var streams []index.ID
	add := func(spans []traceentry.Span, streamOf func(i int) index.ID) {
		if !withStreams {
			tr.Spans = v.appendKept(tr.Spans, spans, streamOf)
			return
		}
		for i := range spans {
			st := streamOf(i)
			if v.keep != nil && !v.keep.Contains(uint64(st)) {
				continue
			}
			tr.Spans = append(tr.Spans, spans[i])
			streams = append(streams, st)
		}
	}
	if i, ok := v.byID[id]; ok {
		hv := &v.head[i]
		add(hv.spans, func(j int) index.ID { return hv.streams[j] })
	}
	for _, b := range v.blocks {
		if lo <= hi && !b.overlaps(lo, hi) {
			continue
		}
		if !b.ids.mayContain(id[:]) {
			continue
		}
		pi := b.pageOf(id)
		if pi < 0 {
			continue
		}
		cp, err := v.page(b, pi, true)
		if err != nil {
			return nil, nil, err
		}
		ti, ok := cp.byID[id]
		if !ok {
			continue
		}
		t, pg := cp.pg.traces[ti], cp.pg
		add(pg.spans[t.first:t.first+t.n], func(j int) index.ID { return pg.streams[pg.spanRes[t.first+j]] })
	}
	tr.Spans, streams = dedupeSpans(tr.Spans, streams)
	v.stats.AssembledTraces++
	return tr, streams, nil
}

// dedupeSpans drops spans equal in ID, parent, times and name to an
// earlier one, and the same elements of streams when it is not nil
// (parallel to spans).
func dedupeSpans(spans []traceentry.Span, streams []index.ID) ([]traceentry.Span, []index.ID) {
	if len(spans) < 2 {
		return spans, streams
	}
	type key struct {
		id, parent traceentry.SpanID
		start, end int64
		name       string
	}
	seen := make(map[key]struct{}, len(spans))
	out := spans[:0]
	var outStreams []index.ID
	if streams != nil {
		outStreams = streams[:0]
	}
	for i, sp := range spans {
		k := key{sp.SpanID, sp.ParentSpanID, sp.StartUnixNano, sp.EndUnixNano, sp.Name}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, sp)
		if streams != nil {
			outStreams = append(outStreams, streams[i])
		}
	}
	return out, outStreams
}

// FindTraceByID returns every stored span of the trace, from the head and
// every block, or nil when none is stored. With start < end (unix ns) only
// blocks overlapping [start, end] are read (Tempo's start and end
// parameters). The trace owns its span slice; the spans' attributes and
// resources are shared with no one else and may be kept. Safe for
// concurrent use.
func (s *Store) FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := s.newTraceView(id)
	if err != nil {
		return nil, err
	}
	defer v.close()
	if err := v.restrict(ctx); err != nil {
		return nil, err
	}
	lo, hi := int64(1), int64(0) // every block
	if start < end {
		lo, hi = start, end
	}
	tr, err := v.assemble(id, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("find trace %s: %w", id, err)
	}
	if len(tr.Spans) == 0 {
		return nil, nil
	}
	return tr, nil
}

// Fetch implements traceentry.Source: the traces with a part overlapping
// the request's range widened by Options.TraceWindow that the hints do not
// rule out, each assembled whole (its parts within the window), head first,
// then blocks from the newest. Safe for concurrent use.
func (s *Store) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	v, err := s.newView(true)
	if err != nil {
		return nil, err
	}
	w := s.opts.TraceWindow.Nanoseconds()
	lo, hi := req.Start-w, int64(math.MaxInt64)
	if req.Start < math.MinInt64+w {
		lo = math.MinInt64
	}
	if req.End != 0 && req.End < math.MaxInt64-w {
		hi = req.End + w
	}
	pl, err := s.newPlan(ctx, req.Hints, lo, hi)
	if err != nil {
		return nil, errors.Join(err, v.close())
	}
	if err := v.restrict(ctx); err != nil {
		return nil, errors.Join(err, v.close())
	}
	return &iterator{ctx: ctx, v: v, pl: pl, lo: lo, hi: hi, w: w, yielded: map[traceentry.TraceID]struct{}{}}, nil
}

// iterator implements traceentry.Iterator over a view.
type iterator struct {
	ctx     context.Context
	v       *view
	pl      *plan
	lo, hi  int64 // the widened range
	w       int64
	yielded map[traceentry.TraceID]struct{}
	// export: each trace is assembled from every block, with its spans'
	// streams in curStreams (Store.Export).
	export     bool
	curStreams []index.ID

	hi0   int // next head trace
	bi    int // current block
	pi    int // next page of the current block
	pg    *cachedPage
	ti    int // next trace of pg
	steps int

	cur   *traceentry.Trace
	err   error
	final ReadStats // the stats once closed
}

func (it *iterator) overlaps(start, end int64) bool { return end >= it.lo && start <= it.hi }

func (it *iterator) Next() bool {
	if it.err != nil || it.v == nil {
		return false
	}
	for {
		if it.steps++; it.steps%ctxCheckEvery == 0 {
			if err := it.ctx.Err(); err != nil {
				it.err = err
				return false
			}
		}
		id, start, end, ok := it.nextCandidate()
		if it.err != nil || !ok {
			return false
		}
		lo, hi := start-it.w, end+it.w
		if it.export {
			lo, hi = 1, 0 // every block
		}
		tr, streams, err := it.v.assembleStreams(id, lo, hi, it.export)
		if err != nil {
			it.err = err
			return false
		}
		it.yielded[id] = struct{}{}
		if len(tr.Spans) == 0 {
			continue // another tenant's trace
		}
		it.cur, it.curStreams = tr, streams
		return true
	}
}

// nextCandidate returns the next trace part that passes the hints and
// whose trace was not yielded yet.
func (it *iterator) nextCandidate() (traceentry.TraceID, int64, int64, bool) {
	v := it.v
	for it.hi0 < len(v.head) {
		h := &v.head[it.hi0]
		it.hi0++
		if _, done := it.yielded[h.id]; done || !it.overlaps(h.start, h.end) {
			continue
		}
		v.stats.InspectedParts++
		if !it.pl.partMay(h.id, h.spans, true, nil) {
			v.stats.SkippedTraceParts++
			continue
		}
		return h.id, h.start, h.end, true
	}
	for it.bi < len(v.blocks) {
		b := v.blocks[it.bi]
		if it.pi == 0 && it.pg == nil {
			if !b.overlaps(it.lo, it.hi) || !it.pl.blockMay(b) {
				v.stats.SkippedBlocks++
				it.bi++
				continue
			}
			v.stats.Blocks++
		}
		if it.pg == nil {
			if it.pi >= len(b.pages) {
				it.bi, it.pi = it.bi+1, 0
				continue
			}
			pm := &b.pages[it.pi]
			if pm.maxEnd < it.lo || pm.minStart > it.hi || !it.pl.pageMay(pm) {
				v.stats.SkippedPages++
				it.pi++
				continue
			}
			cp, err := v.page(b, it.pi, false)
			if err != nil {
				it.err = err
				return traceentry.TraceID{}, 0, 0, false
			}
			it.pg, it.ti = cp, 0
		}
		pg := it.pg.pg
		for it.ti < len(pg.traces) {
			t := &pg.traces[it.ti]
			it.ti++
			if _, done := it.yielded[t.id]; done || !it.overlaps(t.start, t.end) {
				continue
			}
			v.stats.InspectedParts++
			if !it.pl.partMay(t.id, pg.spans[t.first:t.first+t.n], it.pg.heavy, b.indexed) {
				v.stats.SkippedTraceParts++
				continue
			}
			return t.id, t.start, t.end, true
		}
		it.pg = nil
		it.pi++
	}
	return traceentry.TraceID{}, 0, 0, false
}

func (it *iterator) At() *traceentry.Trace { return it.cur }
func (it *iterator) Err() error            { return it.err }

// Stats returns what the iterator read so far.
func (it *iterator) Stats() ReadStats {
	if it.v == nil {
		return it.final
	}
	return it.v.stats
}

func (it *iterator) Close() error {
	if it.v == nil {
		return nil
	}
	it.final = it.v.stats
	err := it.v.close()
	it.v = nil
	return err
}

// StatsIterator is implemented by the store's iterators: what a search
// read, for Tempo's search metrics (also after Close).
type StatsIterator interface {
	Stats() ReadStats
}

var _ StatsIterator = (*iterator)(nil)
