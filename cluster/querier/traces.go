package querier

import (
	"context"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// Traces returns the querier's trace store: the Tempo API's reads over
// the ingesters (traces are not in the blocks: the bucket holds metrics and
// logs). Every span of a trace is on the partition of its trace ID, so one
// ingester answers for a whole trace. Safe for concurrent use.
func (q *Querier) Traces() *Traces { return &Traces{q: q} }

// Traces is the fan-out trace store (see Querier.Traces).
type Traces struct{ q *Querier }

// Fetch implements traceentry.Source: every ingester's share of the
// partitions streams its traces, most recent first, and the answers are
// interleaved most recent first (by a trace's latest span end), so that a
// search that stops at its limit keeps the most recent matches of the
// whole cluster.
func (t *Traces) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	wire := readapi.TraceRequest{Start: req.Start, End: req.End}
	readapi.EncodeHints(&wire, req.Hints)
	its, missing, err := fanout(ctx, t.q, func(ctx context.Context, in *ingester, parts []int32, total int32) (traceentry.Iterator, error) {
		r := wire
		r.Partitions, r.TotalPartitions = parts, total
		return in.client.FetchTraces(ctx, r)
	})
	if err != nil {
		return nil, err
	}
	m := &recentFirst{its: its, heads: make([]*traceentry.Trace, len(its)), ends: make([]int64, len(its)), cur: -1}
	if _, err := t.q.partial(ctx, missing); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// FindTraceByID asks the ingester of the trace's partition; nil when it
// holds none of the trace (or, flagged as partial, when none answered).
func (t *Traces) FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error) {
	got, missing, err := fanoutTo(ctx, t.q, func(total int32) []int32 { return []int32{record.TracePartition(id, total)} },
		func(ctx context.Context, in *ingester, parts []int32, total int32) (*traceentry.Trace, error) {
			return in.client.FindTrace(ctx, readapi.TraceRequest{Start: start, End: end, TraceID: id.String(), Partitions: parts, TotalPartitions: total})
		})
	if err != nil {
		return nil, err
	}
	if _, err := t.q.partial(ctx, missing); err != nil {
		return nil, err
	}
	for _, tr := range got {
		if tr != nil {
			return tr, nil
		}
	}
	return nil, nil
}

// TagNames returns the union of the ingesters' span and resource
// attribute names.
func (t *Traces) TagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	type tags struct{ span, resource []string }
	got, missing, err := fanout(ctx, t.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) (tags, error) {
		s, r, err := in.client.TraceTags(ctx, readapi.TraceRequest{Start: start, End: end})
		return tags{s, r}, err
	})
	if err != nil {
		return nil, nil, err
	}
	if _, err := t.q.partial(ctx, missing); err != nil {
		return nil, nil, err
	}
	var ss, rs [][]string
	for _, g := range got {
		ss, rs = append(ss, g.span), append(rs, g.resource)
	}
	return union(ss), union(rs), nil
}

// Push implements the OTLP receiver's Pusher: a querier stores nothing.
func (t *Traces) Push(context.Context, []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	return tracestore.PushResult{}, ErrReadOnly
}

// recentFirst interleaves iterators that each yield traces most recent
// first: Next yields the head with the latest span end. A trace At returns
// is valid until the next Next, as the sources' are.
type recentFirst struct {
	its    []traceentry.Iterator
	heads  []*traceentry.Trace // nil: that source is done
	ends   []int64
	primed bool
	cur    int
	err    error
}

func (m *recentFirst) advance(i int) {
	if m.its[i].Next() {
		tr := m.its[i].At()
		m.heads[i] = tr
		m.ends[i] = 0
		for j := range tr.Spans {
			m.ends[i] = max(m.ends[i], tr.Spans[j].EndUnixNano)
		}
		return
	}
	m.heads[i] = nil
	if err := m.its[i].Err(); err != nil && m.err == nil {
		m.err = err
	}
}

func (m *recentFirst) Next() bool {
	if m.err != nil {
		return false
	}
	if !m.primed {
		m.primed = true
		for i := range m.its {
			m.advance(i)
		}
	} else if m.cur >= 0 {
		m.advance(m.cur)
	}
	if m.err != nil {
		return false
	}
	m.cur = -1
	for i, h := range m.heads {
		if h != nil && (m.cur < 0 || m.ends[i] > m.ends[m.cur]) {
			m.cur = i
		}
	}
	return m.cur >= 0
}

func (m *recentFirst) At() *traceentry.Trace { return m.heads[m.cur] }
func (m *recentFirst) Err() error            { return m.err }

func (m *recentFirst) Close() error {
	var first error
	for _, it := range m.its {
		if err := it.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
