package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// TestServiceIdentityAcrossSignals: one OTLP resource's metrics, logs and
// traces all answer to the same {job=..., run_id=...} selector, so a
// pivot by the service finds every signal (issue 19, item 3).
func TestServiceIdentityAcrossSignals(t *testing.T) {
	ctx := context.Background()
	srv, _, sub := newSubstrateServer(t, nil)

	now := time.Now()
	res := func(r pcommon.Resource) {
		r.Attributes().PutStr("service.name", "trainer")
		r.Attributes().PutStr("service.namespace", "ml")
		r.Attributes().PutStr("ai.run.id", "r77")
	}
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	res(rm.Resource())
	g := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	g.SetName("train_step")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(now))
	dp.SetDoubleValue(100)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	res(rl.Resource())
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(now))
	lr.Body().SetStr("step 100 loss=0.25")
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res(rs.Resource())
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName("step")
	sp.SetTraceID(pcommon.TraceID{1, 2, 3})
	sp.SetSpanID(pcommon.SpanID{4, 5, 6})
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))

	post := func(path string, body []byte) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	post("/otlp/v1/metrics", must(pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()))
	post("/otlp/v1/logs", must(plogotlp.NewExportRequestFromLogs(ld).MarshalProto()))
	post("/otlp/v1/traces", must(ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()))

	get := func(path string, q url.Values) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	sel := `{job="ml/trainer", run_id="r77"}`
	var prom struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(get("/api/v1/query", url.Values{"query": {"train_step" + sel}, "time": {now.Format(time.RFC3339Nano)}}), &prom); err != nil || len(prom.Data.Result) != 1 {
		t.Errorf("train_step by %s: %d series (%v), want 1", sel, len(prom.Data.Result), err)
	}
	var loki struct {
		Data struct {
			Result []struct {
				Values [][2]string `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	start, end := now.Add(-time.Minute).UnixNano(), now.Add(time.Minute).UnixNano()
	if err := json.Unmarshal(get("/loki/api/v1/query_range", url.Values{"query": {sel}, "start": {itoa(start)}, "end": {itoa(end)}}), &loki); err != nil || len(loki.Data.Result) != 1 {
		t.Errorf("logs by %s: %d streams (%v), want 1", sel, len(loki.Data.Result), err)
	}
	// The trace stream carries the same labels in the shared index (the
	// metric streams are train_step and target_info).
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "ml/trainer"), labels.MustNewMatcher(labels.MatchEqual, "run_id", "r77")}
	for _, k := range []index.Kind{index.KindMetric, index.KindLog, index.KindTrace} {
		ids, err := sub.Index().Postings(ctx, k, start/1e6, end/1e6, ms...)
		if err != nil || ids.GetCardinality() == 0 {
			t.Errorf("index kind %v by %s: no stream (%v)", k, sel, err)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// newSubstrateServer returns a ready server over a substrate of its own
// (metrics, logs, traces) on a test server; edit, when not nil, adjusts the
// options before the server is built.
func newSubstrateServer(t *testing.T, edit func(*api.Options)) (*httptest.Server, *api.Server, *storage.Substrate) {
	t.Helper()
	return newSubstrateServerWith(t, nil, edit)
}

// newSubstrateServerWith is newSubstrateServer with the storage options
// edited by sedit (nil: the defaults) before the substrate opens.
func newSubstrateServerWith(t *testing.T, sedit func(*storage.Options), edit func(*api.Options)) (*httptest.Server, *api.Server, *storage.Substrate) {
	t.Helper()
	sopts := storage.DefaultOptions()
	sopts.Logs.MaintenanceInterval = -1
	if sedit != nil {
		sedit(&sopts)
	}
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	srv, s := newServerOver(t, sub, edit)
	return srv, s, sub
}

// newServerOver serves the API over sub's stores.
func newServerOver(t *testing.T, sub *storage.Substrate, edit func(*api.Options)) (*httptest.Server, *api.Server) {
	t.Helper()
	opts := api.DefaultOptions()
	opts.Storage, opts.Appendable = sub.Metrics(), sub.Metrics()
	opts.Engine = query.NewEngine(query.DefaultEngineOptions())
	opts.Logs = sub.Logs()
	opts.Traces = sub.Traces()
	if edit != nil {
		edit(&opts)
	}
	s, err := api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.SetReady(true)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}
