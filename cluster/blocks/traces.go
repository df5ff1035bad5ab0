package blocks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// traceWindow is how far apart in time the spans of one trace are looked
// for when choosing the blocks a search reads: the trace store's default
// TraceWindow, which the blocks' stores use.
var traceWindow = tracestore.DefaultOptions().TraceWindow.Nanoseconds()

// traceBounds returns the ms range of the blocks a trace read of [start,
// end] (unix ns; end 0 unbounded) may need, widened by traceWindow.
func traceBounds(start, end int64) (int64, int64) {
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	if start > math.MinInt64+traceWindow {
		mint = (start - traceWindow) / 1e6
	}
	if end != 0 && end < math.MaxInt64-traceWindow {
		maxt = (end + traceWindow) / 1e6
	}
	return mint, maxt
}

// holdsTraces reports whether b may hold spans: a block whose trace-ID
// filter is empty is not downloaded for a trace read.
func holdsTraces(b *block) bool { return b.traces == nil || b.traces.count > 0 }

// Fetch implements traceentry.Source over the blocks overlapping the
// request's range: each block's traces that may match, the blocks'
// answers interleaved most recent first (by a trace's latest span end, as
// the querier interleaves its ingesters'), each trace once and whole: its
// spans in the other blocks of its partition (a trace whose spans reached
// two windows) are added, a span two blocks hold alike (same span ID)
// only once; of those other blocks, only the ones whose trace-ID filter
// may hold the trace are downloaded. The iterator holds the blocks until
// closed. Safe for concurrent use.
func (r *Reader) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	mint, maxt := traceBounds(req.Start, req.End)
	cands, release, err := r.acquire(ctx, mint, maxt, holdsTraces)
	if err != nil {
		return nil, err
	}
	its := make([]traceentry.Iterator, 0, len(cands))
	for _, b := range cands {
		it, err := b.sub.Traces().Fetch(ctx, req)
		if err != nil {
			errs := []error{err}
			for _, it := range its {
				errs = append(errs, it.Close())
			}
			release()
			return nil, errors.Join(errs...)
		}
		its = append(its, it)
	}
	return &blockTraces{ctx: ctx, r: r, cands: cands, in: traceentry.RecentFirst(its), releases: []func(){release},
		yielded: map[traceentry.TraceID]struct{}{}}, nil
}

// blockTraces is Reader.Fetch's iterator: the candidates' answers
// interleaved, each trace once and completed.
type blockTraces struct {
	ctx      context.Context
	r        *Reader
	cands    []*block // the blocks searched
	in       *traceentry.Interleaved
	releases []func() // of the blocks held: searched, then assembling; nil once closed
	yielded  map[traceentry.TraceID]struct{}

	out *traceentry.Trace
	err error
}

func (t *blockTraces) Next() bool {
	if t.err != nil || t.releases == nil {
		return false
	}
	for t.in.Next() {
		tr := t.in.At()
		if _, done := t.yielded[tr.TraceID]; done {
			continue // another block yielded it, completed
		}
		t.yielded[tr.TraceID] = struct{}{}
		whole := &traceentry.Trace{TraceID: tr.TraceID, Spans: slices.Clone(tr.Spans)}
		if err := t.complete(whole, t.cands[t.in.Source()]); err != nil {
			t.err = err
			return false
		}
		t.out = whole
		return true
	}
	t.err = t.in.Err()
	return false
}

// complete adds to tr the spans of its trace in the blocks of from's
// partition other than from that may hold it (their trace-ID filters),
// held until Close.
func (t *blockTraces) complete(tr *traceentry.Trace, from *block) error {
	bs, release, err := t.r.acquire(t.ctx, math.MinInt64, math.MaxInt64, func(b *block) bool {
		return b != from && b.meta.Partition == from.meta.Partition && b.traces.mayHold(tr.TraceID)
	})
	if err != nil {
		return fmt.Errorf("assemble trace %s: %w", tr.TraceID, err)
	}
	t.releases = append(t.releases, release)
	for _, b := range bs {
		more, err := b.sub.Traces().FindTraceByID(t.ctx, tr.TraceID, 0, 0)
		if err != nil {
			return err
		}
		if more != nil {
			tr.Spans = traceentry.MergeSpans(tr.Spans, more.Spans)
		}
	}
	return nil
}

func (t *blockTraces) At() *traceentry.Trace { return t.out }
func (t *blockTraces) Err() error            { return t.err }

func (t *blockTraces) Close() error {
	if t.releases == nil {
		return nil
	}
	err := t.in.Close()
	for _, release := range t.releases {
		release()
	}
	t.releases = nil
	return err
}

// FindTraceByID returns the spans of trace id in the blocks (overlapping
// [start, end] unix ns when start < end) whose trace-ID filter may hold
// it, merged into one trace, or nil when no block holds it. Safe for
// concurrent use.
func (r *Reader) FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error) {
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	if start < end {
		mint, maxt = traceBounds(start, end)
	}
	bs, release, err := r.acquire(ctx, mint, maxt, func(b *block) bool { return b.traces.mayHold(id) })
	if err != nil {
		return nil, err
	}
	defer release()
	var out *traceentry.Trace
	for _, b := range bs {
		tr, err := b.sub.Traces().FindTraceByID(ctx, id, start, end)
		if err != nil {
			return nil, err
		}
		out = traceentry.Merge(out, tr)
	}
	return out, nil
}

// TagNames returns the union of the span and resource attribute names of
// the blocks' traces with spans in [start, end] (unix ns; end 0
// unbounded). Safe for concurrent use.
func (r *Reader) TagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	mint, maxt := int64(math.MinInt64), int64(math.MaxInt64)
	if start > 0 {
		mint = start / 1e6
	}
	if end != 0 {
		maxt = end / 1e6
	}
	bs, release, err := r.acquire(ctx, mint, maxt, holdsTraces)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	for _, b := range bs {
		s, rs, err := b.sub.Traces().TagNames(ctx, start, end)
		if err != nil {
			return nil, nil, err
		}
		span, resource = append(span, s...), append(resource, rs...)
	}
	slices.Sort(span)
	slices.Sort(resource)
	return slices.Compact(span), slices.Compact(resource), nil
}

// TraceStreams returns the label sets of the blocks' trace streams
// (resources) matching ms with spans in [start, end] (unix ns), sorted,
// each once. Safe for concurrent use.
func (r *Reader) TraceStreams(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	mint, maxt := nsToMs(start, end)
	bs, release, err := r.acquire(ctx, mint, maxt, holdsTraces)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []labels.Labels
	for _, b := range bs {
		ss, err := b.sub.Traces().Streams(ctx, start, end, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	slices.SortFunc(out, labels.Compare)
	return slices.CompactFunc(out, labels.Equal), nil
}
