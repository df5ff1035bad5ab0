package storage

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/weftdb/weft/index/tenant"
)

// Querier returns a querier over [mint, maxt]. It sees every sample
// committed before each Select call (and may see later ones). Not safe for
// concurrent use; Close releases its Pebble iterators.
func (db *DB) Querier(mint, maxt int64) (promstorage.Querier, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return &querier{db: db, mint: mint, maxt: maxt}, nil
}

// ChunkQuerier returns a chunk querier over [mint, maxt]; chunks are
// re-encoded from the merged samples (Prometheus encodings).
func (db *DB) ChunkQuerier(mint, maxt int64) (promstorage.ChunkQuerier, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return &chunkQuerier{querier{db: db, mint: mint, maxt: maxt}}, nil
}

type querier struct {
	db         *DB
	mint, maxt int64
	sets       []*seriesSet
}

func (q *querier) Close() error {
	var err error
	for _, ss := range q.sets {
		err = errors.Join(err, ss.closeCursors())
	}
	q.sets = nil
	return err
}

func (q *querier) LabelValues(ctx context.Context, name string, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	vs, err := q.db.idx.LabelValues(ctx, name, q.mint, q.maxt, ms...)
	if err != nil {
		return nil, nil, err
	}
	if hints != nil && hints.Limit > 0 && len(vs) > hints.Limit {
		vs = vs[:hints.Limit]
	}
	return vs, nil, nil
}

func (q *querier) LabelNames(ctx context.Context, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	ns, err := q.db.idx.LabelNames(ctx, q.mint, q.maxt, ms...)
	if err != nil {
		return nil, nil, err
	}
	if hints != nil && hints.Limit > 0 && len(ns) > hints.Limit {
		ns = ns[:hints.Limit]
	}
	return ns, nil, nil
}

// Select returns the series matching ms with samples in the range.
//
// It resolves the postings only; the returned set loads the series in
// batches of selectBatch as it is iterated: the head state of a batch is
// copied first and Pebble is read afterwards through iterators opened after
// the copy, so a chunk that moved from the head to Pebble in between shows up
// in both (the series iterator keeps one copy) and is never missed.
//
// Series come in ascending stream ID order (the order of creation), or in
// label order when sortSeries is set; labels are built only for series that
// have samples in the range. With hints.Func "series" (the series API) no
// sample data is copied: a series is returned when its head or its chunk
// headers in Pebble overlap the range, and its Iterator loads the data.
func (q *querier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	ss, bm, err := q.newSeriesSet(ctx, hints, ms)
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	if ss == nil {
		return promstorage.EmptySeriesSet()
	}
	ss.ids = bm.ToArray()
	if sortSeries {
		if err := ss.sortByLabels(); err != nil {
			return promstorage.ErrSeriesSet(err)
		}
	}
	q.sets = append(q.sets, ss)
	return ss
}

// newSeriesSet returns the set of a Select, without its series yet, and
// the postings of ms in its range; nil when the hinted range is empty.
func (q *querier) newSeriesSet(ctx context.Context, hints *promstorage.SelectHints, ms []*labels.Matcher) (*seriesSet, *roaring64.Bitmap, error) {
	ss := &seriesSet{q: q, ctx: ctx, mint: q.mint, maxt: q.maxt}
	if hints != nil {
		ss.mint, ss.maxt = max(ss.mint, hints.Start), min(ss.maxt, hints.End)
		ss.limit = hints.Limit
		ss.labelsOnly = hints.Func == "series"
		ss.latestOnly = latestSampleSelects(ctx) && hints.Step == 0 && hints.Range == 0 &&
			hints.Func != "series" && hints.Func != "start_timestamp"
	}
	if ss.mint > ss.maxt {
		return nil, nil, nil
	}
	bm, err := q.db.idx.Postings(ctx, ss.mint, ss.maxt, ms...)
	if err != nil {
		return nil, nil, err
	}
	if lim := maxSeriesOf(ctx); lim.n > 0 {
		if got := lim.seen.add(ms, int(bm.GetCardinality())); got > lim.n {
			return nil, nil, lim.err(got)
		}
	}
	return ss, bm, nil
}

// maxSeriesKey carries the limit of WithMaxSeries.
type maxSeriesKey struct{}

type maxSeries struct {
	n    int
	err  func(got int) error
	seen *seriesTally
}

// seriesTally is the series the Selects under one context selected, by
// selector: a selector selected again (weft's optimizations may plan with
// a Select the engine then repeats) counts once, with its larger count.
// Safe for concurrent use.
type seriesTally struct {
	mu    sync.Mutex
	by    map[string]int
	total int
}

