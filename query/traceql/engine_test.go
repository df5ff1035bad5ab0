package traceql

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/weftdb/weft/storage/traceentry"
)

func mustParse(tb testing.TB, q string) *Query {
	tb.Helper()
	p, err := Parse(q)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// shopTrace is a three-span trace: a server root and two children.
func shopTrace(id byte) *traceentry.Trace {
	fe := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("shop-backend")}}}
	db := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("db")}}}
	tr := &traceentry.Trace{TraceID: traceentry.TraceID{0, 0, 0x2f, 0x3e, 15: id}}
	base := int64(1684778327699392724)
	tr.Spans = []traceentry.Span{
		{SpanID: traceentry.SpanID{7: 1}, Name: "update-billing", Kind: traceentry.SpanKindServer, StartUnixNano: base, EndUnixNano: base + 557_500_000, Resource: fe},
		{SpanID: traceentry.SpanID{0, 0x56, 7: 2}, ParentSpanID: traceentry.SpanID{7: 1}, Name: "SELECT", Kind: traceentry.SpanKindClient,
			StatusCode: traceentry.StatusError, StatusMessage: "timeout", StartUnixNano: base + 35_000_000, EndUnixNano: base + 482_000_000,
			Attributes: traceentry.Attributes{{Key: "db.system", Value: traceentry.StringValue("postgresql")}}, Resource: db},
		{SpanID: traceentry.SpanID{7: 3}, ParentSpanID: traceentry.SpanID{7: 1}, Name: "cache", StartUnixNano: base + 10, EndUnixNano: base + 20, Resource: fe},
	}
	for i := range tr.Spans {
		tr.Spans[i].TraceID = tr.TraceID
	}
	return tr
}

