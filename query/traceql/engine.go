package traceql

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weftdb/weft/storage/traceentry"
)

// Source is what Search reads traces from; the trace store implements it.
// It is defined in storage/traceentry, below both, so that the store
// implements it without importing query.
type Source = traceentry.Source

const (
	// DefaultLimit is the number of traces a search returns when the request
	// does not say (Tempo's default).
	DefaultLimit = 20
	// DefaultSpansPerSpanSet is the number of spans shown per spanset when
	// the request does not say (Tempo's spss default).
	DefaultSpansPerSpanSet = 3
	// RootSpanNotYetReceived is the root service name Tempo reports for a
	// trace whose root span has not arrived.
	RootSpanNotYetReceived = "<root span not yet received>"
)

// ctxCheckEvery is how many traces Search reads between context checks:
// often enough to stop within milliseconds, rarely enough to cost nothing.
const ctxCheckEvery = 64

// Options configure an Engine.
type Options struct {
	// Parse bounds the queries the engine accepts.
	Parse ParseOptions
}

// DefaultOptions returns the defaults: DefaultParseOptions.
func DefaultOptions() Options { return Options{Parse: DefaultParseOptions()} }

// Engine parses and runs TraceQL searches. It holds no state besides its
// options and is safe for concurrent use.
type Engine struct {
	opts Options
}

// NewEngine returns an Engine with opts.
func NewEngine(opts Options) *Engine { return &Engine{opts: opts} }

// Parse parses q with the engine's limits.
func (e *Engine) Parse(q string) (*Query, error) { return ParseWithOptions(q, e.opts.Parse) }

// SearchRequest is one TraceQL search.
type SearchRequest struct {
	Query string
	// Start and End bound the traces searched (unix ns): a trace is searched
	// when it overlaps [Start, End). End 0 means no upper bound.
	Start, End int64
	// Limit is the number of traces returned, 0 for DefaultLimit.
	Limit int
	// SpansPerSpanSet is the number of spans shown per spanset, 0 for
	// DefaultSpansPerSpanSet.
	SpansPerSpanSet int
}

// SearchResponse mirrors tempopb.SearchResponse.
type SearchResponse struct {
	Traces  []TraceSearchMetadata
	Metrics SearchMetrics
}

// SearchMetrics mirrors the fields of tempopb.SearchMetrics the engine
// knows; the store and the API layer add the others.
type SearchMetrics struct {
	InspectedTraces uint32
	InspectedSpans  uint64
}

// TraceSearchMetadata mirrors tempopb.TraceSearchMetadata: one matching
// trace.
type TraceSearchMetadata struct {
	TraceID           string // lowercase hex with leading zeros trimmed, as Tempo writes it
	RootServiceName   string // RootSpanNotYetReceived without a root span
	RootTraceName     string // "" without a root span
	StartTimeUnixNano uint64 // earliest span start
	DurationMs        uint32 // latest end - earliest start, in whole milliseconds
	SpanSets          []SpanSet
	ServiceStats      map[string]ServiceStats // per resource service.name, over the whole trace
}

// SpanSet mirrors tempopb.SpanSet: the first SpansPerSpanSet spans of a
// matched spanset (by start time), how many spans it has, and its by() and
// aggregate values.
type SpanSet struct {
	Spans      []Span
	Matched    int
	Attributes []Attribute
}

// Span mirrors tempopb.Span. Attributes are the span's values of the fields
// the query reads, keyed as Tempo keys them: attributes by name without
// scope ("service.name", "http.method"), intrinsics by name ("status",
// "kind", "statusMessage", "span:parentID", ...); the span name, duration,
// IDs, trace-level intrinsics and event and link fields are left out, and
// so are fields the span lacks.
type Span struct {
	SpanID            string // 16 lowercase hex digits
	Name              string
	StartTimeUnixNano uint64
	DurationNanos     uint64
	Attributes        []Attribute
}

// ServiceStats mirrors tempopb.ServiceStats.
type ServiceStats struct {
	SpanCount  uint32
	ErrorCount uint32
}

