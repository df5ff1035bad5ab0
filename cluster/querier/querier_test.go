package querier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

const total = 2

// node is a weft store with its HTTP API and the internal read API: a
// single node, or an ingester of some partitions.
type node struct {
	sub *storage.Substrate
	srv *httptest.Server
}

func newNode(t *testing.T, partitions []int32) *node {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.RetentionInterval = -1
	opts.CheckpointInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	n := &node{sub: sub}
	n.srv = httptest.NewServer(apiHandler(t, sub.Metrics(), sub.Logs(), sub.Traces(), readapi.Handlers(sub.Logs(), sub.Traces(), func() readapi.Status {
		return readapi.Status{Partitions: partitions, TotalPartitions: total, Ready: true}
	}, nil)))
	t.Cleanup(n.srv.Close)
	return n
}

// apiHandler is weft's route table over st, logs and traces.
func apiHandler(t *testing.T, st api.Storage, logs api.LogStore, traces api.TraceStore, extra map[string]http.Handler) http.Handler {
	t.Helper()
	o := api.DefaultOptions()
	o.Storage = st
	o.Engine = query.NewEngine(query.DefaultEngineOptions())
	o.Logs = logs
	o.Traces = traces
	if md, ok := st.(api.MetadataReader); ok {
		o.Metadata = md
	}
	if db, ok := st.(*storage.DB); ok {
		card := api.StoreCardinality{DB: db}
		o.Cardinality, o.Churn = card, card
	}
	o.Handlers = extra
	s, err := api.New(o)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady(true)
	return s
}

// fill writes the same data to the single node and, by partition, to the
// ingesters of each partition.
func fill(t *testing.T, base time.Time, single *node, byPart map[int32][]*node) {
	t.Helper()
	ctx := context.Background()
	write := func(ls labels.Labels, f func(sub *storage.Substrate)) {
		f(single.sub)
		for _, n := range byPart[record.PartitionOf(ls, total)] {
			f(n.sub)
		}
	}
	for i := range 24 {
		ls := labels.FromStrings("__name__", "gpu_util", "gpu", strconv.Itoa(i%8), "host", fmt.Sprintf("n%d", i/8))
		write(ls, func(sub *storage.Substrate) {
			app := sub.Metrics().AppenderV2(ctx)
			for j := range 90 {
				opts := promstorage.AOptions{MetricFamilyName: "gpu_util", Metadata: metadata.Metadata{Type: model.MetricTypeGauge, Unit: "percent", Help: "GPU utilization."}}
				if j%30 == 7 {
					opts.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", i*100+j)), Value: float64(j), Ts: base.Add(time.Duration(j) * time.Second).UnixMilli(), HasTs: true}}
				}
				if _, err := app.Append(0, ls, 0, base.Add(time.Duration(j)*time.Second).UnixMilli(), float64(j%17*100+i), nil, nil, opts); err != nil {
					t.Fatal(err)
				}
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
		})
	}
	for i := range 8 {
		ls := labels.FromStrings("job", "train", "rank", strconv.Itoa(i))
		ps := logstore.PushStream{Labels: ls}
		for j := range 40 {
			lvl := "info"
			if (i+j)%7 == 0 {
				lvl = "error"
			}
			ps.Entries = append(ps.Entries, logentry.Entry{Timestamp: base.Add(time.Duration(j) * 2 * time.Second).UnixNano(), Line: fmt.Sprintf("level=%s rank=%d step=%d", lvl, i, j)})
		}
		write(ls, func(sub *storage.Substrate) {
			if err := sub.Logs().Push(ctx, []logstore.PushStream{ps}); err != nil {
				t.Fatal(err)
			}
		})
	}
	for i := range traceCount {
		rs := testTrace(base, i)
		for _, sub := range append([]*storage.Substrate{single.sub}, subs(byPart[record.TracePartition(rs[0].Spans[0].TraceID, total)])...) {
			if _, err := sub.Traces().Push(ctx, rs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func subs(ns []*node) []*storage.Substrate {
	out := make([]*storage.Substrate, len(ns))
	for i, n := range ns {
		out[i] = n.sub
	}
	return out
}

// traceCount traces of testTrace are written by fill.
const traceCount = 16

// traceID is the ID of fill's trace i.
func traceID(i int) traceentry.TraceID {
	return traceentry.TraceID{0: 0xab, 14: byte(i >> 8), 15: byte(i)}
}

// testTrace is fill's trace i: a "train" root span on the trainer
// service and two children on a data loader and a checkpoint writer; every
// fourth trace's checkpoint span failed. Spans of each resource come as
// their own ResourceSpans, as an OTLP batch would carry them.
func testTrace(base time.Time, i int) []tracestore.ResourceSpans {
	id := traceID(i)
	start := base.Add(time.Duration(i) * 5 * time.Second).UnixNano()
	res := func(svc string) *traceentry.Resource {
		return &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}, {Key: "run_id", Value: traceentry.StringValue("run-" + strconv.Itoa(i%2))}}}
	}
	scope := &traceentry.InstrumentationScope{Name: "weft-test"}
	trainer, loader := res("trainer"), res("loader")
	root := traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{7: 1}, Name: "train", Kind: traceentry.SpanKindServer,
		StartUnixNano: start, EndUnixNano: start + int64(time.Second), Scope: scope, Resource: trainer,
		Attributes: traceentry.Attributes{{Key: "step", Value: traceentry.IntValue(int64(i))}}}
	load := traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{7: 2}, ParentSpanID: root.SpanID, Name: "load_batch",
		StartUnixNano: start + 1e6, EndUnixNano: start + int64(i+1)*1e7, Scope: scope, Resource: loader}
	ckpt := traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{7: 3}, ParentSpanID: root.SpanID, Name: "checkpoint",
		StartUnixNano: start + 5e8, EndUnixNano: start + 9e8, Scope: scope, Resource: trainer,
		Events: []traceentry.Event{{TimeUnixNano: start + 6e8, Name: "flush"}}}
	if i%4 == 0 {
		ckpt.StatusCode, ckpt.StatusMessage = traceentry.StatusError, "disk full"
	}
	svc := func(s string) labels.Labels {
		return labels.FromStrings("service_name", s, "run_id", "run-"+strconv.Itoa(i%2))
	}
	return []tracestore.ResourceSpans{
		{Labels: svc("trainer"), Spans: []traceentry.Span{root, ckpt}},
		{Labels: svc("loader"), Spans: []traceentry.Span{load}},
	}
}

