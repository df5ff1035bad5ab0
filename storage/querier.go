package storage

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"
)

// Querier returns a querier over [mint, maxt]. It sees every sample
// committed before each Select call. Not safe for concurrent use; Close
// releases its Pebble iterators.
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
	readers    []*chunkReader
}

func (q *querier) Close() error {
	var err error
	for _, r := range q.readers {
		err = errors.Join(err, r.Close())
	}
	q.readers = nil
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

// headCopy is what a query copies from a head series before reading Pebble.
type headCopy struct {
	id   uint64
	lset labels.Labels
	srcs []source
}

// Select returns the series matching ms with samples in the range. The
// head part of every series is copied first, Pebble is read afterwards per
// series: a chunk sealed in between shows up in both and the iterator's
// dedupe keeps one copy, so no sample is ever missed.
func (q *querier) Select(ctx context.Context, _ bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = max(mint, hints.Start), min(maxt, hints.End)
	}
	ids, err := q.db.idx.Postings(ctx, mint, maxt, ms...)
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	entries := make([]headCopy, 0, ids.GetCardinality())
	it := ids.Iterator()
	for n := 0; it.HasNext(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return promstorage.ErrSeriesSet(err)
			}
		}
		id := it.Next()
		ls, ok := q.db.idx.Labels(id, nil)
		if !ok {
			continue
		}
		e := headCopy{id: id, lset: ls}
		if s := q.db.series.get(id); s != nil {
			s.mu.Lock()
			e.srcs = s.copySourcesLocked(mint, maxt, nil)
			s.mu.Unlock()
		}
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return labels.Compare(entries[i].lset, entries[j].lset) < 0 })
	r, err := q.db.newChunkReader()
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	q.readers = append(q.readers, r)
	limit := 0
	if hints != nil {
		limit = hints.Limit
	}
	lo, hi := q.db.partOf(mint), q.db.partOf(maxt)
	return &seriesSet{q: q, ctx: ctx, r: r, entries: entries, mint: mint, maxt: maxt, parts: q.db.parts.between(lo, hi), limit: limit}
}

// copySourcesLocked appends the head's sources that overlap [mint, maxt].
// Sealed chunk data is immutable and shared; the open chunk is copied.
func (s *memSeries) copySourcesLocked(mint, maxt int64, dst []source) []source {
	if s.ext != nil {
		for _, pc := range s.ext.pending {
			if pc.maxt >= mint && pc.mint <= maxt {
				dst = append(dst, source{mint: pc.mint, maxt: pc.maxt, enc: pc.enc, data: pc.data})
			}
		}
	}
	if s.chunk != nil && s.lastT.Load() >= mint && s.cmint <= maxt {
		dst = append(dst, source{mint: s.cmint, maxt: s.lastT.Load(), enc: s.chunk.Encoding(), data: slices.Clone(s.chunk.Bytes())})
	}
	if s.ext != nil && len(s.ext.ooo) > 0 {
		o := s.ext.ooo
		i := sort.Search(len(o), func(i int) bool { return o[i].t >= mint })
		j := sort.Search(len(o), func(i int) bool { return o[i].t > maxt })
		if i < j {
			cp := slices.Clone(o[i:j])
			dst = append(dst, source{mint: cp[0].t, maxt: cp[len(cp)-1].t, samples: cp})
		}
	}
	return dst
}

// seriesSet loads Pebble chunks lazily, one series per Next.
type seriesSet struct {
	q          *querier
	ctx        context.Context
	r          *chunkReader
	entries    []headCopy
	mint, maxt int64
	parts      []int64
	limit      int
	i          int
	returned   int
	cur        *series
	err        error
	chunks     []*sealedChunk
}

func (ss *seriesSet) Next() bool {
	for ss.err == nil && ss.i < len(ss.entries) {
		if ss.limit > 0 && ss.returned >= ss.limit {
			return false
		}
		if ss.i%256 == 0 {
			if err := ss.ctx.Err(); err != nil {
				ss.err = err
				return false
			}
		}
		e := &ss.entries[ss.i]
		ss.i++
		var err error
		ss.chunks, err = ss.r.read(e.id, ss.mint, ss.maxt, ss.parts, ss.chunks[:0])
		if err != nil {
			ss.err = err
			return false
		}
		srcs := e.srcs
		for _, c := range ss.chunks {
			srcs = append(srcs, source{mint: c.mint, maxt: c.maxt, enc: c.enc, data: c.data})
		}
		if len(srcs) == 0 {
			continue
		}
		tombs := ss.q.db.tombs.get(e.id)
		if len(tombs) > 0 && allDeleted(srcs, tombs) {
			continue
		}
		ss.cur = &series{lset: e.lset, srcs: srcs, tombs: tombs}
		e.srcs = nil
		ss.returned++
		return true
	}
	return false
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

func (ss *seriesSet) At() promstorage.Series            { return ss.cur }
func (ss *seriesSet) Err() error                        { return ss.err }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }

// series is one result series; Iterator may be called many times.
type series struct {
	lset  labels.Labels
	srcs  []source
	tombs []interval
}

func (s *series) Labels() labels.Labels { return s.lset }

func (s *series) Iterator(reuse chunkenc.Iterator) chunkenc.Iterator {
	it, ok := reuse.(*seriesIterator)
	if !ok {
		it = &seriesIterator{}
	}
	it.reset(slices.Clone(s.srcs), s.tombs)
	return it
}

type chunkQuerier struct{ querier }

func (q *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.ChunkSeriesSet {
	return promstorage.NewSeriesSetToChunkSet(q.querier.Select(ctx, sortSeries, hints, ms...))
}
