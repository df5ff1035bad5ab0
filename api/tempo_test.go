package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/proto/tempopb"
	"github.com/weftdb/weft/storage/tracestore"
)

var tempoNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// tempoEnv serves the Tempo API and the OTLP traces receiver over a trace
// store in a Pebble database shared with an index, as cmd/weft wires them.
type tempoEnv struct {
	srv   *httptest.Server
	store *tracestore.Store
}

func newTempoEnv(tb testing.TB) *tempoEnv {
	tb.Helper()
	db, err := pebble.Open(tb.TempDir(), &pebble.Options{Merger: index.Merger(), Logger: lokiQuietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(db, index.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	so := tracestore.DefaultOptions()
	so.MaintenanceInterval = -1
	so.Now = func() time.Time { return tempoNow }
	store, err := tracestore.Open(context.Background(), db, ix, so)
	if err != nil {
		tb.Fatal(err)
	}
	to := DefaultTempoOptions()
	to.Now = func() time.Time { return tempoNow }
	mux := http.NewServeMux()
	for _, r := range newTempoAPI(store, to, BuildInfo{Version: "1.2.3", GoVersion: "go1.26"}).routes() {
		mux.Handle(r.pattern, r.h)
	}
	mux.Handle("/v1/traces", newTracesSignal(store, DefaultOTLPTracesOptions()))
	srv := httptest.NewServer(mux)
	tb.Cleanup(func() {
		srv.Close()
		store.Close()
		ix.Close()
		db.Close()
	})
	return &tempoEnv{srv: srv, store: store}
}

func (e *tempoEnv) get(tb testing.TB, path string, params url.Values, accept string) (int, []byte, http.Header) {
	tb.Helper()
	u := e.srv.URL + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

func (e *tempoEnv) export(tb testing.TB, td ptrace.Traces, json, gz bool) (int, ptraceotlp.ExportResponse) {
	tb.Helper()
	req := ptraceotlp.NewExportRequestFromTraces(td)
	var body []byte
	var err error
	ct := otlpContentProto
	if json {
		body, err = req.MarshalJSON()
		ct = otlpContentJSON
	} else {
		body, err = req.MarshalProto()
	}
	if err != nil {
		tb.Fatal(err)
	}
	hreq, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v1/traces", bytes.NewReader(body))
	if gz {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(body)
		_ = w.Close()
		hreq, _ = http.NewRequest(http.MethodPost, e.srv.URL+"/v1/traces", &buf)
		hreq.Header.Set("Content-Encoding", "gzip")
	}
	hreq.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := ptraceotlp.NewExportResponse()
	if resp.StatusCode == http.StatusOK {
		if json {
			err = out.UnmarshalJSON(b)
		} else {
			err = out.UnmarshalProto(b)
		}
		if err != nil {
			tb.Fatalf("decode response %q: %v", b, err)
		}
	}
	return resp.StatusCode, out
}

func traceID(b byte) pcommon.TraceID { return pcommon.TraceID{15: b, 0: 0xa} }

// testTraces is two services' spans of trace 1 (a client/server pair) and
// a one-span trace 2.
func testTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	base := tempoNow.Add(-10 * time.Minute)
	add := func(svc string, tid pcommon.TraceID, sid, parent byte, name string, kind ptrace.SpanKind, dur time.Duration, route string) ptrace.Span {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		rs.Resource().Attributes().PutStr("k8s.pod.name", svc+"-0")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{7: sid})
		if parent != 0 {
			sp.SetParentSpanID(pcommon.SpanID{7: parent})
		}
		sp.SetName(name)
		sp.SetKind(kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(dur)))
		sp.Attributes().PutStr("http.route", route)
		return sp
	}
	add("svc-a", traceID(1), 1, 0, "GET /infer", ptrace.SpanKindClient, 300*time.Millisecond, "/infer")
	s := add("svc-b", traceID(1), 2, 1, "infer", ptrace.SpanKindServer, 200*time.Millisecond, "/infer")
	s.Status().SetCode(ptrace.StatusCodeError)
	add("svc-a", traceID(2), 3, 0, "GET /health", ptrace.SpanKindServer, time.Millisecond, "/health")
	return td
}

func TestOTLPTracesPartialSuccess(t *testing.T) {
	e := newTempoEnv(t)
	td := testTraces()
	// Two invalid spans: an all-zero trace ID and an end before the start.
	bad := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	z := bad.AppendEmpty()
	z.SetSpanID(pcommon.SpanID{1})
	back := bad.AppendEmpty()
	back.SetTraceID(traceID(9))
	back.SetSpanID(pcommon.SpanID{2})
	back.SetStartTimestamp(10)
	back.SetEndTimestamp(5)
	code, resp := e.export(t, td, false, true)
	if code != http.StatusOK || resp.PartialSuccess().RejectedSpans() != 2 ||
		!strings.Contains(resp.PartialSuccess().ErrorMessage(), "invalid trace id") ||
		!strings.Contains(resp.PartialSuccess().ErrorMessage(), "ends before it starts") {
		t.Fatalf("status %d, partial success %d %q", code, resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage())
	}
	if st := e.store.Stats(); st.HeadTraces != 2 {
		t.Fatalf("stored %+v, want the 2 valid traces", st)
	}
	// JSON, all valid: no partial success.
	code, resp = e.export(t, testTraces(), true, false)
	if code != http.StatusOK || resp.PartialSuccess().RejectedSpans() != 0 || resp.PartialSuccess().ErrorMessage() != "" {
		t.Fatalf("JSON export: %d %v", code, resp.PartialSuccess())
	}
	// Every span invalid: 400, nothing stored.
	only := ptrace.NewTraces()
	only.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	if code, _ := e.export(t, only, false, false); code != http.StatusBadRequest {
		t.Fatalf("all invalid: %d, want 400", code)
	}
}

func TestTempoTraceByID(t *testing.T) {
	e := newTempoEnv(t)
	e.export(t, testTraces(), false, false)
	tid := traceID(1)
	hexID := hex.EncodeToString(tid[:])

	code, body, hdr := e.get(t, "/api/v2/traces/"+hexID, nil, "application/protobuf")
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/protobuf" {
		t.Fatalf("v2 proto: %d %s", code, hdr.Get("Content-Type"))
	}
	var resp tempopb.TraceByIDResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	// Grafana reads the trace's ResourceSpans; pdata decodes the same bytes.
	inner, _ := proto.Marshal(resp.Trace)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(inner)
	if err != nil || td.SpanCount() != 2 || td.ResourceSpans().Len() != 2 {
		t.Fatalf("v2 trace: %v, %d spans in %d resources", err, td.SpanCount(), td.ResourceSpans().Len())
	}
	// JSON: strict jsonpb (protojson rejects unknown fields).
	code, body, _ = e.get(t, "/api/v2/traces/"+hexID, nil, "")
	var jresp tempopb.TraceByIDResponse
	if err := protojson.Unmarshal(body, &jresp); code != http.StatusOK || err != nil || len(jresp.Trace.ResourceSpans) != 2 {
		t.Fatalf("v2 JSON: %d %v %s", code, err, body)
	}
	// q prunes to the matching spans and says PARTIAL.
	code, body, _ = e.get(t, "/api/v2/traces/"+hexID, url.Values{"q": {`{ status = error }`}}, "application/protobuf")
	resp.Reset()
	if err := proto.Unmarshal(body, &resp); code != http.StatusOK || err != nil || resp.Status != tempopb.PartialStatus_PARTIAL || len(resp.Trace.ResourceSpans) != 1 {
		t.Fatalf("v2 q: %d %v %v", code, err, &resp)
	}
	// v1: the Trace message itself; JSON with "batches". Leading zeros may
	// be left out of the ID.
	code, body, _ = e.get(t, "/api/traces/"+strings.TrimLeft(hexID, "0"), nil, "application/protobuf")
	if td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body); code != http.StatusOK || err != nil || td.SpanCount() != 2 {
		t.Fatalf("v1 proto: %d %v", code, err)
	}
	code, body, _ = e.get(t, "/api/traces/"+hexID, url.Values{"start": {"1"}, "end": {strconv.FormatInt(tempoNow.Unix(), 10)}}, "")
	if code != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"batches":[`)) {
		t.Fatalf("v1 JSON: %d %.80s", code, body)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/v2/traces/0123456789abcdef0123456789abcdef", http.StatusNotFound},
		{"/api/traces/ffff", http.StatusNotFound},
		{"/api/v2/traces/nothex", http.StatusBadRequest},
		{"/api/v2/traces/0123456789abcdef0123456789abcdef01", http.StatusBadRequest},
	} {
		if code, body, _ := e.get(t, c.path, nil, "application/protobuf"); code != c.want || (c.want == 404 && len(body) != 0) {
			t.Errorf("%s: %d %q, want %d", c.path, code, body, c.want)
		}
	}
	if code, body, _ := e.get(t, "/api/echo", nil, ""); code != 200 || string(body) != "echo\n" {
		t.Errorf("echo: %d %q", code, body)
	}
	if code, body, _ := e.get(t, "/api/status/buildinfo", nil, ""); code != 200 || !strings.Contains(string(body), `"version":"1.2.3"`) {
		t.Errorf("buildinfo: %d %s", code, body)
	}
}

func TestTempoSearch(t *testing.T) {
	e := newTempoEnv(t)
	e.export(t, testTraces(), false, false)
	rng := url.Values{"start": {strconv.FormatInt(tempoNow.Add(-time.Hour).Unix(), 10)}, "end": {strconv.FormatInt(tempoNow.Unix(), 10)}}
	search := func(params url.Values) (int, *tempopb.SearchResponse, string) {
		t.Helper()
		code, body, _ := e.get(t, "/api/search", params, "application/json")
		if code != http.StatusOK {
			return code, nil, string(body)
		}
		var resp tempopb.SearchResponse
		if err := protojson.Unmarshal(body, &resp); err != nil { // strict, as Grafana's jsonpb
			t.Fatalf("strict decode: %v\n%s", err, body)
		}
		return code, &resp, string(body)
	}
	p := url.Values{"q": {`{ resource.service.name = "svc-b" }`}, "limit": {"20"}, "spss": {"3"}}
	for k, v := range rng {
		p[k] = v
	}
	code, resp, body := search(p)
	tid := traceID(1)
	if code != 200 || len(resp.Traces) != 1 || resp.Traces[0].TraceID != strings.TrimLeft(hex.EncodeToString(tid[:]), "0") ||
		resp.Traces[0].RootServiceName != "svc-a" || resp.Traces[0].DurationMs != 300 || resp.Traces[0].SpanSet == nil ||
		resp.Traces[0].SpanSets[0].Matched != 1 || resp.Metrics.InspectedTraces == 0 {
		t.Fatalf("search: %d %s", code, body)
	}
	if !strings.Contains(body, `"startTimeUnixNano":"`) || !strings.Contains(body, `"spanSet":{`) {
		t.Errorf("64-bit values must be strings and spanSet set: %s", body)
	}
	// Without start and end: the recent window (the traces are 10m old).
	if _, resp, body := search(url.Values{"q": {"{}"}}); len(resp.Traces) != 2 {
		t.Errorf("recent window: %s", body)
	}
	// Legacy parameters.
	legacy := url.Values{"tags": {"service.name=svc-a"}, "minDuration": {"100ms"}}
	if _, resp, body := search(legacy); len(resp.Traces) != 1 {
		t.Errorf("legacy tags/minDuration: %s", body)
	}
	for _, bad := range []url.Values{
		{"q": {"{}"}, "limit": {"0"}},
		{"q": {"{}"}, "spss": {"-1"}},
		{"q": {"{}"}, "tags": {"a=b"}},
		{"q": {"{ nonsense"}},
		{"start": {"100"}, "end": {"100"}},
		{"start": {"-5"}},
	} {
		if code, _, body := search(bad); code != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", bad, code, body)
		}
	}
}

