package readapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/traceentry"
)

// TraceSource is what the server reads for traces: *tracestore.Store.
type TraceSource interface {
	Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error)
	FindTraceByID(ctx context.Context, id traceentry.TraceID, start, end int64) (*traceentry.Trace, error)
	TagNames(ctx context.Context, start, end int64) (span, resource []string, err error)
	Streams(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error)
}

// TraceRequest is the body of every traces request.
type TraceRequest struct {
	Start int64 `json:"start"` // unix ns
	End   int64 `json:"end"`   // unix ns; fetch: 0 is no bound
	// Conditions and AllConditions are the fetch's hints
	// (traceentry.Hints): necessary conditions for a trace to match.
	Conditions    []Condition `json:"conditions,omitempty"`
	AllConditions bool        `json:"all_conditions,omitempty"`
	// TraceID (lowercase hex) is the trace a find asks for.
	TraceID string `json:"trace_id,omitempty"`
	// Partitions restricts the answer to traces whose ID is of these
	// partitions (of TotalPartitions); empty: every trace held.
	Partitions      []int32 `json:"partitions,omitempty"`
	TotalPartitions int32   `json:"total_partitions,omitempty"`
}

// Condition is a traceentry.Condition on the wire. Type names the
// operand's type: "string", "int", "float" or "bool".
type Condition struct {
	Scope     traceentry.Scope     `json:"scope"`
	Name      string               `json:"name,omitempty"`
	Intrinsic traceentry.Intrinsic `json:"intrinsic,omitempty"`
	Op        traceentry.Op        `json:"op"`
	Type      string               `json:"type"`
	Str       string               `json:"str,omitempty"`
	Int       int64                `json:"int,omitempty"`
	Float     float64              `json:"float,omitempty"`
	Bool      bool                 `json:"bool,omitempty"`
}

// TagsResponse answers tags.
type TagsResponse struct {
	Span     []string `json:"span"`
	Resource []string `json:"resource"`
}

// EncodeHints puts h on req. Hints are only necessary conditions, so one
// whose operand has no wire form (bytes, arrays, maps) is left out when all
// must hold, and then it drops nothing; when any one may hold, leaving one
// out would, so none is sent.
func EncodeHints(req *TraceRequest, h traceentry.Hints) {
	req.AllConditions = h.AllConditions
	req.Conditions = nil
	for _, c := range h.Conditions {
		w := Condition{Scope: c.Field.Scope, Name: c.Field.Name, Intrinsic: c.Field.Intrinsic, Op: c.Op}
		switch v := c.Operand; v.Type() {
		case traceentry.ValueString:
			w.Type, w.Str = "string", v.Str()
		case traceentry.ValueInt:
			w.Type, w.Int = "int", v.Int()
		case traceentry.ValueFloat:
			w.Type, w.Float = "float", v.Float()
		case traceentry.ValueBool:
			w.Type, w.Bool = "bool", v.Bool()
		default:
			if !h.AllConditions {
				req.Conditions = nil
				return
			}
			continue
		}
		req.Conditions = append(req.Conditions, w)
	}
}

// DecodeHints builds the hints of req.
func DecodeHints(req TraceRequest) (traceentry.Hints, error) {
	h := traceentry.Hints{AllConditions: req.AllConditions}
	for _, w := range req.Conditions {
		if w.Op < traceentry.OpEqual || w.Op > traceentry.OpNotRegex {
			return h, fmt.Errorf("%w: condition operator %d", ErrBadRequest, w.Op)
		}
		if w.Scope > traceentry.ScopeInstrumentation {
			return h, fmt.Errorf("%w: condition scope %d", ErrBadRequest, w.Scope)
		}
		c := traceentry.Condition{Field: traceentry.Field{Scope: w.Scope, Name: w.Name, Intrinsic: w.Intrinsic}, Op: w.Op}
		switch w.Type {
		case "string":
			c.Operand = traceentry.StringValue(w.Str)
		case "int":
			c.Operand = traceentry.IntValue(w.Int)
		case "float":
			c.Operand = traceentry.FloatValue(w.Float)
		case "bool":
			c.Operand = traceentry.BoolValue(w.Bool)
		default:
			return h, fmt.Errorf("%w: condition operand type %q", ErrBadRequest, w.Type)
		}
		h.Conditions = append(h.Conditions, c)
	}
	return h, nil
}

