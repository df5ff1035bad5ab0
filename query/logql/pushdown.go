package logql

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// Optional Source extensions. A Source that implements them lets the
// engine read less; results are the same either way.

// MetadataHintSource selects like Source.Select, and may skip chunks in
// which no entry carries every structured-metadata pair of md (a stream
// with a label of the pair's name keeps its chunks). The engine still
// applies every filter to the entries it gets.
type MetadataHintSource interface {
	SelectWithMetadata(ctx context.Context, p SelectParams, md []labels.Label) (EntryIterator, error)
}

// TimestampSource lists the timestamps of the entries Select would return
// for p (p has no line filters), in blocks, without reading lines. f gets
// each block's stream, a superset of the structured-metadata names its
// entries carry (sorted), its bounds and count (all inside
// [p.Start, p.End)), and load, which decodes its timestamps (ascending);
// values are valid until f returns. An error of f stops the walk and is
// returned.
type TimestampSource interface {
	SelectTimestamps(ctx context.Context, p SelectParams, f func(stream labels.Labels, metaNames []string, minT, maxT int64, n int, load func() ([]int64, error)) error) error
}

// selectEntries selects the entries of a pipeline's selector, with the
// pushdown hints the source takes.
func (ev *evaluator) selectEntries(ctx context.Context, p SelectParams, stages []Stage) (EntryIterator, error) {
	if hs, ok := ev.src.(MetadataHintSource); ok {
		if md := metadataHints(stages); len(md) > 0 {
			return hs.SelectWithMetadata(ctx, p, md)
		}
	}
	return ev.src.Select(ctx, p)
}

// metadataHints returns the name="value" pairs (value not empty) that
// label filters require before any stage can add or change labels: an
// entry passing them has each pair among its stream labels and structured
// metadata, the only labels it has at that point.
func metadataHints(stages []Stage) []labels.Label {
	var out []labels.Label
	var walk func(f LabelFilter)
	walk = func(f LabelFilter) {
		switch f := f.(type) {
		case *BinaryLabelFilter:
			if f.And {
				walk(f.Left)
				walk(f.Right)
			}
		case *StringLabelFilter:
			if m := f.Matcher; m.Type == labels.MatchEqual && m.Value != "" {
				out = append(out, labels.Label{Name: m.Name, Value: m.Value})
			}
		}
	}
	for _, st := range stages {
		switch s := st.(type) {
		case *LineFilterStage:
		case *LabelFilterStage:
			walk(s.Filter)
		default:
			return out
		}
	}
	return out
}

// errNeedEntries: the timestamp path cannot answer (a block's metadata
// names affect the series); the caller reads entries instead.
var errNeedEntries = errors.New("entries needed")

// timestampsOnly reports whether a range aggregation needs nothing but the
// entries' timestamps and stream labels: counts of a bare selector.
func timestampsOnly(e *RangeAggExpr) bool {
	r := e.Left
	if r.Unwrap != nil || len(r.Left.Stages) > 0 {
		return false
	}
	return e.Op == "count_over_time" || e.Op == "rate"
}

// extractCounts is extractSamples for timestampsOnly aggregations over a
// TimestampSource: one pass over the blocks, whole blocks added at once
// when every entry falls into the same steps.
func (ev *evaluator) extractCounts(ctx context.Context, e *RangeAggExpr, src TimestampSource) ([]*rseries, error) {
	r := e.Left
	rng, off := int64(r.Range), int64(r.Offset)
	first, last := ev.steps[0], ev.steps[len(ev.steps)-1]
	p := SelectParams{
		Start: ev.selectStart(first - off - rng + 1), End: last - off + 1,
		Matchers: r.Left.Matchers, Direction: Forward,
	}
	var (
		byKey     = map[string]*rseries{}
		out       []*rseries
		lb        = &lbuilder{}
		curStream labels.Labels
		curSeries *rseries
		blocks    int
	)
	err := src.SelectTimestamps(ctx, p, func(stream labels.Labels, names []string, minT, maxT int64, n int, load func() ([]int64, error)) error {
		if blocks++; blocks%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		for _, name := range names {
			if groupKeeps(e.Grouping, name) {
				return errNeedEntries
			}
		}
		if curSeries == nil || !labels.Equal(stream, curStream) {
			curStream = stream.Copy()
			lb.reset(curStream, labels.EmptyLabels())
			key := string(lb.key(e.Grouping, ""))
			if curSeries = byKey[key]; curSeries == nil {
				var err error
				if curSeries, err = ev.newSeries(lb.grouped(e.Grouping, ""), key); err != nil {
					return err
				}
				byKey[key] = curSeries
				out = append(out, curSeries)
			}
		}
		ev.stats.EntriesScanned += int64(n)
		if ev.sameSteps(minT, maxT, off, rng) {
			return ev.addCountedN(curSeries, minT, int64(n), int64(n), off, rng)
		}
		ts, err := load()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := ev.addCounted(curSeries, t, 1, off, rng); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return out, nil
}

// stepSpan returns the indexes of the first and last step whose window
// (t-off-rng, t-off] contains ts; k0 > k1 when none does.
func (ev *evaluator) stepSpan(ts, off, rng int64) (k0, k1 int64) {
	n := int64(len(ev.steps))
	first := ev.steps[0]
	k0 = max(ceilDiv(ts+off-first, ev.step), 0)
	k1 = min(ceilDiv(ts+off+rng-first, ev.step)-1, n-1)
	return k0, k1
}

// sameSteps reports whether entries at a and b (a <= b) fall into the same
// step windows, and so does every entry between them.
func (ev *evaluator) sameSteps(a, b, off, rng int64) bool {
	a0, a1 := ev.stepSpan(a, off, rng)
	b0, b1 := ev.stepSpan(b, off, rng)
	return a0 == b0 && a1 == b1
}
