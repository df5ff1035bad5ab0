package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/api"
)

// TestTenantLimits: each limit refuses what exceeds it for the tenant it
// is set for, with a status that says whether to retry (429) or not (400,
// 422) and a message naming the limit, its value and where to raise it,
// counted in weft_tenant_discarded_total; other tenants are not affected;
// Apply (a reload) changes the limits at once.
func TestTenantLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	small := api.TenantLimits{IngestionRate: 10, IngestionBurstSize: 10, LogIngestionRateBytes: 100, SpanIngestionRate: 2,
		MaxLabelNamesPerSeries: 3, MaxSeriesPerQuery: 2, MaxQueryLength: time.Hour}
	cfg := api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": small}}
	lim, err := api.NewLimiter(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	srv, _, _ := newSubstrateServer(t, func(o *api.Options) {
		o.Tenancy = api.TenancyOptions{Enabled: true}
		o.Limits = lim
	})
	now := time.Now()
	write := func(org string, n, labels int) (int, string) {
		var wr prompb.WriteRequest
		name := "m"
		if n == 20 {
			name = "m20" // a refused write's series may exist, empty: keep them out of the query below
		}
		for i := range n {
			ls := []prompb.Label{{Name: "__name__", Value: name}, {Name: "i", Value: fmt.Sprint(i)}}
			for j := 2; j < labels; j++ {
				ls = append(ls, prompb.Label{Name: fmt.Sprintf("x%d", j), Value: "v"})
			}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: now.UnixMilli(), Value: 1}}})
		}
		code, b := tenantDo(t, srv, "POST", "/api/v1/write", org, "application/x-protobuf", s2.EncodeSnappy(nil, must(wr.Marshal())))
		return code, string(b)
	}
	expect := func(what string, code int, body string, want int, parts ...string) {
		t.Helper()
		if code != want {
			t.Errorf("%s: %d %s, want %d", what, code, body, want)
		}
		for _, p := range parts {
			if !strings.Contains(body, p) {
				t.Errorf("%s: %q lacks %q", what, body, p)
			}
		}
	}
	code, body := write("team-a", 20, 2)
	expect("team-a 20 samples", code, body, http.StatusTooManyRequests, "ingestion rate limit, set to 10 samples/s", "burst of 10", "limits.tenants.overrides.team-a.ingestion_rate")
	code, body = write("team-b", 20, 2)
	expect("team-b 20 samples", code, body, http.StatusNoContent)
	code, body = write("team-a", 1, 4)
	expect("team-a 4 labels", code, body, http.StatusBadRequest, "number of labels exceeds the limit (actual: 4, limit: 3)", "max_label_names_per_series")
	code, body = write("team-a", 3, 2)
	expect("team-a 3 samples", code, body, http.StatusNoContent)

	// Logs and spans.
	line := strings.Repeat("x", 60)
	push := fmt.Sprintf(`{"streams":[{"stream":{"app":"a"},"values":[[%q,%q],[%q,%q]]}]}`, fmt.Sprint(now.UnixNano()), line, fmt.Sprint(now.UnixNano()+1), line)
	c, b := tenantDo(t, srv, "POST", "/loki/api/v1/push", "team-a", "application/json", []byte(push))
	expect("team-a 120 log bytes", c, string(b), http.StatusTooManyRequests, "100 bytes/s", "log_ingestion_rate_bytes")
	c, b = tenantDo(t, srv, "POST", "/loki/api/v1/push", "team-b", "application/json", []byte(push))
	expect("team-b 120 log bytes", c, string(b), http.StatusNoContent)
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for i := range 3 {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{byte(i + 1)})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	}
	c, b = tenantDo(t, srv, "POST", "/otlp/v1/traces", "team-a", "application/x-protobuf", must(ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()))
	expect("team-a 3 spans", c, string(b), http.StatusTooManyRequests, "2 spans/s", "span_ingestion_rate")

	// Queries: team-a has 3 series of m.
	q := url.Values{"query": {"m20"}, "time": {fmt.Sprint(now.Unix() + 1)}}
	c, b = tenantDo(t, srv, "GET", "/api/v1/query?"+url.Values{"query": {"m"}, "time": q["time"]}.Encode(), "team-a", "", nil)
	expect("team-a query of 3 series", c, string(b), http.StatusUnprocessableEntity, "selects 3, the limit is 2", "max_series_per_query")
	c, b = tenantDo(t, srv, "GET", "/api/v1/query?"+q.Encode(), "team-b", "", nil)
	expect("team-b query of 20 series", c, string(b), http.StatusOK)
	qr := url.Values{"query": {"m"}, "start": {fmt.Sprint(now.Add(-2 * time.Hour).Unix())}, "end": {fmt.Sprint(now.Unix())}, "step": {"60"}}
	c, b = tenantDo(t, srv, "GET", "/api/v1/query_range?"+qr.Encode(), "team-a", "", nil)
	expect("team-a 2h range", c, string(b), http.StatusBadRequest, "query length: 2h0m0s, limit: 1h0m0s", "max_query_length")

	for limit, want := range map[string]float64{"ingestion_rate": 20, "max_label_names_per_series": 1, "log_ingestion_rate_bytes": 120, "span_ingestion_rate": 3, "max_series_per_query": 1, "max_query_length": 1} {
		n := 0.0
		for _, typ := range []string{"samples", "log_bytes", "spans", "queries"} {
			n += testutil.ToFloat64(lim.Discarded().WithLabelValues("team-a", typ, limit))
		}
		if n != want {
			t.Errorf("weft_tenant_discarded_total{tenant=team-a,limit=%s} = %v, want %v", limit, n, want)
		}
	}
	if got := testutil.ToFloat64(lim.Received().WithLabelValues("team-b", "samples")); got != 20 {
		t.Errorf("weft_tenant_received_total{tenant=team-b,type=samples} = %v, want 20", got)
	}

	// A reload raises team-a's rate.
	small.IngestionRate, small.IngestionBurstSize = 1000, 1000
	if err := lim.Apply(api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": small}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the bucket refills at the new rate
	code, body = write("team-a", 20, 2)
	expect("team-a 20 samples after the reload", code, body, http.StatusNoContent)
	if err := lim.Apply(api.LimitsConfig{Defaults: api.TenantLimits{IngestionRate: -1}}); err == nil {
		t.Error("a negative limit was applied")
	}
}
