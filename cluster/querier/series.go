package querier

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// Querier implements storage.Queryable.
func (q *Querier) Querier(mint, maxt int64) (promstorage.Querier, error) {
	return &seriesQuerier{q: q, mint: mint, maxt: maxt}, nil
}

// ChunkQuerier implements storage.ChunkQueryable (remote read of the
// querier itself) over the same fan-out.
func (q *Querier) ChunkQuerier(mint, maxt int64) (promstorage.ChunkQuerier, error) {
	return &chunkQuerier{seriesQuerier{q: q, mint: mint, maxt: maxt}}, nil
}

// seriesQuerier is one query's view of the cluster over [mint, maxt].
type seriesQuerier struct {
	q          *Querier
	mint, maxt int64

	mu      sync.Mutex
	closers []func() error
}

// ranges splits [mint, maxt] at the blocks/ingesters boundary: the
// ingesters' part (ok false when empty) and the blocks' (likewise).
func (s *seriesQuerier) ranges() (ingMin, ingMax int64, ing bool, blkMin, blkMax int64, blk bool) {
	split, ok := s.q.split()
	if !ok {
		return s.mint, s.maxt, true, 0, 0, false
	}
	if s.maxt >= split {
		ingMin, ingMax, ing = max(s.mint, split), s.maxt, true
	}
	if s.mint < split {
		blkMin, blkMax, blk = s.mint, min(s.maxt, split-1), true
	}
	return
}

func (s *seriesQuerier) Select(ctx context.Context, _ bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	ingMin, ingMax, ing, blkMin, blkMax, blk := s.ranges()
	var sets []promstorage.SeriesSet
	var warns annotations.Annotations
	if ing {
		h := clampHints(hints, ingMin, ingMax)
		got, missing, err := fanout(ctx, s.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) (promstorage.SeriesSet, error) {
			set, closer, err := s.q.remoteRead(ctx, in.base, ingMin, ingMax, h, ms)
			if closer != nil {
				s.onClose(closer)
			}
			return set, err
		})
		if err != nil {
			return promstorage.ErrSeriesSet(err)
		}
		w, err := s.q.partial(ctx, missing)
		if err != nil {
			return promstorage.ErrSeriesSet(err)
		}
		if w != nil {
			warns.Add(w)
		}
		sets = append(sets, got...)
	}
	if blk {
		bq, err := s.q.opts.Blocks.Querier(blkMin, blkMax)
		if err != nil {
			return promstorage.ErrSeriesSet(err)
		}
		s.q.m.blockReads.Inc()
		s.onClose(bq.Close)
		sets = append(sets, bq.Select(ctx, true, clampHints(hints, blkMin, blkMax), ms...))
	}
	merged := promstorage.NewMergeSeriesSet(sets, 0, promstorage.ChainedSeriesMerge)
	if len(warns) == 0 {
		return merged
	}
	return warnSet{SeriesSet: merged, warns: warns}
}

// clampHints narrows a select's hints to [mint, maxt].
func clampHints(h *promstorage.SelectHints, mint, maxt int64) *promstorage.SelectHints {
	if h == nil {
		return &promstorage.SelectHints{Start: mint, End: maxt}
	}
	c := *h
	c.Start, c.End = max(c.Start, mint), min(c.End, maxt)
	return &c
}

func (s *seriesQuerier) LabelValues(ctx context.Context, name string, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return s.labels(ctx, name, hints, ms)
}

func (s *seriesQuerier) LabelNames(ctx context.Context, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return s.labels(ctx, "", hints, ms)
}

// labels answers label names (name "") or values: the union over the
// ingesters' and the blocks' answers.
func (s *seriesQuerier) labels(ctx context.Context, name string, hints *promstorage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
	ingMin, ingMax, ing, blkMin, blkMax, blk := s.ranges()
	var lists [][]string
	var warns annotations.Annotations
	if ing {
		got, missing, err := fanout(ctx, s.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) ([]string, error) {
			return s.q.labelQuery(ctx, in.base, name, ingMin, ingMax, ms)
		})
		if err != nil {
			return nil, nil, err
		}
		w, err := s.q.partial(ctx, missing)
		if err != nil {
			return nil, nil, err
		}
		if w != nil {
			warns.Add(w)
		}
		lists = append(lists, got...)
	}
	if blk {
		bq, err := s.q.opts.Blocks.Querier(blkMin, blkMax)
		if err != nil {
			return nil, nil, err
		}
		defer bq.Close()
		s.q.m.blockReads.Inc()
		var vs []string
		var ws annotations.Annotations
		if name == "" {
			vs, ws, err = bq.LabelNames(ctx, hints, ms...)
		} else {
			vs, ws, err = bq.LabelValues(ctx, name, hints, ms...)
		}
		if err != nil {
			return nil, nil, err
		}
		warns.Merge(ws)
		lists = append(lists, vs)
	}
	out := union(lists)
	if hints != nil && hints.Limit > 0 && len(out) > hints.Limit {
		out = out[:hints.Limit]
	}
	return out, warns, nil
}

// onClose registers what Close releases: the streamed answers and block
// queriers of the query's selects (a query that stops reading a set early
// leaves it open until then).
func (s *seriesQuerier) onClose(f func() error) {
	s.mu.Lock()
	s.closers = append(s.closers, f)
	s.mu.Unlock()
}

// Close releases what the selects hold open; the sets must not be read
// afterwards.
func (s *seriesQuerier) Close() error {
	s.mu.Lock()
	cs := s.closers
	s.closers = nil
	s.mu.Unlock()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// union merges string lists into one sorted list without duplicates.
func union(lists [][]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type chunkQuerier struct{ seriesQuerier }

func (c *chunkQuerier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.ChunkSeriesSet {
	return promstorage.NewSeriesSetToChunkSet(c.seriesQuerier.Select(ctx, sortSeries, hints, ms...))
}

// warnSet adds warnings to a series set.
type warnSet struct {
	promstorage.SeriesSet
	warns annotations.Annotations
}

func (w warnSet) Warnings() annotations.Annotations {
	out := annotations.Annotations{}
	out.Merge(w.warns)
	out.Merge(w.SeriesSet.Warnings())
	return out
}
