package querier

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

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

// maxCompleting bounds the concurrent trace lookups on the ingesters that
// complete a merged search's traces: as many as an ingester's fan-out
// would open, without one search flooding them.
const maxCompleting = 8

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
// blocks' iterator is returned. Over both, a trace can come from each, so
// both answers are read into memory, merged by trace ID (each span once;
// an ingester's trace gets its spans of the blocks too) and yielded most
// recent first: bounded by the traces the range and hints select.
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
	return t.merge(ctx, sp.ingStart, ing, blk)
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
	m := &recentFirst{its: its, heads: make([]*traceentry.Trace, len(its)), ends: make([]int64, len(its)), cur: -1}
	if _, err := t.q.partial(ctx, missing); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// merge reads ing and blk whole and returns their traces merged by ID,
// most recent first. It closes both.
func (t *Traces) merge(ctx context.Context, split int64, ing, blk traceentry.Iterator) (traceentry.Iterator, error) {
	byID := map[traceentry.TraceID]int{}
	onIngesters := map[traceentry.TraceID]bool{}
	var traces []*traceentry.Trace
	read := func(it traceentry.Iterator, fromIngesters bool) error {
		for it.Next() {
			tr := it.At()
			if fromIngesters {
				onIngesters[tr.TraceID] = true
			}
			if i, ok := byID[tr.TraceID]; ok {
				traces[i].Spans = mergeSpans(traces[i].Spans, tr.Spans)
				continue
			}
			byID[tr.TraceID] = len(traces)
			traces = append(traces, &traceentry.Trace{TraceID: tr.TraceID, Spans: slices.Clone(tr.Spans)})
		}
		return errors.Join(it.Err(), it.Close())
	}
	if err := read(blk, false); err != nil {
		_ = ing.Close()
		return nil, err
	}
	fromBlocks := len(traces)
	if err := read(ing, true); err != nil {
		return nil, err
	}
	// A trace the ingesters found whose older spans did not make the
	// blocks' answer (their part there did not match the hints, or lies
	// before the read's start) still has them in the blocks.
	for _, tr := range traces[fromBlocks:] {
		more, err := t.q.opts.Blocks.FindTraceByID(ctx, tr.TraceID, 0, 0)
		if err != nil {
			return nil, err
		}
		if more != nil {
			tr.Spans = mergeSpans(tr.Spans, more.Spans)
		}
	}
	// Conversely, a trace of the blocks' answer that the ingesters did
	// not yield (their part did not match the hints) may have newer spans
	// on an ingester: those ending near the split are completed from the
	// ingester of their partition, as a single store would assemble
	// parts within its trace window.
	if err := t.completeFromIngesters(ctx, traces[:fromBlocks], func(tr *traceentry.Trace) bool {
		if onIngesters[tr.TraceID] {
			return false
		}
		_, end := tr.TimeRange()
		return end >= split-traceWindow
	}); err != nil {
		return nil, err
	}
	ends := make(map[traceentry.TraceID]int64, len(traces))
	for _, tr := range traces {
		_, ends[tr.TraceID] = tr.TimeRange()
	}
	slices.SortFunc(traces, func(a, b *traceentry.Trace) int {
		if c := cmp.Compare(ends[b.TraceID], ends[a.TraceID]); c != 0 {
			return c
		}
		return bytes.Compare(a.TraceID[:], b.TraceID[:])
	})
	return &traceList{traces: traces, i: -1}, nil
}

// mergeSpans returns dst with the spans of src whose span ID dst lacks
// appended: one trace's spans read from two places, each once.
func mergeSpans(dst, src []traceentry.Span) []traceentry.Span {
	have := make(map[traceentry.SpanID]struct{}, len(dst))
	for i := range dst {
		have[dst[i].SpanID] = struct{}{}
	}
	for _, sp := range src {
		if _, dup := have[sp.SpanID]; !dup {
			have[sp.SpanID] = struct{}{}
			dst = append(dst, sp)
		}
	}
	return dst
}

// traceList iterates traces in memory.
type traceList struct {
	traces []*traceentry.Trace
	i      int
}

func (l *traceList) Next() bool {
	if l.i+1 >= len(l.traces) {
		l.i = len(l.traces)
		return false
	}
	l.i++
	return true
}
func (l *traceList) At() *traceentry.Trace { return l.traces[l.i] }
func (l *traceList) Err() error            { return nil }
func (l *traceList) Close() error          { return nil }

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
	switch {
	case tr == nil:
	case out == nil:
		out = tr
	default:
		out.Spans = mergeSpans(out.Spans, tr.Spans)
	}
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

// completeFromIngesters adds to each trace that want selects its spans on
// the ingester of its partition, maxCompleting lookups at a time.
func (t *Traces) completeFromIngesters(ctx context.Context, traces []*traceentry.Trace, want func(*traceentry.Trace) bool) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, maxCompleting)
	for _, tr := range traces {
		if !want(tr) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			more, err := t.findOnIngester(ctx, tr.TraceID, 0, 0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if more != nil {
				tr.Spans = mergeSpans(tr.Spans, more.Spans)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
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