// add records that the selector ms selected n series and returns the
// total.
func (t *seriesTally) add(ms []*labels.Matcher, n int) int {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.String())
		b.WriteByte(0)
	}
	key := b.String()
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.by[key]; !ok || n > old {
		t.total += n - old
		t.by[key] = n
	}
	return t.total
}

func maxSeriesOf(ctx context.Context) maxSeries {
	m, _ := ctx.Value(maxSeriesKey{}).(maxSeries)
	return m
}

// WithMaxSeries returns ctx under which the Selects made with it (one
// query's) together selecting more than n series fail with errOf(the
// series selected so far, the failing Select's included) before that
// Select reads any sample: a per-tenant query limit (Mimir's
// max_fetched_series_per_query). A series two selectors select counts
// twice, as in Prometheus' own series accounting; a selector selected
// again counts once. n <= 0 is no limit.
func WithMaxSeries(ctx context.Context, n int, errOf func(got int) error) context.Context {
	return context.WithValue(ctx, maxSeriesKey{}, maxSeries{n: n, err: errOf, seen: &seriesTally{by: map[string]int{}}})
}

// latestSampleKey marks a context from WithLatestSampleSelects.
type latestSampleKey struct{}

// WithLatestSampleSelects returns ctx marking the Selects made under it as
// the PromQL engine's: a Select whose hints say it is a plain instant
// selector (Step and Range 0, not the series API nor start_timestamp) may
// then return of each series only its latest sample at or before the end
// of the range, which is all the engine reads of such a selector. For a
// series this process created (so that the head saw every sample it has)
// the head knows that sample without reading a chunk, and knows that a
// series whose latest sample is older than the range has none in it,
// without looking in Pebble: instant queries over many series, most of
// them idle or ended (runs, pods), skip their chunks. Callers that need
// every sample (remote read, exports) must not use it.
func WithLatestSampleSelects(ctx context.Context) context.Context {
	return context.WithValue(ctx, latestSampleKey{}, true)
}

// LatestSampleQueryable wraps q so that every Select of its queriers runs
// under WithLatestSampleSelects: the queryable to hand the PromQL engine for
// an instant query, and only the engine.
func LatestSampleQueryable(q promstorage.Queryable) promstorage.Queryable {
	return latestSampleQueryable{q}
}

type latestSampleQueryable struct{ promstorage.Queryable }

func (q latestSampleQueryable) Querier(mint, maxt int64) (promstorage.Querier, error) {
	qr, err := q.Queryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return latestSampleQuerier{qr}, nil
}

type latestSampleQuerier struct{ promstorage.Querier }

func (q latestSampleQuerier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	return q.Querier.Select(WithLatestSampleSelects(ctx), sortSeries, hints, ms...)
}

func latestSampleSelects(ctx context.Context) bool {
	v, _ := ctx.Value(latestSampleKey{}).(bool)
	return v
}

// latestKind is what the head knows of a series' latest sample in a range.
type latestKind uint8

const (
	latestUnknown latestKind = iota // read the series' chunks
	latestNone                      // no sample in the range
	latestOne                       // the latest sample in the range is known
)

// latestLocked returns what the head knows of s's latest sample at or
// before maxt, and that sample (a float) for latestOne. It knows only for
// a series created by this process whose newest sample is a float still
// retained; s.mu is held, and the caller has checked that s has no
// tombstones.
func (db *DB) latestLocked(s *memSeries, mint, maxt int64) (latestKind, sample) {
	t := s.lastT.Load()
	if s.id < db.freshFrom || t == minInt64 || t < db.minT.Load() ||
		(s.ext != nil && (s.ext.lastH != nil || s.ext.lastFH != nil)) {
		return latestUnknown, sample{}
	}
	switch {
	case t < mint:
		return latestNone, sample{}
	case t <= maxt:
		return latestOne, sample{t: t, v: s.lastV}
	}
	return latestUnknown, sample{}
}

// headHoldsLocked reports whether the head holds every sample of s at or
// after mint, so that a read of [mint, ...] need not look at Pebble. It
// knows only for a series created by this process (freshFrom): all its
// chunks in Pebble were written by this head, in-order chunks as they left
// the pending list (each older than the next pending chunk and the open
// chunk) and out-of-order samples only from before the open chunk
// (flushOOO), so every sample in Pebble is older than the head's first
// in-order chunk; its out-of-order samples still in the head are copied
// with it. s.mu is held; the caller checks that s has no tombstones.
func (db *DB) headHoldsLocked(s *memSeries, mint int64) bool {
	if s.id < db.freshFrom {
		return false
	}
	from := int64(maxInt64)
	switch {
	case s.ext != nil && len(s.ext.pending) > 0:
		from = s.ext.pending[0].mint
	case s.chunk != nil:
		from = s.cmint
	}
	return from <= mint
}