// Search runs a TraceQL search over src. It fetches with the query's
// pushdown hints, evaluates the whole query on every trace the source
// returns, and stops reading once it has Limit matches, unless the query
// says with(most_recent=true), in which case it reads every trace and keeps
// the Limit most recent. Results are ordered most recent first. They own
// their memory (nothing points into the source's traces).
//
// Errors: a bad query or request matches ErrParse or ErrBadRequest; a
// source error is returned wrapped; a cancelled context returns its error.
func (e *Engine) Search(ctx context.Context, src Source, req SearchRequest) (*SearchResponse, error) {
	limit, spss := req.Limit, req.SpansPerSpanSet
	switch {
	case limit < 0:
		return nil, fmt.Errorf("%w: limit %d must not be negative", ErrBadRequest, limit)
	case spss < 0:
		return nil, fmt.Errorf("%w: spss %d must not be negative", ErrBadRequest, spss)
	case req.End != 0 && req.End <= req.Start:
		return nil, fmt.Errorf("%w: end must be after start", ErrBadRequest)
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	if spss == 0 {
		spss = DefaultSpansPerSpanSet
	}
	q, err := e.Parse(req.Query)
	if err != nil {
		return nil, err
	}
	resp := &SearchResponse{}
	if q.noop {
		return resp, nil
	}
	freq := traceentry.FetchRequest{Start: req.Start, End: req.End, Hints: q.Hints()}
	it, err := src.Fetch(ctx, freq)
	if err != nil {
		return nil, fmt.Errorf("fetch traces: %w", err)
	}
	ev := q.NewEvaluator()
	n := 0
	for it.Next() {
		if n++; n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, errors.Join(err, it.Close())
			}
		}
		tr := it.At()
		resp.Metrics.InspectedTraces++
		resp.Metrics.InspectedSpans += uint64(len(tr.Spans))
		start, end := tr.TimeRange()
		if len(tr.Spans) == 0 || !freq.Overlaps(start, end) {
			continue
		}
		matches := ev.Eval(tr)
		if len(matches) == 0 {
			continue
		}
		resp.Traces = append(resp.Traces, q.traceMetadata(tr, matches, spss, start, end))
		if !q.mostRecent && len(resp.Traces) >= limit {
			break
		}
		if q.mostRecent && len(resp.Traces) >= 2*limit {
			sortNewestFirst(resp.Traces)
			resp.Traces = resp.Traces[:limit]
		}
	}
	if err := it.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("read traces: %w", err), it.Close())
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("close trace iterator: %w", err)
	}
	sortNewestFirst(resp.Traces)
	if len(resp.Traces) > limit {
		resp.Traces = resp.Traces[:limit]
	}
	return resp, nil
}

func sortNewestFirst(ts []TraceSearchMetadata) {
	slices.SortFunc(ts, func(a, b TraceSearchMetadata) int {
		if c := cmp.Compare(b.StartTimeUnixNano, a.StartTimeUnixNano); c != 0 {
			return c
		}
		return cmp.Compare(a.TraceID, b.TraceID)
	})
}

// TraceIDString writes a trace ID as Tempo does in search results:
// lowercase hex without leading zeros ("0" for an all-zero ID).
func TraceIDString(id traceentry.TraceID) string {
	s := strings.TrimLeft(hex.EncodeToString(id[:]), "0")
	if s == "" {
		return "0"
	}
	return s
}

