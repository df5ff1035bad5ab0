package tracestore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// Export calls f once for every trace with a span in [start, end] (unix
// ns; end 0 means no upper bound), whole (its spans of the head and of
// every block, duplicates removed), with rs holding its spans grouped by
// stream: each ResourceSpans' Labels are the stream's labels as stored,
// the tenant's label included, so that pushing rs into another store with
// a context of no tenant stores the spans as they were (how a compaction
// merges stores). A ctx restricted to tenants exports their spans only.
// The trace and rs are valid until f returns; the spans' attributes and
// resources may be kept. An error of f ends the export and is returned.
// Safe for concurrent use.
func (s *Store) Export(ctx context.Context, start, end int64, f func(id traceentry.TraceID, rs []ResourceSpans) error) error {
	v, err := s.newView(true)
	if err != nil {
		return err
	}
	hi := int64(math.MaxInt64)
	if end != 0 {
		hi = end
	}
	pl, err := s.newPlan(ctx, traceentry.Hints{}, start, hi)
	if err != nil {
		return errors.Join(err, v.close())
	}
	if err := v.restrict(ctx); err != nil {
		return errors.Join(err, v.close())
	}
	it := &iterator{ctx: ctx, v: v, pl: pl, lo: start, hi: hi, yielded: map[traceentry.TraceID]struct{}{}, export: true}
	if err := s.export(it, f); err != nil {
		return errors.Join(err, it.Close())
	}
	return errors.Join(it.Err(), it.Close())
}

// export runs Export's loop over it.
func (s *Store) export(it *iterator, f func(id traceentry.TraceID, rs []ResourceSpans) error) error {
	known := map[index.ID]labels.Labels{}
	var b labels.ScratchBuilder
	for it.Next() {
		tr := it.At()
		byStream := map[index.ID]int{}
		var rs []ResourceSpans
		for i, st := range it.curStreams {
			j, ok := byStream[st]
			if !ok {
				ls, ok := known[st]
				if !ok {
					if ls, ok = s.ix.Labels(st, &b); !ok {
						return fmt.Errorf("export trace %s: stream %d: %w", tr.TraceID, st, ErrCorrupt)
					}
					known[st] = ls
				}
				j = len(rs)
				byStream[st] = j
				rs = append(rs, ResourceSpans{Labels: ls})
			}
			rs[j].Spans = append(rs[j].Spans, tr.Spans[i])
		}
		if err := f(tr.TraceID, rs); err != nil {
			return err
		}
	}
	return nil
}