// selectBatch is how many series a seriesSet loads at once. The Pebble
// iterators are reopened per batch (a view at least as new as the head
// copies), so it trades iterator setup against the memory of one batch.
const selectBatch = 1024

// seriesSet loads its series batch by batch; see querier.Select.
type seriesSet struct {
	q          *querier
	ctx        context.Context
	mint, maxt int64
	limit      int
	labelsOnly bool
	latestOnly bool // only the latest sample at or before maxt is needed (WithLatestSampleSelects)

	ids     []uint64        // the series to load, in output order
	lsets   []labels.Labels // labels of ids when sorted by labels, else nil
	groupOf []int32         // SelectGroups: the group of each of ids, else nil
	next    int             // first id of the next batch

	batch    []headEntry // the loaded batch
	bi       int         // next entry of batch
	headSrc  []source    // head sources of the batch (entries index into it)
	cursors  []chunkCursor
	arena    []byte   // copied chunk bytes of the batch
	out      []source // the series' sources, shared by the batch's series
	batchLen int      // series in the batch (the slabs' capacity)
	points   []sample // latest samples of the batch's latest-only series
	slab     []series // the batch's series, handed out one by one
	chunks   []source // scratch: one series' Pebble chunks
	b        labels.ScratchBuilder

	returned int
	cur      promstorage.Series
	curPos   int        // index in ids of cur
	curEntry *headEntry // SelectGroups: cur's entry when At builds cur lazily
	err      error
}

// headEntry is one series of a batch with the range of its copied head
// sources in seriesSet.headSrc.
type headEntry struct {
	id     uint64
	pos    int           // index in seriesSet.ids
	lset   labels.Labels // set when sorted by labels
	lo, hi int
	latest latestKind // for a latest-only select
	point  int        // index in seriesSet.points when latest == latestOne
	// headOnly: the head holds every sample of the series at or after the
	// range's mint (headHoldsLocked), so Pebble need not be read.
	headOnly bool
}