func TestSearchResultShape(t *testing.T) {
	src := &memSource{traces: []*traceentry.Trace{shopTrace(0x54)}}
	resp, err := NewEngine(DefaultOptions()).Search(context.Background(), src, SearchRequest{
		Query: `{ status = error && span.db.system = "postgresql" } | select(kind, resource.service.name)`,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &SearchResponse{
		Traces: []TraceSearchMetadata{{
			TraceID:           "2f3e000000000000000000000054",
			RootServiceName:   "shop-backend",
			RootTraceName:     "update-billing",
			StartTimeUnixNano: 1684778327699392724,
			DurationMs:        557,
			SpanSets: []SpanSet{{
				Matched: 1,
				Spans: []Span{{
					SpanID:            "0056000000000002",
					Name:              "SELECT",
					StartTimeUnixNano: 1684778327734392724,
					DurationNanos:     447_000_000,
					Attributes: []Attribute{
						{Key: "status", Value: traceentry.StringValue("error")},
						{Key: "db.system", Value: traceentry.StringValue("postgresql")},
						{Key: "kind", Value: traceentry.StringValue("client")},
						{Key: "service.name", Value: traceentry.StringValue("db")},
					},
				}},
			}},
			ServiceStats: map[string]ServiceStats{"shop-backend": {SpanCount: 2}, "db": {SpanCount: 1, ErrorCount: 1}},
		}},
		Metrics: SearchMetrics{InspectedTraces: 1, InspectedSpans: 3},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("got  %+v\nwant %+v", resp, want)
	}
	wantHints := mustParse(t, `{ status = error && span.db.system = "postgresql" }`).Hints()
	if !reflect.DeepEqual(src.lastReq.Hints, wantHints) {
		t.Errorf("fetched with hints %+v, want %+v", src.lastReq.Hints, wantHints)
	}
}

func TestSearchRootNotReceived(t *testing.T) {
	tr := shopTrace(1)
	tr.Spans = tr.Spans[1:] // drop the root
	resp, err := NewEngine(DefaultOptions()).Search(context.Background(), &memSource{traces: []*traceentry.Trace{tr}}, SearchRequest{Query: `{ }`})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Traces[0]
	if got.RootServiceName != RootSpanNotYetReceived || got.RootTraceName != "" {
		t.Errorf("root service %q, root name %q", got.RootServiceName, got.RootTraceName)
	}
	if got.TraceID != "2f3e000000000000000000000001" || TraceIDString(traceentry.TraceID{}) != "0" {
		t.Errorf("trace id %q", got.TraceID)
	}
}

func TestSearchDefaults(t *testing.T) {
	src := &memSource{}
	for i := range 25 {
		tr := &traceentry.Trace{TraceID: traceentry.TraceID{15: byte(i + 1)}}
		for j := range 5 {
			tr.Spans = append(tr.Spans, traceentry.Span{SpanID: traceentry.SpanID{6: byte(i), 7: byte(j + 1)}, StartUnixNano: int64(i*100 + j), EndUnixNano: int64(i*100 + j + 1)})
		}
		src.traces = append(src.traces, tr)
	}
	resp, err := NewEngine(DefaultOptions()).Search(context.Background(), src, SearchRequest{Query: `{ }`})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Traces) != DefaultLimit || DefaultLimit != 20 {
		t.Fatalf("%d traces, want %d", len(resp.Traces), DefaultLimit)
	}
	for i, tr := range resp.Traces {
		// The first 20 in source order, most recent first.
		if want := TraceIDString(traceentry.TraceID{15: byte(20 - i)}); tr.TraceID != want {
			t.Errorf("trace %d is %s, want %s", i, tr.TraceID, want)
		}
		ss := tr.SpanSets[0]
		if len(ss.Spans) != DefaultSpansPerSpanSet || DefaultSpansPerSpanSet != 3 || ss.Matched != 5 {
			t.Errorf("trace %s: %d spans shown, matched %d", tr.TraceID, len(ss.Spans), ss.Matched)
		}
	}
	if resp.Metrics.InspectedTraces != 20 {
		t.Errorf("inspected %d traces, want 20 (stop at the limit)", resp.Metrics.InspectedTraces)
	}
	resp, err = NewEngine(DefaultOptions()).Search(context.Background(), src, SearchRequest{Query: `{ } with (most_recent=true)`, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Traces) != 2 || resp.Traces[0].TraceID != "19" || resp.Traces[1].TraceID != "18" || resp.Metrics.InspectedTraces != 25 {
		t.Errorf("most_recent: %+v inspected %d", resp.Traces, resp.Metrics.InspectedTraces)
	}
}

func TestSearchErrors(t *testing.T) {
	eng := NewEngine(DefaultOptions())
	src := &memSource{traces: []*traceentry.Trace{shopTrace(1)}}
	ctx := context.Background()
	for _, req := range []SearchRequest{
		{Query: `{ }`, Limit: -1},
		{Query: `{ }`, SpansPerSpanSet: -1},
		{Query: `{ }`, Start: 10, End: 10},
	} {
		if _, err := eng.Search(ctx, src, req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", req, err)
		}
	}
	if _, err := eng.Search(ctx, src, SearchRequest{Query: `{ .a < }`}); !errors.Is(err, ErrParse) {
		t.Errorf("bad query: %v", err)
	}
	boom := errors.New("boom")
	if _, err := eng.Search(ctx, failingSource{fetchErr: boom}, SearchRequest{Query: `{ }`}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "fetch traces") {
		t.Errorf("fetch error: %v", err)
	}
	if _, err := eng.Search(ctx, failingSource{iterErr: boom}, SearchRequest{Query: `{ }`}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "read traces") {
		t.Errorf("iterator error: %v", err)
	}
	if _, err := eng.Search(ctx, failingSource{closeErr: boom}, SearchRequest{Query: `{ }`}); !errors.Is(err, boom) {
		t.Errorf("close error: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	many := &memSource{}
	for range 2 * ctxCheckEvery {
		many.traces = append(many.traces, shopTrace(1))
	}
	if _, err := eng.Search(cctx, many, SearchRequest{Query: `{ }`, Limit: 1000}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// { false } never fetches.
	src.fetches = 0
	resp, err := eng.Search(ctx, src, SearchRequest{Query: `{ false }`})
	if err != nil || len(resp.Traces) != 0 || src.fetches != 0 {
		t.Errorf("{ false }: %v, %d traces, %d fetches", err, len(resp.Traces), src.fetches)
	}
}

type failingSource struct{ fetchErr, iterErr, closeErr error }

func (f failingSource) Fetch(context.Context, traceentry.FetchRequest) (traceentry.Iterator, error) {
	if f.fetchErr != nil {
		return nil, f.fetchErr
	}
	return &failingIter{f: f}, nil
}

type failingIter struct {
	f failingSource
	n int
}

func (it *failingIter) Next() bool {
	it.n++
	return it.n == 1 && it.f.iterErr == nil
}
func (it *failingIter) At() *traceentry.Trace { return shopTrace(1) }
func (it *failingIter) Err() error            { return it.f.iterErr }
func (it *failingIter) Close() error          { return it.f.closeErr }

// TestSearchOwnsMemory: a store may hand out strings that alias its
// buffers (valid until Next); results must not change when the buffers do.
func TestSearchOwnsMemory(t *testing.T) {
	buf := []byte("service-a/op-a/value-a")
	alias := func(from, to int) string { return unsafe.String(&buf[from], to-from) }
	res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: alias(0, 7), Value: traceentry.StringValue(alias(0, 9))}}}
	tr := &traceentry.Trace{TraceID: traceentry.TraceID{15: 1}, Spans: []traceentry.Span{{
		SpanID: traceentry.SpanID{7: 1}, Name: alias(10, 14), EndUnixNano: 1, Resource: res,
		Attributes: traceentry.Attributes{{Key: "k", Value: traceentry.ArrayValue(traceentry.StringValue(alias(15, 22)))}},
	}}}
	resp, err := NewEngine(DefaultOptions()).Search(context.Background(), &memSource{traces: []*traceentry.Trace{tr}},
		SearchRequest{Query: `{ resource.service =~ "service-a" } | select(span.k) | by(resource.service)`})
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("%+v", resp)
	for i := range buf {
		buf[i] = 'X'
	}
	if after := fmt.Sprintf("%+v", resp); after != before || !strings.Contains(before, "service-a") {
		t.Errorf("results changed with the source's buffer:\n%s\n%s", before, after)
	}
}

// bigTrace has n spans in a tree of fan-out 4, with attributes on spans and
// resources, like an instrumented request.
func bigTrace(n int) *traceentry.Trace {
	res := []*traceentry.Resource{
		{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("router")}, {Key: "k8s.pod.name", Value: traceentry.StringValue("router-0")}}},
		{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("model-server")}, {Key: "model", Value: traceentry.StringValue("llama")}}},
		{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("gpu-worker")}, {Key: "gpu_uuid", Value: traceentry.StringValue("GPU-1")}}},
	}
	tr := &traceentry.Trace{TraceID: traceentry.TraceID{15: 9}}
	for i := range n {
		s := traceentry.Span{
			SpanID: traceentry.SpanID{4: byte(i >> 16), 5: byte(i >> 8), 6: byte(i), 7: 1}, Name: "op" + fmt.Sprint(i%7),
			Kind: traceentry.SpanKind(i%5 + 1), StartUnixNano: int64(i) * 1000, EndUnixNano: int64(i)*1000 + int64(i%13)*int64(time.Millisecond),
			Resource: res[i%3],
			Attributes: traceentry.Attributes{
				{Key: "http.method", Value: traceentry.StringValue([]string{"GET", "POST"}[i%2])},
				{Key: "http.status_code", Value: traceentry.IntValue(int64(200 + 100*(i%4)))},
				{Key: "tokens", Value: traceentry.IntValue(int64(i))},
			},
		}
		if i%11 == 0 {
			s.StatusCode = traceentry.StatusError
		}
		if i > 0 {
			p := (i - 1) / 4
			s.ParentSpanID = traceentry.SpanID{4: byte(p >> 16), 5: byte(p >> 8), 6: byte(p), 7: 1}
		}
		tr.Spans = append(tr.Spans, s)
	}
	return tr
}