func get(t *testing.T, base, path string, params url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + path + "?" + params.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return resp.StatusCode, resp.Header, map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, resp.Header, out
}

// data is an answer's comparable part: Prometheus' "data", Loki's
// data.result (its stats hold timings), Tempo's traces of a search (its
// metrics count what was read) or the whole answer.
func data(m map[string]any) any {
	if tr, ok := m["traces"]; ok {
		return tr
	}
	if _, ok := m["data"]; !ok {
		return m
	}
	d, _ := m["data"].(map[string]any)
	if d != nil {
		if r, ok := d["result"]; ok {
			return r
		}
	}
	return m["data"]
}

type check struct {
	path   string
	params url.Values
}

func checks(base time.Time) []check {
	s, e := strconv.FormatInt(base.Unix(), 10), strconv.FormatInt(base.Add(90*time.Second).Unix(), 10)
	ns := func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }
	ls, le := ns(base), ns(base.Add(90*time.Second))
	return []check{
		{"/api/v1/query_range", url.Values{"query": {`sum by (host) (rate(gpu_util[30s]))`}, "start": {s}, "end": {e}, "step": {"10"}}},
		{"/api/v1/query_range", url.Values{"query": {`gpu_util{gpu="3"}`}, "start": {s}, "end": {e}, "step": {"5"}}},
		{"/api/v1/query_range", url.Values{"query": {`topk(3, max_over_time(gpu_util[1m]))`}, "start": {s}, "end": {e}, "step": {"15"}}},
		{"/api/v1/query", url.Values{"query": {`count(gpu_util)`}, "time": {e}}},
		{"/api/v1/series", url.Values{"match[]": {`gpu_util{host="n1"}`}, "start": {s}, "end": {e}}},
		{"/api/v1/labels", url.Values{"start": {s}, "end": {e}}},
		{"/api/v1/label/gpu/values", url.Values{"start": {s}, "end": {e}}},
		{"/api/v1/query_exemplars", url.Values{"query": {`gpu_util{host=~"n0|n2"}`}, "start": {s}, "end": {e}}},
		{"/api/v1/metadata", url.Values{}},
		{"/api/v1/metadata", url.Values{"metric": {"gpu_util"}}},
		{"/loki/api/v1/query_range", url.Values{"query": {`{job="train"} |= "error"`}, "start": {ls}, "end": {le}, "limit": {"1000"}, "direction": {"forward"}}},
		{"/loki/api/v1/query_range", url.Values{"query": {`{job="train"}`}, "start": {ls}, "end": {le}, "limit": {"25"}}},
		{"/loki/api/v1/query_range", url.Values{"query": {`sum by (rank) (count_over_time({job="train"} |= "error" [30s]))`}, "start": {ls}, "end": {le}, "step": {"10s"}}},
		{"/loki/api/v1/series", url.Values{"match[]": {`{job="train"}`}, "start": {ls}, "end": {le}}},
		{"/loki/api/v1/label/rank/values", url.Values{"start": {ls}, "end": {le}}},
		{"/loki/api/v1/index/stats", url.Values{"query": {`{job="train"}`}, "start": {ls}, "end": {le}}},
		{"/api/search", url.Values{"q": {`{ status = error }`}, "start": {s}, "end": {e}, "limit": {"100"}}},
		{"/api/search", url.Values{"q": {`{ resource.service.name = "loader" && duration > 50ms }`}, "start": {s}, "end": {e}, "limit": {"100"}}},
		{"/api/search", url.Values{"q": {`{ name = "train" }`}, "start": {s}, "end": {e}, "limit": {"5"}}},
		{"/api/search", url.Values{"q": {`{ span.step >= 10 } | count() > 0`}, "start": {s}, "end": {e}}},
		{"/api/v2/traces/" + traceID(3).String(), nil},
		{"/api/traces/" + traceID(8).String(), nil},
		{"/api/v2/search/tags", url.Values{"start": {s}, "end": {e}}},
		{"/api/v2/search/tag/resource.service.name/values", url.Values{"start": {s}, "end": {e}}},
	}
}

