package querier

import (
	"context"
	"errors"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// Traces returns the querier's trace store: the Tempo API's reads over
// the cluster, the ingesters for spans newer than QueryIngestersWithin and
// the blocks for older ones (as Querier.Logs splits). Every span of a
// trace is on the partition of its trace ID, so one ingester answers for
// a whole trace; a trace whose spans lie on both sides of the split is
// merged, each span once. Safe for concurrent use.
func (q *Querier) Traces() *Traces { return &Traces{q: q} }

// Traces is the fan-out trace store (see Querier.Traces).
type Traces struct{ q *Querier }

// BlockTraces are the blocks' traces as the querier reads them (part of
// Blocks; cluster/blocks' Reader). Each trace comes whole from the blocks
// (its spans of every block, each span once); the querier merges it with
// the ingesters' copy. Times are unix ns, an end of 0 is unbounded. Safe
// for concurrent use.
type BlockTraces interface {
	traceentry.Source
	FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error)
	TagNames(ctx context.Context, start, end int64) (span, resource []string, err error)
	TraceStreams(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error)
}

// traceWindow is how far apart the parts of one trace are assembled: the
// trace store's default TraceWindow, which the ingesters use unless
// configured otherwise.
var traceWindow = tracestore.DefaultOptions().TraceWindow.Nanoseconds()

// traceSplit is a trace read of [start, end] (unix ns; end 0 unbounded)
// cut at the blocks/ingesters boundary: the ingesters read from ingStart
// to end, the blocks from start to blkEnd (0: unbounded).
type traceSplit struct {
	ing, blk         bool
	ingStart, blkEnd int64
}

func (t *Traces) split(start, end int64) traceSplit {
	splitMs, ok := t.q.split()
	if !ok {
		return traceSplit{ing: true, ingStart: start, blkEnd: end}
	}
	s := splitMs * 1e6
	sp := traceSplit{ingStart: max(start, s), blkEnd: end}
	sp.ing = end == 0 || end > s
	sp.blk = start < s
	if sp.blk && sp.ing {
		sp.blkEnd = s
	}
	return sp
}

// Fetch implements traceentry.Source. Over the ingesters alone, every
// ingester's share of the partitions streams its traces, most recent
// first, and the answers are interleaved most recent first (by a trace's
// latest span end), so that a search that stops at its limit keeps the
// most recent matches of the whole cluster. Over the blocks alone, the
// blocks' iterator is returned. Over both, a trace can come from each:
// they are merged, each trace once with its spans of both (see merged).
func (t *Traces) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	sp := t.split(req.Start, req.End)
	var ing traceentry.Iterator
	if sp.ing {
		r := req
		r.Start = sp.ingStart
		var err error
		if ing, err = t.fetchIngesters(ctx, r); err != nil {
			return nil, err
		}
		if !sp.blk {
			return ing, nil
		}
	}
	r := req
	r.End = sp.blkEnd
	blk, err := t.q.opts.Blocks.Fetch(ctx, r)
	if err != nil {
		if ing != nil {
			_ = ing.Close()
		}
		return nil, err
	}
	t.q.m.blockReads.Inc()
	if ing == nil {
		return blk, nil
	}
	return &merged{ctx: ctx, t: t, split: sp.ingStart, ing: ing, blk: blk, yielded: map[traceentry.TraceID]struct{}{}}, nil
}