// traceMetadata builds one result; it copies every string so that nothing
// points into the source's memory.
func (q *Query) traceMetadata(tr *traceentry.Trace, matches []Match, spss int, start, end int64) TraceSearchMetadata {
	md := TraceSearchMetadata{
		TraceID:           TraceIDString(tr.TraceID),
		RootServiceName:   RootSpanNotYetReceived,
		StartTimeUnixNano: uint64(start),
		DurationMs:        uint32((end - start) / 1e6),
		ServiceStats:      map[string]ServiceStats{},
	}
	if root := tr.Root(); root != nil {
		md.RootServiceName = strings.Clone(root.Resource.ServiceName())
		md.RootTraceName = strings.Clone(root.Name)
	}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		name := s.Resource.ServiceName()
		st, ok := md.ServiceStats[name]
		if !ok {
			name = strings.Clone(name)
		}
		st.SpanCount++
		if s.StatusCode == traceentry.StatusError {
			st.ErrorCount++
		}
		md.ServiceStats[name] = st
	}
	for _, m := range matches {
		ss := SpanSet{Matched: len(m.Spans), Attributes: cloneAttrs(m.Attributes)}
		spans := slices.Clone(m.Spans)
		slices.SortStableFunc(spans, func(a, b *traceentry.Span) int { return cmp.Compare(a.StartUnixNano, b.StartUnixNano) })
		for _, s := range spans[:min(spss, len(spans))] {
			ss.Spans = append(ss.Spans, Span{
				SpanID:            s.SpanID.String(),
				Name:              strings.Clone(s.Name),
				StartTimeUnixNano: uint64(s.StartUnixNano),
				DurationNanos:     uint64(max(s.DurationNanos(), 0)),
				Attributes:        q.spanAttributes(tr, s),
			})
		}
		md.SpanSets = append(md.SpanSets, ss)
	}
	return md
}

// spanAttributes returns the span's values of the fields the query reads.
func (q *Query) spanAttributes(tr *traceentry.Trace, s *traceentry.Span) []Attribute {
	var out []Attribute
	c := &evalCtx{tr: tr, span: s, ev: cursorFirst, ln: cursorFirst, info: &traceInfo{}}
	for _, f := range q.outFields {
		var v traceentry.Value
		if f.scope == traceentry.ScopeIntrinsic {
			if f.intr == traceentry.IntrinsicChildCount {
				continue // needs the tree; Tempo does not show it either
			}
			sv := (&intrinsic{i: f.intr}).eval(c)
			if sv.t == vNil {
				continue
			}
			v = sv.toValue()
		} else {
			var ok bool
			if v, ok = lookupAttr(s, f); !ok {
				continue
			}
		}
		out = append(out, Attribute{Key: strings.Clone(f.key()), Value: cloneValue(v)})
	}
	return out
}

func lookupAttr(s *traceentry.Span, f outField) (traceentry.Value, bool) {
	switch f.scope {
	case traceentry.ScopeSpan:
		return s.Attributes.Get(f.name)
	case traceentry.ScopeResource:
		if s.Resource != nil {
			return s.Resource.Attributes.Get(f.name)
		}
	case traceentry.ScopeUnscoped:
		if v, ok := s.Attributes.Get(f.name); ok {
			return v, ok
		}
		if s.Resource != nil {
			return s.Resource.Attributes.Get(f.name)
		}
	case traceentry.ScopeInstrumentation:
		if s.Scope != nil {
			return s.Scope.Attributes.Get(f.name)
		}
	}
	return traceentry.Value{}, false
}

func cloneAttrs(as []Attribute) []Attribute {
	if len(as) == 0 {
		return nil
	}
	out := make([]Attribute, len(as))
	for i, a := range as {
		out[i] = Attribute{Key: strings.Clone(a.Key), Value: cloneValue(a.Value)}
	}
	return out
}

// cloneValue deep-copies a value so that it outlives the source's buffers.
func cloneValue(v traceentry.Value) traceentry.Value {
	switch v.Type() {
	case traceentry.ValueString:
		return traceentry.StringValue(strings.Clone(v.Str()))
	case traceentry.ValueBytes:
		return traceentry.BytesValue(v.Bytes())
	case traceentry.ValueArray:
		arr := make([]traceentry.Value, len(v.Array()))
		for i, e := range v.Array() {
			arr[i] = cloneValue(e)
		}
		return traceentry.ArrayValue(arr...)
	case traceentry.ValueMap:
		kvs := make([]traceentry.KeyValue, len(v.Map()))
		for i, kv := range v.Map() {
			kvs[i] = traceentry.KeyValue{Key: strings.Clone(kv.Key), Value: cloneValue(kv.Value)}
		}
		return traceentry.MapValue(kvs...)
	}
	return v
}
