package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/storage"
)

// usageEnv is a multi-tenant server with GPU series written into its store
// from base on, one a minute, and an accountant that flushes at base+60m.
type usageEnv struct {
	srv  *httptest.Server
	sub  *storage.Substrate
	acct *usage.Accountant
	base time.Time
}

func newUsageEnv(t *testing.T) *usageEnv {
	t.Helper()
	e := &usageEnv{base: time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)}
	e.srv, _, e.sub = newSubstrateServer(t, func(o *api.Options) {
		o.Tenancy = api.TenancyOptions{Enabled: true, Federation: true}
		e.acct = usage.New(usage.Options{Sink: o.Appendable, Now: func() time.Time { return e.base.Add(time.Hour) }})
		o.Usage = e.acct
		o.UsageDisk = func(context.Context) (chargeback.Disk, error) {
			return chargeback.Disk{Metrics: 700, Logs: 100, Traces: 50}, nil
		}
	})
	gpu := func(id, uuid, team string, util float64) {
		ap := e.sub.Metrics().AppenderV2(tenant.With(context.Background(), id))
		ls := labels.FromStrings(labels.MetricName, chargeback.GPUUtilMetric, "gpu_uuid", uuid, "namespace", "ns-"+team, "team", team)
		for i := 0; i <= 120; i++ {
			if _, err := ap.Append(0, ls, 0, e.base.Add(time.Duration(i)*time.Minute).UnixMilli(), util, nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ap.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	gpu("acme", "GPU-A", "vision", 100)
	gpu("acme", "GPU-B", "nlp", 50)
	gpu("globex", "GPU-C", "vision", 75)
	return e
}

func (e *usageEnv) do(t *testing.T, method, path, id, contentType string, body []byte) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if id != "" {
		req.Header.Set(api.TenantHeader, id)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if method == http.MethodPost && strings.HasSuffix(path, "/write") {
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// ingest sends remote write, Loki push and OTLP traces for tenant id and
// team, each accepted.
func (e *usageEnv) ingest(t *testing.T, id, team string, samples int) {
	t.Helper()
	now := time.Now()
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "loss"}, {Name: "namespace", Value: "ns-" + team}, {Name: "team", Value: team}}}
	for i := range samples {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: now.UnixMilli() - int64(samples-i), Value: 1})
	}
	raw, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := e.do(t, http.MethodPost, "/api/v1/write", id, "application/x-protobuf", s2.EncodeSnappy(nil, raw)); code != http.StatusNoContent {
		t.Fatalf("remote write: %d %s", code, body)
	}
	push := fmt.Sprintf(`{"streams":[{"stream":{"job":"train","team":%q,"namespace":"ns-%s"},"values":[["%d","level=info hello",{"trace_id":"abc"}]]}]}`, team, team, now.UnixNano())
	if code, body, _ := e.do(t, http.MethodPost, "/loki/api/v1/push", id, "application/json", []byte(push)); code != http.StatusNoContent {
		t.Fatalf("loki push: %d %s", code, body)
	}
	spans := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}},{"key":"team","value":{"stringValue":%q}},{"key":"k8s.namespace.name","value":{"stringValue":"ns-%s"}}]},"scopeSpans":[{"spans":[
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"step","startTimeUnixNano":"%d","endTimeUnixNano":"%d"},
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"step","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`,
		team, team, now.UnixNano()-1e6, now.UnixNano(), now.UnixNano()-1e6, now.UnixNano())
	if code, body, _ := e.do(t, http.MethodPost, "/otlp/v1/traces", id, "application/json", []byte(spans)); code != http.StatusOK {
		t.Fatalf("otlp traces: %d %s", code, body)
	}
}

type usageAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Start, End, By string
		Rows           []map[string]any `json:"rows"`
	} `json:"data"`
}