func TestTempoTags(t *testing.T) {
	e := newTempoEnv(t)
	e.export(t, testTraces(), false, false)
	code, body, _ := e.get(t, "/api/v2/search/tags", nil, "")
	var tags tempopb.SearchTagsV2Response
	if err := protojson.Unmarshal(body, &tags); code != 200 || err != nil || len(tags.Scopes) != 3 ||
		tags.Scopes[0].Name != "resource" || tags.Scopes[1].Name != "span" || tags.Scopes[2].Name != "intrinsic" ||
		!strings.Contains(strings.Join(tags.Scopes[0].Tags, ","), "service.name") || tags.Scopes[1].Tags[0] != "http.route" {
		t.Fatalf("tags: %d %v %s", code, err, body)
	}
	if code, body, _ := e.get(t, "/api/v2/search/tags", url.Values{"scope": {"span"}}, ""); code != 200 || strings.Contains(string(body), "resource") {
		t.Errorf("scope=span: %d %s", code, body)
	}
	if code, _, _ := e.get(t, "/api/v2/search/tags", url.Values{"scope": {"bogus"}}, ""); code != 400 {
		t.Errorf("bad scope: %d", code)
	}
	values := func(tag string, q string) string {
		t.Helper()
		p := url.Values{}
		if q != "" {
			p.Set("q", q)
		}
		code, body, _ := e.get(t, "/api/v2/search/tag/"+url.PathEscape(tag)+"/values", p, "")
		var resp tempopb.SearchTagValuesV2Response
		if err := protojson.Unmarshal(body, &resp); code != 200 || err != nil {
			t.Fatalf("values %s: %d %v %s", tag, code, err, body)
		}
		var out []string
		for _, v := range resp.TagValues {
			out = append(out, v.Type+":"+v.Value)
		}
		return strings.Join(out, ",")
	}
	if got := values("resource.service.name", ""); got != "string:svc-a,string:svc-b" {
		t.Errorf("service values: %s", got)
	}
	// The q Grafana sends while the user types: incomplete filters are dropped.
	if got := values("resource.service.name", `{ span.http.route = "/health" && name = }`); got != "string:svc-a" {
		t.Errorf("filtered values: %s", got)
	}
	if got := values("status", ""); got != "keyword:error,keyword:unset" {
		t.Errorf("status values: %s", got)
	}
	if got := values(".http.route", `{ resource.service.name = "svc-b" }`); got != "string:/infer" {
		t.Errorf("unscoped values: %s", got)
	}
	if code, _, _ := e.get(t, "/api/v2/search/tag/nonsense/values", nil, ""); code != 400 {
		t.Errorf("bad tag: %d", code)
	}
}