// TestFanOutMatchesSingleNode: a querier over two partitions (partition 0
// with a replica) answers the Prometheus and Loki APIs as one node holding
// all the data does; with the replica gone it still does; with partition 1
// gone the answer is flagged partial, or refused with DenyPartialResponse.
func TestFanOutMatchesSingleNode(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	single := newNode(t, nil)
	p0a, p0b, p1 := newNode(t, []int32{0}), newNode(t, []int32{0}), newNode(t, []int32{1})
	fill(t, base, single, map[int32][]*node{0: {p0a, p0b}, 1: {p1}})

	newQuerier := func(deny bool) (*Querier, string) {
		q, err := New(Options{Ingesters: []string{p0a.srv.URL, p0b.srv.URL, p1.srv.URL}, TotalPartitions: total, DenyPartialResponse: deny, StatusInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		q.Start(context.Background())
		t.Cleanup(q.Stop)
		srv := httptest.NewServer(Middleware(apiHandler(t, q, q.Logs(), q.Traces(), nil)))
		t.Cleanup(srv.Close)
		return q, srv.URL
	}
	q, qURL := newQuerier(false)
	if !q.Ready() {
		t.Fatal("querier not ready with every partition owned")
	}
	compare := func(t *testing.T) {
		t.Helper()
		for _, c := range checks(base) {
			wc, _, want := get(t, single.srv.URL, c.path, c.params)
			gc, hdr, got := get(t, qURL, c.path, c.params)
			if wc != 200 || gc != 200 {
				t.Fatalf("%s %v: single %d %v, querier %d %v", c.path, c.params, wc, want, gc, got)
			}
			if hdr.Get(HeaderPartial) != "" {
				t.Errorf("%s: complete answer flagged partial", c.path)
			}
			if d := reflect.ValueOf(data(want)); !d.IsValid() || (d.Kind() == reflect.Slice || d.Kind() == reflect.Map) && d.Len() == 0 {
				t.Errorf("%s %v: the single node's answer is empty, so comparing proves nothing", c.path, c.params)
			}
			if !reflect.DeepEqual(data(want), data(got)) {
				t.Errorf("%s %v:\nsingle  %v\nquerier %v", c.path, c.params.Get("query"), data(want), data(got))
			}
		}
	}
	t.Run("all ingesters", compare)
	t.Run("investigations", func(t *testing.T) {
		// weft's own investigation API over the querier's index and
		// fan-out answers as over the single node's store.
		eng := query.NewEngine(query.DefaultEngineOptions())
		want, err := investigate.New(investigate.Options{Index: single.sub.Index(), Metrics: single.sub.Metrics(), Engine: eng, Logs: single.sub.Logs()})
		if err != nil {
			t.Fatal(err)
		}
		got, err := investigate.New(investigate.Options{Index: q.Index(), Metrics: q, Engine: eng, Logs: q.Logs()})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, sel := range []string{`{host="n1"}`, `gpu_util{gpu=~"3|5"}`, `{job="train", rank!="2"}`, `{run_id="run-1"}`, `{service_name=~"load.*"}`} {
			w, err1 := want.Context(ctx, sel, base, base.Add(90*time.Second))
			g, err2 := got.Context(ctx, sel, base, base.Add(90*time.Second))
			if err1 != nil || err2 != nil {
				t.Fatalf("context %s: single %v, querier %v", sel, err1, err2)
			}
			if w.Metrics.Series+w.Logs.Streams+w.Traces.Streams == 0 {
				t.Fatalf("context %s: the single node knows nothing of it", sel)
			}
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			if string(wj) != string(gj) {
				t.Errorf("context %s:\nsingle  %s\nquerier %s", sel, wj, gj)
			}
		}
		if g, err := got.Context(ctx, `{run_id="run-1"}`, base, base.Add(90*time.Second)); err != nil || g.Traces.Streams != 2 {
			t.Fatalf("context of run-1 on the querier: %+v, %v; want its 2 trace streams (trainer, loader)", g, err)
		}
		pw, err1 := want.Pivot(ctx, investigate.PivotRequest{Series: `gpu_util{host="n2", gpu="1"}`, Start: base, End: base.Add(90 * time.Second)})
		pg, err2 := got.Pivot(ctx, investigate.PivotRequest{Series: `gpu_util{host="n2", gpu="1"}`, Start: base, End: base.Add(90 * time.Second)})
		wj, _ := json.Marshal(pw)
		gj, _ := json.Marshal(pg)
		if err1 != nil || err2 != nil || string(wj) != string(gj) {
			t.Errorf("pivot: single %s %v\nquerier %s %v", wj, err1, gj, err2)
		}
		sym := investigate.Symptom{Query: `max(gpu_util{host="n0"})`, Time: base.Add(80 * time.Second)}
		rw, err1 := want.Investigate(ctx, sym)
		rg, err2 := got.Investigate(ctx, sym)
		if err1 != nil || err2 != nil {
			t.Fatalf("investigate: single %v, querier %v", err1, err2)
		}
		rw.Seconds, rg.Seconds = 0, 0
		wj, _ = json.Marshal(rw)
		gj, _ = json.Marshal(rg)
		if string(wj) != string(gj) || rw.Scope.Series == 0 {
			t.Errorf("investigate:\nsingle  %s\nquerier %s", wj, gj)
		}
	})

	p0a.srv.Close() // the first replica of partition 0 fails: its twin answers
	t.Run("one replica down", compare)

	p1.srv.Close()
	q.topo.refresh(context.Background())
	if q.Ready() {
		t.Fatal("querier ready with partition 1 unowned")
	}
	c := checks(base)[0]
	code, hdr, body := get(t, qURL, c.path, c.params)
	if code != 200 || hdr.Get(HeaderPartial) != "true" || body["warnings"] == nil {
		t.Fatalf("partition 1 down: %d partial=%q warnings=%v; want 200 flagged partial with a warning", code, hdr.Get(HeaderPartial), body["warnings"])
	}
	lc := checks(base)[7]
	if code, hdr, _ := get(t, qURL, lc.path, lc.params); code != 200 || hdr.Get(HeaderPartial) != "true" {
		t.Fatalf("logs with partition 1 down: %d partial=%q", code, hdr.Get(HeaderPartial))
	}
	tc := checks(base)[16]
	if code, hdr, _ := get(t, qURL, tc.path, tc.params); tc.path != "/api/search" || code != 200 || hdr.Get(HeaderPartial) != "true" {
		t.Fatalf("%s with partition 1 down: %d partial=%q", tc.path, code, hdr.Get(HeaderPartial))
	}

	dq, dURL := newQuerier(true)
	dq.topo.refresh(context.Background())
	if code, _, body := get(t, dURL, c.path, c.params); code == 200 {
		t.Fatalf("deny-partial-response answered 200: %v", body)
	}
	_, err := dq.Logs().Select(context.Background(), logentry.SelectParams{End: time.Now().UnixNano(), Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")}})
	if !errors.Is(err, ErrPartialResponse) {
		t.Fatalf("deny-partial-response log select = %v, want ErrPartialResponse", err)
	}
	if _, err := dq.Traces().Fetch(context.Background(), traceentry.FetchRequest{}); !errors.Is(err, ErrPartialResponse) {
		t.Fatalf("deny-partial-response trace fetch = %v, want ErrPartialResponse", err)
	}
}