func (t *Traces) fetchIngesters(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
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
	m := traceentry.RecentFirst(its)
	if _, err := t.q.partial(ctx, missing); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// merged yields the ingesters' traces (most recent first, as
// fetchIngesters interleaves them), each with its spans of the blocks
// added, then the blocks' traces not yielded yet, each trace once: the
// newer side first, so that a search that stops at its limit keeps the
// most recent matches, and nothing is held but the IDs yielded. A blocks'
// trace that ends within traceWindow of the split may have newer spans on
// an ingester that the ingesters did not yield (their part did not match
// the hints): it is completed from the ingester of its partition, as a
// single store assembles a trace's parts within its trace window.
type merged struct {
	ctx      context.Context
	t        *Traces
	split    int64 // unix ns
	ing, blk traceentry.Iterator
	yielded  map[traceentry.TraceID]struct{}
	cur      *traceentry.Trace
	err      error
}

func (m *merged) Next() bool {
	if m.err != nil {
		return false
	}
	for m.ing != nil {
		if !m.ing.Next() {
			err := errors.Join(m.ing.Err(), m.ing.Close())
			m.ing = nil
			if err != nil {
				m.err = err
				return false
			}
			break
		}
		tr := m.ing.At()
		if _, done := m.yielded[tr.TraceID]; done {
			continue
		}
		more, err := m.t.q.opts.Blocks.FindTraceByID(m.ctx, tr.TraceID, 0, 0)
		if err != nil {
			m.err = err
			return false
		}
		return m.yield(tr, more)
	}
	for m.blk.Next() {
		tr := m.blk.At()
		if _, done := m.yielded[tr.TraceID]; done {
			continue
		}
		var more *traceentry.Trace
		if _, end := tr.TimeRange(); end >= m.split-traceWindow {
			var err error
			if more, err = m.t.findOnIngester(m.ctx, tr.TraceID, 0, 0); err != nil {
				m.err = err
				return false
			}
		}
		return m.yield(tr, more)
	}
	m.err = m.blk.Err()
	return false
}

// yield makes tr with more's spans the current trace.
func (m *merged) yield(tr, more *traceentry.Trace) bool {
	m.yielded[tr.TraceID] = struct{}{}
	if more == nil {
		m.cur = tr
		return true
	}
	m.cur = &traceentry.Trace{TraceID: tr.TraceID, Spans: traceentry.MergeSpans(slices.Clone(tr.Spans), more.Spans)}
	return true
}

func (m *merged) At() *traceentry.Trace { return m.cur }
func (m *merged) Err() error            { return m.err }

func (m *merged) Close() error {
	var err error
	if m.ing != nil {
		err = m.ing.Close()
		m.ing = nil
	}
	if m.blk != nil {
		err = errors.Join(err, m.blk.Close())
		m.blk = nil
	}
	return err
}

// FindTraceByID merges what the ingester of the trace's partition and the
// blocks hold of the trace (each by the side of the split [start, end]
// reaches; both for an unbounded lookup), each span once; nil when
// neither holds any of it (or, flagged as partial, when no ingester
// answered and the blocks hold none).
func (t *Traces) FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error) {
	sp := traceSplit{ing: true}
	if start < end {
		sp = t.split(start, end)
	} else if _, ok := t.q.split(); ok {
		sp.blk = true
	}
	var out *traceentry.Trace
	if sp.ing {
		var err error
		if out, err = t.findOnIngester(ctx, id, start, end); err != nil {
			return nil, err
		}
	}
	if !sp.blk {
		return out, nil
	}
	bs, be := start, sp.blkEnd
	if start >= end {
		bs, be = 0, 0
	}
	tr, err := t.q.opts.Blocks.FindTraceByID(ctx, id, bs, be)
	if err != nil {
		return nil, err
	}
	t.q.m.blockReads.Inc()
	out = traceentry.Merge(out, tr)
	return out, nil
}

// findOnIngester asks the ingester of the trace's partition.
func (t *Traces) findOnIngester(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error) {
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

// TagNames returns the union of the ingesters' and the blocks' span and
// resource attribute names, each side over its part of the range.
func (t *Traces) TagNames(ctx context.Context, start, end int64) (span, resource []string, err error) {
	sp := t.split(start, end)
	var ss, rs [][]string
	if sp.ing {
		type tags struct{ span, resource []string }
		got, missing, err := fanout(ctx, t.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) (tags, error) {
			s, r, err := in.client.TraceTags(ctx, readapi.TraceRequest{Start: sp.ingStart, End: end})
			return tags{s, r}, err
		})
		if err != nil {
			return nil, nil, err
		}
		if _, err := t.q.partial(ctx, missing); err != nil {
			return nil, nil, err
		}
		for _, g := range got {
			ss, rs = append(ss, g.span), append(rs, g.resource)
		}
	}
	if sp.blk {
		s, r, err := t.q.opts.Blocks.TagNames(ctx, start, sp.blkEnd)
		if err != nil {
			return nil, nil, err
		}
		t.q.m.blockReads.Inc()
		ss, rs = append(ss, s), append(rs, r)
	}
	return union(ss), union(rs), nil
}

// Push implements the OTLP receiver's Pusher: a querier stores nothing.
func (t *Traces) Push(context.Context, []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	return tracestore.PushResult{}, ErrReadOnly
}