func (ss *seriesSet) sortByLabels() error {
	type entry struct {
		id uint64
		ls labels.Labels
	}
	es := make([]entry, 0, len(ss.ids))
	b := labels.NewScratchBuilder(32)
	for n, id := range ss.ids {
		if n%1024 == 0 {
			if err := ss.ctx.Err(); err != nil {
				return err
			}
		}
		if ls, ok := ss.q.db.idx.Labels(id, &b); ok {
			es = append(es, entry{id, tenant.Output(ss.ctx, ls)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return labels.Compare(a.ls, b.ls) })
	ss.ids = ss.ids[:len(es)]
	ss.lsets = make([]labels.Labels, len(es))
	for i, e := range es {
		ss.ids[i], ss.lsets[i] = e.id, e.ls
	}
	return nil
}

func (ss *seriesSet) Next() bool {
	for ss.err == nil {
		if ss.limit > 0 && ss.returned >= ss.limit {
			break
		}
		if ss.bi == len(ss.batch) {
			if ss.next == len(ss.ids) {
				break
			}
			ss.loadBatch()
			continue
		}
		e := &ss.batch[ss.bi]
		ss.bi++
		if ss.groupOf != nil && e.latest == latestOne {
			// SelectGroups: At builds the series if asked; Latest
			// answers without it.
			ss.cur, ss.curPos, ss.curEntry = nil, e.pos, e
			ss.returned++
			return true
		}
		if s := ss.build(e); s != nil {
			ss.cur, ss.curPos, ss.curEntry = s, e.pos, nil
			ss.returned++
			return true
		}
	}
	ss.cur, ss.curEntry = nil, nil
	if err := ss.closeCursors(); err != nil && ss.err == nil {
		ss.err = err
	}
	return false
}

// loadBatch copies the head state of the next batch of series and reopens
// the Pebble cursors after the copy.
func (ss *seriesSet) loadBatch() {
	if err := ss.ctx.Err(); err != nil {
		ss.err = err
		return
	}
	db := ss.q.db
	end := min(ss.next+selectBatch, len(ss.ids))
	ss.batch, ss.bi, ss.headSrc = ss.batch[:0], 0, ss.headSrc[:0]
	// The arena and the output slabs are referenced by the series handed
	// out from earlier batches: start new ones (allocated by the first
	// build: a grouped latest-only select builds none).
	ss.arena, ss.out, ss.slab, ss.batchLen = nil, nil, nil, end-ss.next
	ss.points = nil
	if ss.latestOnly {
		ss.points = make([]sample, 0, end-ss.next)
	}
	for i := ss.next; i < end; i++ {
		e := headEntry{id: ss.ids[i], pos: i, lo: len(ss.headSrc)}
		if ss.lsets != nil {
			e.lset = ss.lsets[i]
		}
		if s := db.series.get(e.id); s != nil {
			latest := ss.latestOnly && len(db.tombs.get(e.id)) == 0
			s.mu.Lock()
			if latest {
				var x sample
				if e.latest, x = db.latestLocked(s, ss.mint, ss.maxt); e.latest == latestOne {
					e.point = len(ss.points)
					ss.points = append(ss.points, x)
				}
			}
			if e.latest == latestUnknown {
				ss.headSrc, ss.arena = s.copySourcesLocked(ss.mint, ss.maxt, !ss.labelsOnly, ss.headSrc, ss.arena)
				e.headOnly = db.headHoldsLocked(s, ss.mint)
			}
			s.mu.Unlock()
		}
		e.hi = len(ss.headSrc)
		ss.batch = append(ss.batch, e)
	}
	ss.next = end
	if err := ss.closeCursors(); err != nil {
		ss.err = err
		return
	}
	// Partitions are read after the copies too: a chunk written to a new
	// partition after them is in a partition listed here.
	parts := db.parts.between(db.partOf(ss.mint), db.partOf(ss.maxt))
	ss.cursors = slices.Grow(ss.cursors[:0], len(parts))[:len(parts)]
	for i, p := range parts {
		ss.cursors[i].reset(p)
	}
}

// build returns the series of e, or nil when it has no samples in the range
// (or ss.err is set).
func (ss *seriesSet) build(e *headEntry) promstorage.Series {
	if e.latest == latestNone {
		return nil
	}
	if ss.slab == nil {
		ss.out = make([]source, 0, ss.batchLen+16)
		ss.slab = make([]series, 0, ss.batchLen)
	}
	switch e.latest {
	case latestOne:
		ls, ok := ss.labelsOf(e)
		if !ok {
			return nil
		}
		lo := len(ss.out)
		x := ss.points[e.point : e.point+1 : e.point+1]
		ss.out = append(ss.out, source{mint: x[0].t, maxt: x[0].t, samples: x})
		ss.slab = append(ss.slab, series{lset: ls, srcs: ss.out[lo:len(ss.out):len(ss.out)]})
		return &ss.slab[len(ss.slab)-1]
	}
	db := ss.q.db
	head := ss.headSrc[e.lo:e.hi]
	tombs := db.tombs.get(e.id)
	if ss.labelsOnly && len(head) > 0 && len(tombs) == 0 {
		// Data in the head's range: no need to look at Pebble.
		return ss.labelsOnlySeries(e)
	}
	ss.chunks = ss.chunks[:0]
	for i := range ss.cursors {
		if e.headOnly && len(tombs) == 0 {
			break
		}
		var err error
		ss.chunks, ss.arena, err = ss.cursors[i].read(db, e.id, ss.mint, ss.maxt, !ss.labelsOnly, ss.chunks, ss.arena)
		if err != nil {
			ss.err = err
			return nil
		}
	}
	if len(ss.chunks)+len(head) == 0 {
		return nil
	}
	lo := len(ss.out)
	ss.out = append(ss.out, ss.chunks...)
	ss.out = append(ss.out, head...)
	srcs := ss.out[lo:len(ss.out):len(ss.out)]
	if len(tombs) > 0 && allDeleted(srcs, tombs) {
		ss.out = ss.out[:lo]
		return nil
	}
	if ss.labelsOnly {
		ss.out = ss.out[:lo]
		return ss.labelsOnlySeries(e)
	}
	sortSources(srcs)
	ls, ok := ss.labelsOf(e)
	if !ok {
		ss.out = ss.out[:lo]
		return nil
	}
	ss.slab = append(ss.slab, series{lset: ls, srcs: srcs, tombs: tombs})
	return &ss.slab[len(ss.slab)-1]
}

func (ss *seriesSet) labelsOf(e *headEntry) (labels.Labels, bool) {
	if ss.lsets != nil {
		return e.lset, true
	}
	if ss.groupOf != nil {
		return labels.EmptyLabels(), true // SelectGroups: the groups carry the labels
	}
	ls, ok := ss.q.db.idx.Labels(e.id, &ss.b)
	return tenant.Output(ss.ctx, ls), ok
}

func (ss *seriesSet) labelsOnlySeries(e *headEntry) promstorage.Series {
	ls, ok := ss.labelsOf(e)
	if !ok {
		return nil
	}
	return &lazySeries{lset: ls, q: ss.q, id: e.id, mint: ss.mint, maxt: ss.maxt}
}

func (ss *seriesSet) closeCursors() error {
	var err error
	for i := range ss.cursors {
		err = errors.Join(err, ss.cursors[i].close())
	}
	ss.cursors = ss.cursors[:0]
	return err
}

// allDeleted reports whether every source lies inside one tombstone.
func allDeleted(srcs []source, tombs []interval) bool {
	for _, s := range srcs {
		covered := false
		for _, iv := range tombs {
			if iv.mint <= s.mint && iv.maxt >= s.maxt {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

func (ss *seriesSet) At() promstorage.Series {
	if ss.cur == nil && ss.curEntry != nil {
		ss.cur = ss.build(ss.curEntry)
	}
	return ss.cur
}

func (ss *seriesSet) Err() error                        { return ss.err }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }

// copySourcesLocked appends the head's sources that overlap [mint, maxt].
// Sealed chunk data is immutable and shared; the open chunk's bytes are
// copied into arena (a fresh block when it is full: earlier blocks stay
// referenced by the sources that point into them). Without withData only
// the sources' time bounds are appended.
func (s *memSeries) copySourcesLocked(mint, maxt int64, withData bool, dst []source, arena []byte) ([]source, []byte) {
	if s.ext != nil {
		for _, pc := range s.ext.pending {
			if pc.maxt >= mint && pc.mint <= maxt {
				src := source{mint: pc.mint, maxt: pc.maxt}
				if withData {
					src.enc, src.data = pc.enc, pc.data
				}
				dst = append(dst, src)
			}
		}
	}
	if s.chunk != nil && s.lastT.Load() >= mint && s.cmint <= maxt {
		src := source{mint: s.cmint, maxt: s.lastT.Load()}
		if withData {
			src.enc = s.chunk.Encoding()
			src.data, arena = arenaCopy(arena, s.chunk.Bytes())
		}
		dst = append(dst, src)
	}
	if s.ext != nil && len(s.ext.ooo) > 0 {
		o := s.ext.ooo
		i := sort.Search(len(o), func(i int) bool { return o[i].t >= mint })
		j := sort.Search(len(o), func(i int) bool { return o[i].t > maxt })
		if i < j {
			src := source{mint: o[i].t, maxt: o[j-1].t}
			if withData {
				src.samples = slices.Clone(o[i:j])
			}
			dst = append(dst, src)
		}
	}
	return dst, arena
}

// series is one result series; Iterator may be called many times.
type series struct {
	lset  labels.Labels
	srcs  []source // sorted by mint; shared, never modified
	tombs []interval
}

func (s *series) Labels() labels.Labels { return s.lset }

func (s *series) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*seriesIterator)
	if !ok {
		it = &seriesIterator{}
	}
	it.reset(s.srcs, s.tombs)
	return it
}

// lazySeries is a series of a labels-only select (the series API): its
// samples are loaded when Iterator is called, valid until the querier is
// closed.
type lazySeries struct {
	lset       labels.Labels
	q          *querier
	id         uint64
	mint, maxt int64
}

func (s *lazySeries) Labels() labels.Labels { return s.lset }

func (s *lazySeries) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*seriesIterator)
	if !ok {
		it = &seriesIterator{}
	}
	ss := &seriesSet{q: s.q, ctx: context.Background(), mint: s.mint, maxt: s.maxt, ids: []uint64{s.id}}
	ss.loadBatch()
	var sr promstorage.Series
	if ss.err == nil && len(ss.batch) == 1 {
		ss.lsets = []labels.Labels{s.lset} // labels are known
		ss.batch[0].lset = s.lset
		sr = ss.build(&ss.batch[0])
	}
	if err := ss.closeCursors(); err != nil && ss.err == nil {
		ss.err = err
	}
	switch {
	case ss.err != nil:
		it.reset(nil, nil)
		it.err = ss.err
	case sr == nil:
		it.reset(nil, nil)
	default:
		full := sr.(*series)
		it.reset(full.srcs, full.tombs)
	}
	return it
}

type chunkQuerier struct{ querier }

func (q *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.ChunkSeriesSet {
	return promstorage.NewSeriesSetToChunkSet(q.querier.Select(ctx, sortSeries, hints, ms...))
}