func TestEvalAllocations(t *testing.T) {
	tr := bigTrace(500)
	for _, q := range []string{
		`{ resource.service.name = "gpu-worker" && duration > 5ms }`,
		`{ span.http.status_code >= 400 || status = error }`,
		`{ .http.method =~ "P.*" && name != "op3" }`,
		`{ }`,
		`{ resource.service.name = "router" } >> { status = error }`,
		`{ } ~ { status = error }`,
		`{ status = error } | count() > 2`,
	} {
		if raceEnabled && strings.Contains(q, "=~") {
			continue // regexp's pooled matchers allocate under the race detector
		}
		ev := mustParse(t, q).NewEvaluator()
		ev.Eval(tr) // warm up the buffers
		allocs := testing.AllocsPerRun(20, func() { ev.Eval(tr) })
		limit := 0.0
		if strings.Contains(q, "count()") {
			limit = 2 // the aggregate's spanset attribute
		}
		if allocs > limit {
			t.Errorf("%s: %.1f allocations per trace of 500 spans, want at most %.0f", q, allocs, limit)
		}
	}
}

func TestEvaluatorReuse(t *testing.T) {
	traces := []*traceentry.Trace{bigTrace(40), shopTrace(1), bigTrace(7), bigTrace(300)}
	for _, q := range []string{
		`{ status = error } >> { }`, `{ } &~ { kind = server }`, `{ } | by(resource.service.name) | count() > 2`,
		`{ span:childCount > 2 } < { }`, `{ resource.service.name = "router" } !<< { } | coalesce()`,
	} {
		query := mustParse(t, q)
		ev := query.NewEvaluator()
		for round := range 2 {
			for i, tr := range traces {
				got := fmt.Sprint(ev.Eval(tr))
				if want := fmt.Sprint(query.EvalTrace(tr)); got != want {
					t.Errorf("%s, round %d, trace %d: reused evaluator %s, fresh %s", q, round, i, got, want)
				}
			}
		}
	}
}

