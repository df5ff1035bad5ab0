package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	"github.com/weftdb/weft/storage"
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
	expect("team-a query of 3 series", c, string(b), http.StatusUnprocessableEntity, "its selectors fetch 3, the limit is 2", "max_series_per_query")
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

// TestTenantLimitEach: each limit added for the list (series per
// metric name, label and line sizes, series and samples per query) refuses
// what exceeds it for the one tenant whose override sets it, with its
// status and a message naming the limit, its value and the key that raises
// it, counted in weft_tenant_discarded_total{tenant, limit}; another tenant
// is not limited, and a reload (Apply) that drops the override lets the
// tenant through at once.
func TestTenantLimitEach(t *testing.T) {
	now := time.Now()
	type req struct {
		code int
		body string
	}
	// write remote-writes one sample each of the series given as label
	// pairs ("__name__", "m", "job", "x").
	write := func(srv *httptest.Server, org string, series ...[]string) req {
		t.Helper()
		var wr prompb.WriteRequest
		for _, s := range series {
			var ls []prompb.Label
			for i := 0; i < len(s); i += 2 {
				ls = append(ls, prompb.Label{Name: s[i], Value: s[i+1]})
			}
			var samples []prompb.Sample
			for j := range 10 { // ten samples a second apart
				samples = append(samples, prompb.Sample{Timestamp: now.Add(time.Duration(j-10) * time.Second).UnixMilli(), Value: float64(j)})
			}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls, Samples: samples})
		}
		code, b := tenantDo(t, srv, "POST", "/api/v1/write", org, "application/x-protobuf", s2.EncodeSnappy(nil, must(wr.Marshal())))
		return req{code, string(b)}
	}
	push := func(srv *httptest.Server, org, stream string, lines ...string) req {
		t.Helper()
		var vs []string
		for i, l := range lines {
			vs = append(vs, fmt.Sprintf("[%q,%q]", fmt.Sprint(now.UnixNano()+int64(i)), l))
		}
		code, b := tenantDo(t, srv, "POST", "/loki/api/v1/push", org, "application/json",
			[]byte(fmt.Sprintf(`{"streams":[{"stream":%s,"values":[%s]}]}`, stream, strings.Join(vs, ","))))
		return req{code, string(b)}
	}
	get := func(srv *httptest.Server, org, path string, q url.Values) req {
		t.Helper()
		code, b := tenantDo(t, srv, "GET", path+"?"+q.Encode(), org, "", nil)
		return req{code, string(b)}
	}
	at := fmt.Sprint(now.Unix())
	for _, tc := range []struct {
		name   string
		limits api.TenantLimits
		// do sends the request the limit refuses; round is 0, then 1
		// after the reload (new series each round).
		do       func(srv *httptest.Server, org string, round int) req
		ok       int // the answer without the limit
		want     int
		parts    []string
		typ      string // weft_tenant_discarded_total's type
		limit    string
		refused  float64 // ... and its value for the refusal
		received float64 // weft_tenant_received_total{type} of the refused request, 0: not checked
	}{{
		name:   "max_series_per_metric",
		limits: api.TenantLimits{MaxSeriesPerMetric: 2},
		do: func(srv *httptest.Server, org string, round int) req {
			m := fmt.Sprint("pm", round)
			return write(srv, org, []string{"__name__", m, "i", "1"}, []string{"__name__", m, "i", "2"}, []string{"__name__", m, "i", "3"},
				[]string{"__name__", "other" + m, "i", "1"}) // another metric name has its own count
		},
		ok: http.StatusNoContent, want: http.StatusBadRequest,
		parts: []string{`per-metric series limit of 2 exceeded for metric "pm0" (tenant "team-a")`, "err-weft-max-series-per-metric", "limits.tenants.overrides.team-a.max_series_per_metric"},
		typ:   "samples", limit: "max_series_per_metric", refused: 10, received: 30, // 3 of the 4 series written
	}, {
		name:   "max_label_name_length",
		limits: api.TenantLimits{MaxLabelNameLength: 8},
		do: func(srv *httptest.Server, org string, round int) req {
			return write(srv, org, []string{"__name__", fmt.Sprint("ln", round), "longer_name", "v"})
		},
		ok: http.StatusNoContent, want: http.StatusBadRequest,
		parts: []string{"label name length exceeds the limit (actual: 11, limit: 8), label: 'longer_name'", "limits.tenants.overrides.team-a.max_label_name_length"},
		typ:   "samples", limit: "max_label_name_length", refused: 10,
	}, {
		name:   "max_label_value_length",
		limits: api.TenantLimits{MaxLabelValueLength: 4},
		do: func(srv *httptest.Server, org string, round int) req {
			return write(srv, org, []string{"__name__", "lv", "job", fmt.Sprint("abcdefgh", round)})
		},
		ok: http.StatusNoContent, want: http.StatusBadRequest,
		parts: []string{"label value length exceeds the limit (actual: 9, limit: 4), label: 'job' value: 'abcdefgh0'", "max_label_value_length"},
		typ:   "samples", limit: "max_label_value_length", refused: 10,
	}, {
		name:   "max_label_value_length over OTLP metrics",
		limits: api.TenantLimits{MaxLabelValueLength: 4},
		do: func(srv *httptest.Server, org string, round int) req {
			body := fmt.Sprintf(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"om","gauge":{"dataPoints":[`+
				`{"timeUnixNano":"%d","asDouble":1,"attributes":[{"key":"job","value":{"stringValue":"abcdefgh%d"}}]}]}}]}]}]}`, now.UnixNano(), round)
			code, b := tenantDo(t, srv, "POST", "/otlp/v1/metrics", org, "application/json", []byte(body))
			return req{code, string(b)}
		},
		ok: http.StatusOK, want: http.StatusBadRequest, // every point rejected
		parts: []string{"rejected 1 data points", "label value length exceeds the limit (actual: 9, limit: 4)", "limits.tenants.overrides.team-a.max_label_value_length"},
		typ:   "samples", limit: "max_label_value_length", refused: 1,
	}, {
		name:   "max_label_value_length of a log stream",
		limits: api.TenantLimits{MaxLabelValueLength: 4},
		do: func(srv *httptest.Server, org string, round int) req {
			return push(srv, org, fmt.Sprintf(`{"app":"abcdefgh%d"}`, round), "0123456789")
		},
		ok: http.StatusNoContent, want: http.StatusBadRequest,
		parts: []string{"label value length exceeds the limit (actual: 9, limit: 4), label: 'app'", "limits.tenants.overrides.team-a.max_label_value_length"},
		typ:   "log_bytes", limit: "max_label_value_length", refused: 10,
	}, {
		name:   "max_line_size",
		limits: api.TenantLimits{MaxLineSize: 10},
		do: func(srv *httptest.Server, org string, round int) req {
			return push(srv, org, `{"app":"a"}`, "short", strings.Repeat("x", 20), "fits")
		},
		ok: http.StatusNoContent, want: http.StatusBadRequest,
		parts: []string{"max entry size '10' bytes exceeded for stream '{app=\"a\"", "with length '20' bytes", "limits.tenants.overrides.team-a.max_line_size"},
		typ:   "log_bytes", limit: "max_line_size", refused: 20, received: 9, // the two short lines are written
	}, {
		name:   "max_line_size over OTLP logs",
		limits: api.TenantLimits{MaxLineSize: 10},
		do: func(srv *httptest.Server, org string, round int) req {
			body := fmt.Sprintf(`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeLogs":[{"logRecords":[`+
				`{"timeUnixNano":"%d","body":{"stringValue":"short"}},{"timeUnixNano":"%d","body":{"stringValue":"%s"}}]}]}]}`, now.UnixNano(), now.UnixNano()+1, strings.Repeat("y", 30))
			code, b := tenantDo(t, srv, "POST", "/otlp/v1/logs", org, "application/json", []byte(body))
			return req{code, string(b)}
		},
		ok: http.StatusOK, want: http.StatusOK, // OTLP's partial success
		parts: []string{`"rejectedLogRecords":"1"`, "max entry size '10' bytes exceeded", "max_line_size"},
		typ:   "log_bytes", limit: "max_line_size", refused: 30, received: 5,
	}, {
		name:   "max_series_per_query over two selectors",
		limits: api.TenantLimits{MaxSeriesPerQuery: 3},
		do: func(srv *httptest.Server, org string, round int) req {
			if r := write(srv, org, []string{"__name__", "qa", "i", "1"}, []string{"__name__", "qa", "i", "2"},
				[]string{"__name__", "qb", "i", "1"}, []string{"__name__", "qb", "i", "2"}); r.code != http.StatusNoContent {
				return r
			}
			return get(srv, org, "/api/v1/query", url.Values{"query": {"count(qa) + count(qb)"}, "time": {at}})
		},
		ok: http.StatusOK, want: http.StatusUnprocessableEntity,
		parts: []string{`"errorType":"execution"`, "its selectors fetch 4, the limit is 3", "limits.tenants.overrides.team-a.max_series_per_query"},
		typ:   "queries", limit: "max_series_per_query", refused: 1,
	}, {
		name:   "max_series_per_query of the series API",
		limits: api.TenantLimits{MaxSeriesPerQuery: 3},
		do: func(srv *httptest.Server, org string, round int) req {
			if r := write(srv, org, []string{"__name__", "sa", "i", "1"}, []string{"__name__", "sa", "i", "2"},
				[]string{"__name__", "sb", "i", "1"}, []string{"__name__", "sb", "i", "2"}); r.code != http.StatusNoContent {
				return r
			}
			return get(srv, org, "/api/v1/series", url.Values{"match[]": {"sa", "sb"}})
		},
		ok: http.StatusOK, want: http.StatusUnprocessableEntity,
		parts: []string{`"errorType":"execution"`, "fetch 4, the limit is 3"},
		typ:   "queries", limit: "max_series_per_query", refused: 1,
	}, {
		name:   "max_series_per_query of a LogQL query",
		limits: api.TenantLimits{MaxSeriesPerQuery: 2},
		do: func(srv *httptest.Server, org string, round int) req {
			for i := range 3 {
				if r := push(srv, org, fmt.Sprintf(`{"job":"l","i":"%d"}`, i), "line"); r.code != http.StatusNoContent {
					return r
				}
			}
			return get(srv, org, "/loki/api/v1/query_range", url.Values{"query": {`{job="l"}`}, "start": {fmt.Sprint(now.Add(-time.Minute).UnixNano())}, "end": {fmt.Sprint(now.Add(time.Minute).UnixNano())}})
		},
		ok: http.StatusOK, want: http.StatusBadRequest,
		parts: []string{"maximum number of series (2) reached for a single query", "limits.tenants.overrides.team-a.max_series_per_query"},
		typ:   "queries", limit: "max_series_per_query", refused: 1,
	}, {
		name:   "max_samples_per_query instant",
		limits: api.TenantLimits{MaxSamplesPerQuery: 15},
		do: func(srv *httptest.Server, org string, round int) req {
			if r := write(srv, org, []string{"__name__", "sm", "i", "1"}, []string{"__name__", "sm", "i", "2"}); r.code != http.StatusNoContent {
				return r
			}
			return get(srv, org, "/api/v1/query", url.Values{"query": {"sum(sum_over_time(sm[1m]))"}, "time": {at}})
		},
		ok: http.StatusOK, want: http.StatusUnprocessableEntity,
		parts: []string{`"errorType":"execution"`, "maximum number of samples it may read (limit: 15 samples): query would read too many samples", "limits.tenants.overrides.team-a.max_samples_per_query"},
		typ:   "queries", limit: "max_samples_per_query", refused: 1,
	}, {
		name:   "max_samples_per_query range",
		limits: api.TenantLimits{MaxSamplesPerQuery: 15},
		do: func(srv *httptest.Server, org string, round int) req {
			if r := write(srv, org, []string{"__name__", "sr", "i", "1"}, []string{"__name__", "sr", "i", "2"}); r.code != http.StatusNoContent {
				return r
			}
			return get(srv, org, "/api/v1/query_range", url.Values{"query": {"sum(sr)"}, "start": {fmt.Sprint(now.Unix() - 10)}, "end": {at}, "step": {"1"}})
		},
		ok: http.StatusOK, want: http.StatusUnprocessableEntity,
		parts: []string{`"errorType":"execution"`, "(limit: 15 samples)"},
		typ:   "queries", limit: "max_samples_per_query", refused: 1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := api.NewLimiter(api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": tc.limits}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv, _, _ := newSubstrateServerWith(t, func(o *storage.Options) { o.AdmitSeries = lim.AdmitSeries }, func(o *api.Options) {
				o.Tenancy = api.TenancyOptions{Enabled: true}
				o.Limits = lim
			})
			if r := tc.do(srv, "team-b", 0); r.code != tc.ok {
				t.Errorf("team-b, not limited: %d %s", r.code, r.body)
			}
			r := tc.do(srv, "team-a", 0)
			if r.code != tc.want {
				t.Errorf("team-a: %d %s, want %d", r.code, r.body, tc.want)
			}
			for _, p := range tc.parts {
				if !strings.Contains(r.body, p) {
					t.Errorf("team-a: %q lacks %q", r.body, p)
				}
			}
			if got := testutil.ToFloat64(lim.Discarded().WithLabelValues("team-a", tc.typ, tc.limit)); got != tc.refused {
				t.Errorf("weft_tenant_discarded_total{tenant=team-a,type=%s,limit=%s} = %v, want %v", tc.typ, tc.limit, got, tc.refused)
			}
			if got := testutil.ToFloat64(lim.Discarded().WithLabelValues("team-b", tc.typ, tc.limit)); got != 0 {
				t.Errorf("team-b refused %v", got)
			}
			if tc.received > 0 {
				if got := testutil.ToFloat64(lim.Received().WithLabelValues("team-a", tc.typ)); got != tc.received {
					t.Errorf("weft_tenant_received_total{tenant=team-a,type=%s} = %v, want %v", tc.typ, got, tc.received)
				}
			}
			if err := lim.Apply(api.LimitsConfig{}); err != nil {
				t.Fatal(err)
			}
			if r := tc.do(srv, "team-a", 1); r.code != tc.ok {
				t.Errorf("team-a after the reload: %d %s", r.code, r.body)
			}
		})
	}
}
