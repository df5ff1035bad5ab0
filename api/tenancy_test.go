package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

// indexCardinality answers status/tsdb from the shared index, as weft's
// own wiring does.
type indexCardinality struct{ ix *index.Index }

func (c indexCardinality) Cardinality(ctx context.Context, limit int) (api.Cardinality, error) {
	st, err := c.ix.Stats(ctx, index.KindMetric, math.MinInt64, math.MaxInt64, limit)
	if err != nil {
		return api.Cardinality{}, err
	}
	out := api.Cardinality{NumSeries: st.NumStreams, NumLabelPairs: st.NumLabelPairs, ChunkCount: -1}
	for _, s := range st.SeriesCountByLabelValuePair {
		out.SeriesCountByLabelValuePair = append(out.SeriesCountByLabelValuePair, api.CardinalityStat{Name: s.Name, Value: s.Count})
	}
	return out, nil
}

// tenantData is what one tenant wrote, as each query API must answer it.
type tenantData struct {
	series   []string // the values of label "secret" of its series
	streams  []string // the values of label "secret" of its log streams
	lines    int
	traces   map[string]int // trace ID (hex) → its spans
	services []string
}

func newTenantServer(t *testing.T, o api.TenancyOptions) (*httptest.Server, *storage.Substrate) {
	t.Helper()
	srv, _, sub := newSubstrateServer(t, func(opts *api.Options) {
		opts.Tenancy = o
		opts.EnableAdmin = true
		opts.Cardinality = indexCardinality{ix: opts.Storage.(*storage.DB).Index()}
		opts.Metadata = opts.Storage.(*storage.DB)
	})
	return srv, sub
}