func TestEvalTraceMatches(t *testing.T) {
	tr := shopTrace(1)
	ms := mustParse(t, `{ } | by(resource.service.name) | count() > 0`).EvalTrace(tr)
	if len(ms) != 2 {
		t.Fatalf("%d matches", len(ms))
	}
	if ms[0].Spans[0] != &tr.Spans[0] || ms[0].Spans[1] != &tr.Spans[2] || ms[1].Spans[0] != &tr.Spans[1] {
		t.Errorf("spans do not point into the trace in trace order: %v", ms)
	}
	want := []Attribute{{Key: "by(resource.service.name)", Value: traceentry.StringValue("shop-backend")}, {Key: "count()", Value: traceentry.IntValue(2)}}
	if !reflect.DeepEqual(ms[0].Attributes, want) {
		t.Errorf("attributes %v, want %v", ms[0].Attributes, want)
	}
	if ms := mustParse(t, `{ name = "nothing" }`).EvalTrace(tr); ms != nil {
		t.Errorf("no match gave %v", ms)
	}
	if ms := mustParse(t, `{ }`).EvalTrace(&traceentry.Trace{}); ms != nil {
		t.Errorf("empty trace gave %v", ms)
	}
}

// TestConcurrentSearch: one Engine and one source serve many searches at once
// (run with -race).
func TestConcurrentSearch(t *testing.T) {
	src := &memSource{traces: []*traceentry.Trace{shopTrace(1), bigTrace(100), shopTrace(2)}}
	eng := NewEngine(DefaultOptions())
	queries := []string{`{ status = error }`, `{ } >> { kind = client }`, `{ } | by(resource.service.name) | count() > 1`}
	want := make([]string, len(queries))
	for i, q := range queries {
		resp, err := eng.Search(context.Background(), src, SearchRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = describe(resp)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 20 {
				q := (g + i) % len(queries)
				resp, err := eng.Search(context.Background(), &memSource{traces: src.traces}, SearchRequest{Query: queries[q]})
				if err == nil && describe(resp) != want[q] {
					err = fmt.Errorf("%s: %s, want %s", queries[q], describe(resp), want[q])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
