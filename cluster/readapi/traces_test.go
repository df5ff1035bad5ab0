package readapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// serveTraces starts the API over a fresh trace store holding n traces of
// two spans each (a root with a "step" attribute and a child).
func serveTraces(t *testing.T, n int) *Client {
	t.Helper()
	sub := openSubstrate(t)
	base := time.Now().Add(-10 * time.Minute).UnixNano()
	res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("trainer")}}}
	scope := &traceentry.InstrumentationScope{Name: "test"}
	rs := tracestore.ResourceSpans{Labels: labels.FromStrings("service_name", "trainer")}
	for i := range n {
		id, start := testTraceID(i), base+int64(i)*int64(time.Second)
		rs.Spans = append(rs.Spans,
			traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{7: 1}, Name: "step", StartUnixNano: start, EndUnixNano: start + 1e8,
				Attributes: traceentry.Attributes{{Key: "step", Value: traceentry.IntValue(int64(i))}}, Scope: scope, Resource: res},
			traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{7: 2}, ParentSpanID: traceentry.SpanID{7: 1}, Name: "load",
				StartUnixNano: start + 1e6, EndUnixNano: start + 5e7, Scope: scope, Resource: res})
	}
	if _, err := sub.Traces().Push(context.Background(), []tracestore.ResourceSpans{rs}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	status := func() Status { return Status{Partitions: []int32{0, 1, 2, 3}, TotalPartitions: total, Ready: true} }
	for p, h := range Handlers(sub.Logs(), sub.Traces(), status, nil) {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return NewClient(srv.URL, srv.Client())
}

func testTraceID(i int) traceentry.TraceID { return traceentry.TraceID{0: 0xee, 15: byte(i)} }

func fetchIDs(t *testing.T, c *Client, req TraceRequest) []traceentry.TraceID {
	t.Helper()
	it, err := c.FetchTraces(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var ids []traceentry.TraceID
	for it.Next() {
		tr := it.At()
		if len(tr.Spans) != 2 {
			t.Fatalf("trace %s came with %d spans, want both", tr.TraceID, len(tr.Spans))
		}
		ids = append(ids, tr.TraceID)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestTracesByPartition: a fetch restricted to partitions yields exactly
// the whole traces whose ID hashes there; find answers a trace only for
// its own partition; tags name the span attributes.
func TestTracesByPartition(t *testing.T) {
	const n = 24
	c := serveTraces(t, n)
	all := fetchIDs(t, c, TraceRequest{})
	if len(all) != n {
		t.Fatalf("fetch of every partition: %d traces, want %d", len(all), n)
	}
	var union []traceentry.TraceID
	for _, parts := range [][]int32{{0, 1}, {2}, {3}} {
		for _, id := range fetchIDs(t, c, TraceRequest{Partitions: parts, TotalPartitions: total}) {
			if p := record.TracePartition(id, total); !slices.Contains(parts, p) {
				t.Errorf("trace %s of partition %d in the answer for %v", id, p, parts)
			}
			union = append(union, id)
		}
	}
	if len(union) != n {
		t.Fatalf("the partitions' answers hold %d traces together, want %d", len(union), n)
	}
	id := testTraceID(5)
	own := record.TracePartition(id, total)
	tr, err := c.FindTrace(context.Background(), TraceRequest{TraceID: id.String(), Partitions: []int32{own}, TotalPartitions: total})
	if err != nil || tr == nil || tr.TraceID != id || len(tr.Spans) != 2 {
		t.Fatalf("find in its partition = %+v, %v", tr, err)
	}
	tr, err = c.FindTrace(context.Background(), TraceRequest{TraceID: id.String(), Partitions: []int32{(own + 1) % total}, TotalPartitions: total})
	if err != nil || tr != nil {
		t.Fatalf("find in another partition = %+v, %v; want nothing", tr, err)
	}
	if tr, err := c.FindTrace(context.Background(), TraceRequest{TraceID: testTraceID(200).String()}); err != nil || tr != nil {
		t.Fatalf("find of an unknown trace = %+v, %v", tr, err)
	}
	span, res, err := c.TraceTags(context.Background(), TraceRequest{Start: time.Now().Add(-time.Hour).UnixNano(), End: time.Now().UnixNano()})
	if err != nil || !slices.Contains(span, "step") || !slices.Contains(res, "service.name") {
		t.Fatalf("tags = %v %v, %v", span, res, err)
	}
	for _, bad := range []TraceRequest{
		{TraceID: "not-hex"},
		{Conditions: []Condition{{Scope: traceentry.ScopeSpan, Name: "step", Op: traceentry.OpEqual, Type: "bytes"}}},
		{Conditions: []Condition{{Scope: traceentry.ScopeSpan, Name: "step", Op: 99, Type: "int"}}},
		{Partitions: []int32{1}},
	} {
		if _, err := c.FetchTraces(context.Background(), bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("fetch %+v = %v, want ErrBadRequest", bad, err)
		}
	}
	if _, err := c.FindTrace(context.Background(), TraceRequest{}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("find without an ID = %v, want ErrBadRequest", err)
	}
}

// TestHintsWire: hints cross the wire unchanged; one without a wire form
// is dropped when all must hold and empties the hints when any may.
func TestHintsWire(t *testing.T) {
	h := traceentry.Hints{AllConditions: true, Conditions: []traceentry.Condition{
		{Field: traceentry.Field{Scope: traceentry.ScopeResource, Name: "service.name"}, Op: traceentry.OpEqual, Operand: traceentry.StringValue("trainer")},
		{Field: traceentry.Field{Scope: traceentry.ScopeIntrinsic, Intrinsic: 3}, Op: traceentry.OpGreater, Operand: traceentry.IntValue(5e8)},
		{Field: traceentry.Field{Scope: traceentry.ScopeSpan, Name: "loss"}, Op: traceentry.OpLess, Operand: traceentry.FloatValue(0.5)},
		{Field: traceentry.Field{Scope: traceentry.ScopeSpan, Name: "ok"}, Op: traceentry.OpNotEqual, Operand: traceentry.BoolValue(false)},
	}}
	var req TraceRequest
	EncodeHints(&req, h)
	got, err := DecodeHints(req)
	if err != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("hints came back as %+v, %v; want %+v", got, err, h)
	}
	withArray := h
	withArray.Conditions = append(slices.Clone(h.Conditions), traceentry.Condition{Field: traceentry.Field{Scope: traceentry.ScopeSpan, Name: "a"}, Op: traceentry.OpEqual, Operand: traceentry.ArrayValue(traceentry.IntValue(1))})
	EncodeHints(&req, withArray)
	if got, _ := DecodeHints(req); !reflect.DeepEqual(got, h) {
		t.Fatalf("all-conditions hints with an array operand came back as %+v, want the others", got)
	}
	withArray.AllConditions = false
	EncodeHints(&req, withArray)
	if got, _ := DecodeHints(req); len(got.Conditions) != 0 {
		t.Fatalf("any-condition hints with an array operand came back as %+v, want none", got)
	}
}

// FuzzTraceFrames: the client's trace frame decoder never panics on a body.
func FuzzTraceFrames(f *testing.F) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	spans := []traceentry.Span{{TraceID: testTraceID(1), SpanID: traceentry.SpanID{7: 1}, Name: "x", StartUnixNano: 1, EndUnixNano: 2}}
	frame, err := otlptraces.MarshalSpans(nil, spans)
	if err != nil {
		f.Fatal(err)
	}
	_ = writeFrame(w, frameData, frame)
	_ = writeFrame(w, frameEnd, nil)
	_ = w.Flush()
	f.Add(b.Bytes())
	f.Add([]byte{frameData, 0})
	f.Add([]byte{frameError, 2, 'n', 'o'})
	f.Fuzz(func(t *testing.T, body []byte) {
		it := &traceFrames{body: io.NopCloser(bytes.NewReader(body)), r: bufio.NewReader(bytes.NewReader(body))}
		for it.Next() {
			if tr := it.At(); len(tr.Spans) == 0 || tr.TraceID.IsZero() {
				t.Fatalf("yielded %+v", tr)
			}
		}
		_ = it.Err()
	})
}