func tenantDo(t *testing.T, srv *httptest.Server, method, path, org, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if org != "" {
		req.Header.Set(api.TenantHeader, org)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if contentType == "application/x-protobuf" && strings.HasSuffix(path, "/write") {
		req.Header.Set("Content-Encoding", "snappy")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestTenantIsolationProperty writes random metrics, logs and traces for
// several tenants through the real ingest handlers (remote write, Loki
// push, OTLP traces) — with equal label sets and one equal trace ID across
// tenants — and checks that every query API, for every tenant, answers
// exactly that tenant's data: series, label names and values, PromQL,
// cardinality stats, log streams, lines, labels and values, traces by ID and
// trace search.
func TestTenantIsolationProperty(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { tenantIsolationRound(t, seed) })
	}
}

func tenantIsolationRound(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 20))
	srv, _ := newTenantServer(t, api.TenancyOptions{Enabled: true, Federation: true})
	tenants := []string{"team-a", "team-b", "anonymous", "x.y_z"}
	now := time.Now().Truncate(time.Millisecond)
	shared := pcommon.TraceID{0xee, byte(seed)} // every tenant sends spans of this trace
	want := map[string]*tenantData{}
	for ti, org := range tenants {
		d := &tenantData{traces: map[string]int{}}
		want[org] = d
		// Metrics: some label sets are equal across tenants but for secret.
		var wr prompb.WriteRequest
		for i := range 1 + rng.IntN(6) {
			secret := fmt.Sprintf("%s-s%d", org, i)
			d.series = append(d.series, secret)
			ls := []prompb.Label{{Name: "__name__", Value: []string{"gpu_util", "loss"}[i%2]}, {Name: "job", Value: "trainer"}, {Name: "secret", Value: secret}}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: now.UnixMilli(), Value: float64(ti)}}})
		}
		// The same series in every tenant: isolated all the same.
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "trainer"}}, Samples: []prompb.Sample{{Timestamp: now.UnixMilli(), Value: float64(ti)}}})
		raw, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if code, b := tenantDo(t, srv, "POST", "/api/v1/write", org, "application/x-protobuf", s2.EncodeSnappy(nil, raw)); code != http.StatusNoContent {
			t.Fatalf("%s remote write: %d %s", org, code, b)
		}
		// Logs.
		var streams []string
		for i := range 1 + rng.IntN(4) {
			secret := fmt.Sprintf("%s-l%d", org, i)
			d.streams = append(d.streams, secret)
			var vals []string
			for j := range 1 + rng.IntN(3) {
				vals = append(vals, fmt.Sprintf(`[%q,%q]`, fmt.Sprint(now.Add(time.Duration(j)*time.Millisecond-2*time.Second).UnixNano()), "line of "+org))
				d.lines++
			}
			streams = append(streams, fmt.Sprintf(`{"stream":{"app":"trainer","secret":%q},"values":[%s]}`, secret, strings.Join(vals, ",")))
		}
		streams = append(streams, fmt.Sprintf(`{"stream":{"app":"trainer"},"values":[[%q,%q]]}`, fmt.Sprint(now.Add(-2*time.Second).UnixNano()), "line of "+org))
		d.lines++
		if code, b := tenantDo(t, srv, "POST", "/loki/api/v1/push", org, "application/json", []byte(`{"streams":[`+strings.Join(streams, ",")+`]}`)); code != http.StatusNoContent {
			t.Fatalf("%s loki push: %d %s", org, code, b)
		}
		// Traces.
		td := ptrace.NewTraces()
		for i := range 1 + rng.IntN(3) {
			rs := td.ResourceSpans().AppendEmpty()
			svc := fmt.Sprintf("%s-svc%d", org, i)
			d.services = append(d.services, svc)
			rs.Resource().Attributes().PutStr("service.name", svc)
			ss := rs.ScopeSpans().AppendEmpty()
			id := pcommon.TraceID{byte(ti + 1), byte(i + 1), byte(seed)}
			if i == 0 {
				id = shared
			}
			n := 1 + rng.IntN(3)
			for j := range n {
				sp := ss.Spans().AppendEmpty()
				sp.SetName("step")
				sp.Attributes().PutStr("attr_"+org, "v")
				sp.SetTraceID(id)
				sp.SetSpanID(pcommon.SpanID{byte(ti + 1), byte(i + 1), byte(j + 1)})
				if j > 0 {
					sp.SetParentSpanID(pcommon.SpanID{byte(ti + 1), byte(i + 1), 1})
				}
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
			}
			d.traces[fmt.Sprintf("%x", id[:])] = n
		}
		if code, b := tenantDo(t, srv, "POST", "/otlp/v1/traces", org, "application/x-protobuf", must(ptraceotlp.NewExportRequestFromTraces(td).MarshalProto())); code != http.StatusOK {
			t.Fatalf("%s otlp traces: %d %s", org, code, b)
		}
	}

	for _, org := range tenants {
		d := want[org]
		get := func(path string, q url.Values) []byte {
			t.Helper()
			code, b := tenantDo(t, srv, "GET", path+"?"+q.Encode(), org, "", nil)
			if code != http.StatusOK {
				t.Fatalf("%s GET %s: %d %s", org, path, code, b)
			}
			if bytes.Contains(b, []byte("__tenant__")) {
				t.Errorf("%s GET %s: the reserved label is in the answer: %s", org, path, b)
			}
			return b
		}
		rng := url.Values{"start": {fmt.Sprint(now.Add(-time.Hour).Unix())}, "end": {fmt.Sprint(now.Add(time.Hour).Unix())}}
		// Prometheus API.
		var series struct{ Data []map[string]string }
		q := url.Values{"match[]": {`{__name__=~".+"}`}, "start": rng["start"], "end": rng["end"]}
		decodeJSON(t, get("/api/v1/series", q), &series)
		var secrets []string
		for _, s := range series.Data {
			if s["secret"] != "" {
				secrets = append(secrets, s["secret"])
			}
		}
		checkSet(t, org+" /api/v1/series", secrets, d.series)
		if len(series.Data) != len(d.series)+1 {
			t.Errorf("%s /api/v1/series: %d series, want %d", org, len(series.Data), len(d.series)+1)
		}
		var vals struct{ Data []string }
		decodeJSON(t, get("/api/v1/label/secret/values", rng), &vals)
		checkSet(t, org+" /api/v1/label/secret/values", vals.Data, d.series)
		decodeJSON(t, get("/api/v1/labels", rng), &vals)
		checkSet(t, org+" /api/v1/labels", vals.Data, []string{"__name__", "job", "secret"})
		var inst struct {
			Data struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		decodeJSON(t, get("/api/v1/query", url.Values{"query": {`count({job="trainer"})`}, "time": {fmt.Sprint(now.Unix() + 1)}}), &inst)
		if len(inst.Data.Result) != 1 || inst.Data.Result[0].Value[1] != fmt.Sprint(len(d.series)+1) {
			t.Errorf("%s count({job=\"trainer\"}) = %v, want %d", org, inst.Data.Result, len(d.series)+1)
		}
		var tsdb struct {
			Data struct {
				HeadStats                   struct{ NumSeries uint64 }
				SeriesCountByLabelValuePair []struct{ Name string }
			}
		}
		decodeJSON(t, get("/api/v1/status/tsdb", url.Values{"limit": {"1000"}}), &tsdb)
		if tsdb.Data.HeadStats.NumSeries != uint64(len(d.series)+1) {
			t.Errorf("%s status/tsdb numSeries = %d, want %d", org, tsdb.Data.HeadStats.NumSeries, len(d.series)+1)
		}
		secrets = nil
		for _, p := range tsdb.Data.SeriesCountByLabelValuePair {
			if v, ok := strings.CutPrefix(p.Name, "secret="); ok {
				secrets = append(secrets, v)
			}
		}
		checkSet(t, org+" status/tsdb pairs", secrets, d.series)

		var fed []byte
		fed = get("/federate", url.Values{"match[]": {`{job="trainer"}`}})
		if n := bytes.Count(fed, []byte("secret=")); n != len(d.series) {
			t.Errorf("%s /federate: %d series with a secret, want %d:\n%s", org, n, len(d.series), fed)
		}
		for _, other := range tenants {
			if other != org && bytes.Contains(fed, []byte(`"`+other+`-s`)) {
				t.Errorf("%s /federate shows %s's series", org, other)
			}
		}

		// Loki API.
		lrng := url.Values{"start": {fmt.Sprint(now.Add(-time.Hour).UnixNano())}, "end": {fmt.Sprint(now.Add(time.Hour).UnixNano())}}
		var lv struct{ Data []string }
		decodeJSON(t, get("/loki/api/v1/label/secret/values", lrng), &lv)
		checkSet(t, org+" loki label values", lv.Data, d.streams)
		decodeJSON(t, get("/loki/api/v1/labels", lrng), &lv)
		checkSet(t, org+" loki labels", lv.Data, []string{"app", "secret", "service_name"}) // service_name: Loki's discovered service
		var ls struct{ Data []map[string]string }
		decodeJSON(t, get("/loki/api/v1/series", url.Values{"match[]": {`{app="trainer"}`}, "start": lrng["start"], "end": lrng["end"]}), &ls)
		if len(ls.Data) != len(d.streams)+1 {
			t.Errorf("%s loki series: %d streams, want %d", org, len(ls.Data), len(d.streams)+1)
		}
		var lq struct {
			Data struct {
				Result []struct {
					Stream map[string]string
					Values [][2]string
				}
			}
		}
		decodeJSON(t, get("/loki/api/v1/query_range", url.Values{"query": {`{app="trainer"}`}, "start": lrng["start"], "end": lrng["end"], "limit": {"5000"}}), &lq)
		lines := 0
		for _, s := range lq.Data.Result {
			for _, v := range s.Values {
				lines++
				if v[1] != "line of "+org {
					t.Errorf("%s loki query: another tenant's line %q", org, v[1])
				}
			}
		}
		if lines != d.lines {
			t.Errorf("%s loki query: %d lines, want %d", org, lines, d.lines)
		}

		// Tempo API: every trace ID of every tenant.
		for _, other := range tenants {
			for id, n := range want[other].traces {
				code, b := tenantDo(t, srv, "GET", "/api/v2/traces/"+id, org, "", nil)
				ownN, own := d.traces[id]
				switch {
				case own && code != http.StatusOK:
					t.Errorf("%s trace %s (own): %d %s", org, id, code, b)
				case !own && code != http.StatusNotFound:
					t.Errorf("%s trace %s of %s: %d, want 404", org, id, other, code)
				case own:
					var tr struct {
						Trace struct {
							ResourceSpans []struct {
								Resource struct {
									Attributes []struct{ Value struct{ StringValue string } }
								}
								ScopeSpans []struct{ Spans []json.RawMessage }
							}
						}
					}
					decodeJSON(t, b, &tr)
					got := 0
					for _, rs := range tr.Trace.ResourceSpans {
						for _, a := range rs.Resource.Attributes {
							if !strings.HasPrefix(a.Value.StringValue, org+"-") {
								t.Errorf("%s trace %s: another tenant's resource %q", org, id, a.Value.StringValue)
							}
						}
						for _, ss := range rs.ScopeSpans {
							got += len(ss.Spans)
						}
					}
					if got != ownN {
						t.Errorf("%s trace %s: %d spans, want %d (of %d sent by %s)", org, id, got, ownN, n, other)
					}
				}
			}
		}
		var search struct {
			Traces []struct{ TraceID, RootServiceName string }
		}
		decodeJSON(t, get("/api/search", url.Values{"q": {`{}`}, "limit": {"1000"}, "start": rng["start"], "end": rng["end"]}), &search)
		var found []string
		for _, tr := range search.Traces {
			found = append(found, strings.TrimLeft(tr.TraceID, "0"))
		}
		var ownIDs []string
		for id := range d.traces {
			ownIDs = append(ownIDs, strings.TrimLeft(strings.TrimRight(id, "0"), "0"))
		}
		for _, id := range found {
			if !slices.ContainsFunc(ownIDs, func(o string) bool { return strings.HasPrefix(id, o) }) {
				t.Errorf("%s /api/search: trace %s is not its own (%v)", org, id, ownIDs)
			}
		}
		if len(found) != len(d.traces) {
			t.Errorf("%s /api/search: %d traces, want %d", org, len(found), len(d.traces))
		}
		var tags struct{ TagNames []string }
		decodeJSON(t, get("/api/search/tags", rng), &tags)
		var attrs []string
		for _, n := range tags.TagNames {
			if strings.HasPrefix(n, "attr_") {
				attrs = append(attrs, n)
			}
		}
		checkSet(t, org+" /api/search/tags", attrs, []string{"attr_" + org})
		var tv struct{ TagValues []string }
		decodeJSON(t, get("/api/search/tag/service.name/values", rng), &tv)
		checkSet(t, org+" service.name values", tv.TagValues, d.services)
	}

	// A tenant's Loki delete removes its lines only, and only it lists it.
	lq := url.Values{"query": {`{app="trainer"}`}, "start": {fmt.Sprint(now.Add(-time.Hour).Unix())}, "end": {fmt.Sprint(time.Now().Unix())}}
	if code, b := tenantDo(t, srv, "POST", "/loki/api/v1/delete?"+lq.Encode(), "team-a", "application/json", nil); code != http.StatusNoContent {
		t.Fatalf("loki delete: %d %s", code, b)
	}
	for _, org := range tenants {
		want := want[org].lines
		if org == "team-a" {
			want = 0
		}
		_, b := tenantDo(t, srv, "GET", "/loki/api/v1/query_range?"+url.Values{"query": {`{app="trainer"}`}, "start": {fmt.Sprint(now.Add(-time.Hour).UnixNano())}, "end": {fmt.Sprint(now.Add(time.Hour).UnixNano())}, "limit": {"5000"}}.Encode(), org, "", nil)
		if got := strings.Count(string(b), "line of "); got != want {
			t.Errorf("%s after team-a's delete: %d lines, want %d", org, got, want)
		}
		_, b = tenantDo(t, srv, "GET", "/loki/api/v1/delete", org, "", nil)
		if listed := strings.Count(string(b), "request_id"); listed != map[bool]int{true: 1, false: 0}[org == "team-a"] {
			t.Errorf("%s lists %d delete requests: %s", org, listed, b)
		}
	}

	// A federated read sees both tenants; a federated write is refused.
	code, b := tenantDo(t, srv, "GET", "/api/v1/label/secret/values", "team-a|team-b", "", nil)
	var vals struct{ Data []string }
	decodeJSON(t, b, &vals)
	if code != http.StatusOK {
		t.Fatalf("federated label values: %d %s", code, b)
	}
	checkSet(t, "team-a|team-b label values", vals.Data, append(slices.Clone(want["team-a"].series), want["team-b"].series...))
	if code, b := tenantDo(t, srv, "POST", "/loki/api/v1/push", "team-a|team-b", "application/json", []byte(`{"streams":[]}`)); code != http.StatusBadRequest {
		t.Errorf("federated push: %d %s, want 400", code, b)
	}
}