func (e *usageEnv) report(t *testing.T, id string, params url.Values) usageAnswer {
	t.Helper()
	code, body, hdr := e.do(t, http.MethodGet, "/weft/api/v1/usage?"+params.Encode(), id, "", nil)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("usage: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	var a usageAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (e *usageEnv) window() url.Values {
	return url.Values{
		"start": {e.base.Add(30 * time.Minute).Format(time.RFC3339)},
		"end":   {strconv.FormatInt(e.base.Add(90*time.Minute).Unix(), 10)},
	}
}

func TestUsageAPI(t *testing.T) {
	e := newUsageEnv(t)
	e.ingest(t, "acme", "vision", 3)
	e.ingest(t, "acme", "nlp", 1)
	e.ingest(t, "globex", "vision", 4)
	if err := e.acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// "level=info hello" (16) + trace_id=abc (11) + detected_level=info
	// (18, added at ingest and stored): 45 bytes a push.
	const logBytes = 45

	a := e.report(t, "acme", e.window())
	if a.Status != "success" || a.Data.By != "team" || a.Data.Start != e.base.Add(30*time.Minute).Format(time.RFC3339) {
		t.Fatalf("answer %+v", a)
	}
	// Samples: 3 + 1 + 4 = 8 of 700 metric bytes; log bytes 45 of 135 of
	// 100; spans 2 of 6 of 50.
	want := []map[string]any{
		{"tenant": "acme", "team": "nlp", "gpu_hours_allocated": 1.0, "gpu_hours_used": 0.5, "samples": 1.0, "log_bytes": float64(logBytes), "spans": 2.0,
			"bytes_stored_apportioned": math.Round(700.0/8 + 100.0/3 + 50.0/3)},
		{"tenant": "acme", "team": "vision", "gpu_hours_allocated": 1.0, "gpu_hours_used": 1.0, "samples": 3.0, "log_bytes": float64(logBytes), "spans": 2.0,
			"bytes_stored_apportioned": math.Round(700.0*3/8 + 100.0/3 + 50.0/3)},
	}
	checkRows(t, a.Data.Rows, want)

	// globex sees only its own row.
	checkRows(t, e.report(t, "globex", e.window()).Data.Rows, []map[string]any{
		{"tenant": "globex", "team": "vision", "gpu_hours_allocated": 1.0, "gpu_hours_used": 0.75, "samples": 4.0, "log_bytes": float64(logBytes), "spans": 2.0,
			"bytes_stored_apportioned": math.Round(700.0*4/8 + 100.0/3 + 50.0/3)},
	})

	// By namespace and, federated, by tenant.
	p := e.window()
	p.Set("by", "namespace")
	if rows := e.report(t, "acme", p).Data.Rows; len(rows) != 2 || rows[0]["namespace"] != "ns-nlp" || rows[0]["team"] != nil {
		t.Errorf("by namespace: %v", rows)
	}
	p.Set("by", "tenant")
	rows := e.report(t, "acme|globex", p).Data.Rows
	if len(rows) != 2 || rows[0]["tenant"] != "acme" || rows[0]["gpu_hours_allocated"] != 2.0 || rows[1]["tenant"] != "globex" || rows[1]["samples"] != 4.0 {
		t.Errorf("by tenant: %v", rows)
	}
}

// checkRows compares rows field by field (JSON numbers are float64).
func checkRows(t *testing.T, got, want []map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
			continue
		}
		for k, w := range want[i] {
			g := got[i][k]
			if gf, ok := g.(float64); ok {
				if wf, ok := w.(float64); !ok || math.Abs(gf-wf) > 1e-9 {
					t.Errorf("row %d %s = %v, want %v", i, k, g, w)
				}
			} else if g != w {
				t.Errorf("row %d %s = %v, want %v", i, k, g, w)
			}
		}
	}
}

func TestUsageCSV(t *testing.T) {
	e := newUsageEnv(t)
	e.ingest(t, "acme", "vision", 2)
	if err := e.acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := e.window()
	p.Set("format", "csv")
	code, body, hdr := e.do(t, http.MethodGet, "/weft/api/v1/usage?"+p.Encode(), "acme", "", nil)
	if code != http.StatusOK || hdr.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("csv: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	start, end := e.base.Add(30*time.Minute).Format(time.RFC3339), e.base.Add(90*time.Minute).Format(time.RFC3339)
	want := [][]string{
		{"tenant", "team", "start", "end", "gpu_hours_allocated", "gpu_hours_used", "samples", "log_bytes", "spans", "bytes_stored_apportioned"},
		{"acme", "nlp", start, end, "1", "0.5", "0", "0", "0", "0"},
		{"acme", "vision", start, end, "1", "1", "2", "45", "2", "850"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("csv\n%v\nwant\n%v", recs, want)
	}

	// The month export: this month's rows up to now, by tenant.
	month := e.base.Format("2006-01")
	code, body, hdr = e.do(t, http.MethodGet, "/weft/api/v1/usage/export?by=tenant&month="+month, "acme", "", nil)
	if code != http.StatusOK || hdr.Get("Content-Disposition") != `attachment; filename="weft-usage-`+month+`.csv"` {
		t.Fatalf("export: %d %v %s", code, hdr, body)
	}
	recs, err = csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0][0] != "tenant" || recs[0][1] != "start" || recs[1][0] != "acme" || recs[1][5] != "2" || recs[1][8] != "850" {
		t.Errorf("export by tenant: %v", recs)
	}
}

func TestUsageBadInput(t *testing.T) {
	e := newUsageEnv(t)
	for _, tc := range []struct{ path, reason string }{
		{"/weft/api/v1/usage?by=gpu", "by must be team, namespace or tenant"},
		{"/weft/api/v1/usage?start=yesterday", "start: cannot parse"},
		{"/weft/api/v1/usage?end=NaN", "end: cannot parse"},
		{"/weft/api/v1/usage?start=2000&end=1000", "end must be after start"},
		{"/weft/api/v1/usage?format=xml", "format must be json or csv"},
		{"/weft/api/v1/usage?step=-1m", "step"},
		{"/weft/api/v1/usage?step=1ms", "step must be at least 1s"},
		{"/weft/api/v1/usage?start=0&end=100000000", "more than 100000"},
		{"/weft/api/v1/usage/export", "month is required"},
		{"/weft/api/v1/usage/export?month=2026-13", "month must be YYYY-MM"},
		{"/weft/api/v1/usage/export?month=2999-01", "has not begun"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body, _ := e.do(t, http.MethodGet, tc.path, "acme", "", nil)
			if code != http.StatusBadRequest || !strings.Contains(body, tc.reason) || !strings.Contains(body, `"errorType":"bad_data"`) {
				t.Errorf("%d %s, want 400 with %q", code, body, tc.reason)
			}
		})
	}
	if code, body, _ := e.do(t, http.MethodGet, "/weft/api/v1/usage", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("without a tenant: %d %s, want 401", code, body)
	}
}
