package storage

import (
	"context"
	"sort"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
)

// addExemplarLocked stores e in the series' bounded ring. Exemplars must
// arrive in timestamp order per series; an exact duplicate of the newest is
// ignored, an older one is rejected with storage.ErrOutOfOrderExemplar.
func (db *DB) addExemplarLocked(s *memSeries, e exemplar.Exemplar) error {
	max := db.opts.MaxExemplarsPerSeries
	if max < 0 {
		return nil
	}
	x := s.extOrNew()
	if n := len(x.ex); n > 0 {
		newest := x.ex[(x.exNext+n-1)%n]
		if len(x.ex) < max {
			newest = x.ex[n-1]
		}
		if newest.Equals(e) {
			return promstorage.ErrDuplicateExemplar
		}
		if e.Ts < newest.Ts {
			return promstorage.ErrOutOfOrderExemplar
		}
	}
	if len(x.ex) < max {
		x.ex = append(x.ex, e)
		return nil
	}
	x.ex[x.exNext] = e
	x.exNext = (x.exNext + 1) % max
	return nil
}

// exemplarsLocked returns the series' exemplars in [start, end], oldest first.
func (s *memSeries) exemplarsLocked(start, end int64) []exemplar.Exemplar {
	if s.ext == nil || len(s.ext.ex) == 0 {
		return nil
	}
	x := s.ext
	var out []exemplar.Exemplar
	n := len(x.ex)
	for i := 0; i < n; i++ {
		e := x.ex[(x.exNext+i)%n]
		if e.Ts >= start && e.Ts <= end {
			out = append(out, e)
		}
	}
	return out
}

// ExemplarQuerier returns a querier over the exemplars kept in the head.
func (db *DB) ExemplarQuerier(ctx context.Context) (promstorage.ExemplarQuerier, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return &exemplarQuerier{db: db, ctx: ctx}, nil
}

type exemplarQuerier struct {
	db  *DB
	ctx context.Context
}

// Select returns exemplars in [start, end] of series matching any of the
// matcher sets. No match is an empty, non-nil slice, as Prometheus' exemplar
// storage returns (the API answers "data":[] rather than null).
func (q *exemplarQuerier) Select(start, end int64, matchers ...[]*labels.Matcher) ([]exemplar.QueryResult, error) {
	seen := map[uint64]bool{}
	out := []exemplar.QueryResult{}
	for _, ms := range matchers {
		ids, err := q.db.idx.Postings(q.ctx, minInt64, maxInt64, ms...)
		if err != nil {
			return nil, err
		}
		it := ids.Iterator()
		for it.HasNext() {
			id := it.Next()
			if seen[id] {
				continue
			}
			seen[id] = true
			s := q.db.series.get(id)
			if s == nil {
				continue
			}
			s.mu.Lock()
			es := s.exemplarsLocked(start, end)
			s.mu.Unlock()
			if len(es) == 0 {
				continue
			}
			ls, ok := q.db.idx.Labels(id, nil)
			if !ok {
				continue
			}
			out = append(out, exemplar.QueryResult{SeriesLabels: tenant.Output(q.ctx, ls), Exemplars: es})
		}
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].SeriesLabels, out[j].SeriesLabels) < 0 })
	return out, nil
}