// TestTenancyHeader: with multi-tenancy on a request without a tenant is
// 401, a malformed one 400, several tenants 400 unless federation is on;
// with it off the header is ignored.
func TestTenancyHeader(t *testing.T) {
	on, _ := newTenantServer(t, api.TenancyOptions{Enabled: true})
	for _, c := range []struct {
		method, path, org string
		want              int
	}{
		{"GET", "/api/v1/labels", "", http.StatusUnauthorized},
		{"POST", "/api/v1/write", "", http.StatusUnauthorized},
		{"POST", "/loki/api/v1/push", "", http.StatusUnauthorized},
		{"GET", "/api/search", "", http.StatusUnauthorized},
		{"GET", "/federate", "", http.StatusUnauthorized},
		{"GET", "/api/v1/labels", "a/b", http.StatusBadRequest},
		{"GET", "/api/v1/labels", "..", http.StatusBadRequest},
		{"GET", "/api/v1/labels", strings.Repeat("a", 151), http.StatusBadRequest},
		{"GET", "/api/v1/labels", "a|b", http.StatusBadRequest},
		{"GET", "/api/v1/labels", "a", http.StatusOK},
		{"GET", "/-/healthy", "", http.StatusOK},
		{"GET", "/metrics", "", http.StatusOK},
	} {
		ct := ""
		if c.method == "POST" {
			ct = "application/x-protobuf"
		}
		code, b := tenantDo(t, on, c.method, c.path, c.org, ct, nil)
		if code != c.want {
			t.Errorf("%s %s org %q: %d %s, want %d", c.method, c.path, c.org, code, b, c.want)
		}
		if code == http.StatusUnauthorized && !strings.Contains(string(b), "X-Scope-OrgID") {
			t.Errorf("401 does not say what is missing: %s", b)
		}
	}
	off, _ := newTenantServer(t, api.TenancyOptions{})
	if code, b := tenantDo(t, off, "GET", "/api/v1/labels", "", "", nil); code != http.StatusOK {
		t.Errorf("multi-tenancy off, no header: %d %s", code, b)
	}
	// Off, a header changes nothing: data written as "x" is everyone's.
	raw := must((&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "up"}}, Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}}}}).Marshal())
	if code, b := tenantDo(t, off, "POST", "/api/v1/write", "x", "application/x-protobuf", s2.EncodeSnappy(nil, raw)); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, b)
	}
	_, b := tenantDo(t, off, "GET", "/api/v1/label/__name__/values", "", "", nil)
	if !strings.Contains(string(b), `"up"`) {
		t.Errorf("multi-tenancy off: %s", b)
	}
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func checkSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(slices.Compact(got), slices.Compact(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestTenancyOTLP: the OTLP receivers take the tenant from the HTTP header
// and from gRPC metadata; a gRPC call without one is Unauthenticated.
func TestTenancyOTLP(t *testing.T) {
	srv, s, _ := newSubstrateServer(t, func(o *api.Options) {
		o.Tenancy = api.TenancyOptions{Enabled: true}
		o.Metadata = o.Storage.(*storage.DB)
	})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewOTLPGRPCServer()
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	now := time.Now()
	gauge := func(name string) pmetric.Metrics {
		md := pmetric.NewMetrics()
		m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName(name)
		m.SetDescription("help of " + name)
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(now))
		dp.SetDoubleValue(1)
		return md
	}
	client := pmetricotlp.NewGRPCClient(conn)
	ctx := context.Background()
	if _, err := client.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(gauge("nobody"))); status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "X-Scope-OrgID") {
		t.Fatalf("no tenant metadata: %v, want Unauthenticated naming the header", err)
	}
	if _, err := client.Export(metadata.AppendToOutgoingContext(ctx, "x-scope-orgid", "team-g"), pmetricotlp.NewExportRequestFromMetrics(gauge("by_grpc"))); err != nil {
		t.Fatal(err)
	}
	if code, b := tenantDo(t, srv, "POST", "/otlp/v1/metrics", "team-h", "application/x-protobuf", must(pmetricotlp.NewExportRequestFromMetrics(gauge("by_http")).MarshalProto())); code != http.StatusOK {
		t.Fatalf("otlp http: %d %s", code, b)
	}
	for org, want := range map[string]string{"team-g": "by_grpc", "team-h": "by_http", "team-i": ""} {
		_, b := tenantDo(t, srv, "GET", "/api/v1/label/__name__/values", org, "", nil)
		var vals struct{ Data []string }
		decodeJSON(t, b, &vals)
		var names []string
		for _, n := range vals.Data {
			if n != "target_info" {
				names = append(names, n)
			}
		}
		if want == "" && len(names) != 0 || want != "" && !slices.Equal(names, []string{want}) {
			t.Errorf("%s metric names %v, want %q", org, vals.Data, want)
		}
		// Metadata is kept per tenant too.
		_, b = tenantDo(t, srv, "GET", "/api/v1/metadata", org, "", nil)
		var meta struct {
			Data map[string][]struct{ Help string }
		}
		decodeJSON(t, b, &meta)
		var helps []string
		for name, ms := range meta.Data {
			for _, m := range ms {
				if name != "target_info" {
					helps = append(helps, m.Help)
				}
			}
		}
		if want == "" && len(helps) != 0 || want != "" && !slices.Equal(helps, []string{"help of " + want}) {
			t.Errorf("%s /api/v1/metadata = %v, want the help of %q only", org, meta.Data, want)
		}
	}
}