// traceQuery is a decoded TraceRequest.
type traceQuery struct {
	TraceRequest
	hints traceentry.Hints
	id    traceentry.TraceID
	want  map[int32]bool // nil: every partition
}

func (q *traceQuery) keep(id traceentry.TraceID) bool {
	return q.want == nil || q.want[record.TracePartition(id, q.TotalPartitions)]
}

func decodeTraceRequest(r *http.Request) (*traceQuery, error) {
	var q traceQuery
	dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q.TraceRequest); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	h, err := DecodeHints(q.TraceRequest)
	if err != nil {
		return nil, err
	}
	q.hints = h
	if q.TraceID != "" {
		if q.id, err = traceentry.ParseTraceID(q.TraceID); err != nil {
			return nil, fmt.Errorf("%w: trace id: %w", ErrBadRequest, err)
		}
	}
	if q.want, err = partitionSet(q.Partitions, q.TotalPartitions); err != nil {
		return nil, err
	}
	return &q, nil
}

// traceServer serves the trace routes.
type traceServer struct {
	*server
	traces TraceSource
}

func (s *traceServer) routes() map[string]http.Handler {
	return map[string]http.Handler{
		"POST " + PathTraceFetch: http.HandlerFunc(s.fetch),
		"POST " + PathTraceFind:  http.HandlerFunc(s.find),
		"POST " + PathTraceStreams: s.meta(func(ctx context.Context, q *query) (any, error) {
			ss, err := s.traces.Streams(ctx, q.Start, q.End, q.ms...)
			out := SeriesResponse{Series: [][]string{}}
			for _, ls := range ss {
				out.Series = append(out.Series, labelsToStrings(ls))
			}
			return out, err
		}),
		"POST " + PathTraceTags: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q, err := decodeTraceRequest(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sp, res, err := s.traces.TagNames(r.Context(), q.Start, q.End)
			if err != nil {
				s.log.Warn("internal_read_failed", "path", r.URL.Path, "err", err)
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			writeJSON(w, TagsResponse{Span: nonNil(sp), Resource: nonNil(res)})
		}),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// fetch streams the traces of the request, one data frame (OTLP protobuf)
// each, in the store's order (most recent first), until the client stops
// reading.
func (s *traceServer) fetch(w http.ResponseWriter, r *http.Request) {
	q, err := decodeTraceRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	it, err := s.traces.Fetch(r.Context(), traceentry.FetchRequest{Start: q.Start, End: q.End, Hints: q.hints})
	if err != nil {
		s.log.Warn("internal_trace_fetch_failed", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer it.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	var frame []byte
	for it.Next() {
		tr := it.At()
		if !q.keep(tr.TraceID) {
			continue
		}
		if frame, err = otlptraces.MarshalSpans(frame[:0], tr.Spans); err != nil {
			break
		}
		if err := writeFrame(bw, frameData, frame); err != nil {
			return // the client went away (or has enough)
		}
	}
	if err == nil {
		err = it.Err()
	}
	s.end(bw, "internal_trace_fetch_failed", err)
}

// find answers one trace as a fetch answer of at most one frame.
func (s *traceServer) find(w http.ResponseWriter, r *http.Request) {
	q, err := decodeTraceRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if q.id.IsZero() {
		http.Error(w, ErrBadRequest.Error()+": no trace_id", http.StatusBadRequest)
		return
	}
	tr, err := s.traces.FindTraceByID(r.Context(), q.id, q.Start, q.End)
	if err != nil {
		s.log.Warn("internal_trace_find_failed", "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 64<<10)
	if tr != nil && q.keep(tr.TraceID) {
		frame, err := otlptraces.MarshalSpans(nil, tr.Spans)
		if err == nil {
			if err := writeFrame(bw, frameData, frame); err != nil {
				return
			}
		}
		s.end(bw, "internal_trace_find_failed", err)
		return
	}
	s.end(bw, "", nil)
}

// end writes the error frame (logged as msg) or the end frame, and
// flushes: the last of every framed answer.
func (s *server) end(bw *bufio.Writer, msg string, err error) {
	if err != nil {
		s.log.Warn(msg, "err", err)
		_ = writeFrame(bw, frameError, []byte(err.Error()))
	} else {
		_ = writeFrame(bw, frameEnd, nil)
	}
	_ = bw.Flush()
}

// FetchTraces streams the traces req selects (traceentry.Iterator, in the
// server's order); it fails with ErrTruncated when the answer ends early.
// It must be closed.
func (c *Client) FetchTraces(ctx context.Context, req TraceRequest) (traceentry.Iterator, error) {
	return c.traceFrames(ctx, PathTraceFetch, req)
}

func (c *Client) traceFrames(ctx context.Context, path string, req TraceRequest) (*traceFrames, error) {
	resp, err := c.do(ctx, http.MethodPost, path, req)
	if err != nil {
		return nil, err
	}
	return &traceFrames{body: resp.Body, r: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
}

// FindTrace returns the trace req.TraceID names, nil when the node holds
// none of its spans (in req's partitions).
func (c *Client) FindTrace(ctx context.Context, req TraceRequest) (*traceentry.Trace, error) {
	it, err := c.traceFrames(ctx, PathTraceFind, req)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var tr *traceentry.Trace
	for it.Next() {
		if tr != nil {
			return nil, fmt.Errorf("decode %s answer: more than one trace", PathTraceFind)
		}
		cp := *it.At()
		tr = &cp
	}
	return tr, it.Err()
}

// TraceTags returns the span and resource attribute names of the traces
// in [req.Start, req.End].
func (c *Client) TraceTags(ctx context.Context, req TraceRequest) (span, resource []string, err error) {
	var out TagsResponse
	err = c.getJSON(ctx, http.MethodPost, PathTraceTags, req, &out)
	return out.Span, out.Resource, err
}

// TraceStreams returns the label sets of the trace streams (resources)
// req's matchers select with spans in [req.Start, req.End] (unix ns).
// Every ingester holds the streams of the resources that sent spans to its
// partitions, so the same stream comes from several: req's partitions are
// ignored.
func (c *Client) TraceStreams(ctx context.Context, req Request) ([]labels.Labels, error) {
	var out SeriesResponse
	if err := c.getJSON(ctx, http.MethodPost, PathTraceStreams, req, &out); err != nil {
		return nil, err
	}
	ss := make([]labels.Labels, 0, len(out.Series))
	for _, s := range out.Series {
		ls, err := stringsToLabels(s)
		if err != nil {
			return nil, fmt.Errorf("decode trace streams answer: %w", err)
		}
		ss = append(ss, ls)
	}
	return ss, nil
}

// traceFrames decodes a traces answer frame by frame. Each trace is
// decoded into fresh spans, so a trace At returns may be kept.
type traceFrames struct {
	body io.ReadCloser
	r    *bufio.Reader
	buf  []byte
	cur  traceentry.Trace
	err  error
	done bool
}

func (it *traceFrames) Next() bool {
	if it.err != nil || it.done {
		return false
	}
	typ, b, err := readFrame(it.r, it.buf)
	it.buf = b
	if err != nil {
		it.err = err
		return false
	}
	switch typ {
	case frameData:
		spans, err := otlptraces.UnmarshalSpans(b)
		if err != nil {
			it.err = fmt.Errorf("decode traces answer: %w", err)
			return false
		}
		if len(spans) == 0 {
			it.err = fmt.Errorf("decode traces answer: a trace without spans")
			return false
		}
		it.cur = traceentry.Trace{TraceID: spans[0].TraceID, Spans: spans}
		return true
	case frameError:
		it.err = fmt.Errorf("ingester: %s", b)
	case frameEnd:
		it.done = true
	default:
		it.err = fmt.Errorf("decode traces answer: unknown frame type %q", typ)
	}
	return false
}

func (it *traceFrames) At() *traceentry.Trace { return &it.cur }
func (it *traceFrames) Err() error            { return it.err }
func (it *traceFrames) Close() error          { return it.body.Close() }
