package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"

	"github.com/weftdb/weft/api"
)

// usageClient sends requests as one tenant to an App.
type usageClient struct {
	t      *testing.T
	base   string
	tenant string
}

func (c usageClient) do(method, path, contentType string, body []byte, hdr ...string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set(api.TenantHeader, c.tenant)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// ingest pushes, for team, n remote-write samples, one Loki line and one
// OTLP span. The line counts 28 bytes: 10 of line and the 18 of the
// detected_level=info structured metadata that Loki push adds and stores.
func (c usageClient) ingest(team string, n int) {
	c.t.Helper()
	now := time.Now()
	ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "loss"}, {Name: "team", Value: team}}}
	for i := range n {
		ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: now.UnixMilli() - int64(n-i), Value: float64(i)})
	}
	raw, err := (&prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}}).Marshal()
	if err != nil {
		c.t.Fatal(err)
	}
	if code, body := c.do(http.MethodPost, "/api/v1/write", "application/x-protobuf", s2.EncodeSnappy(nil, raw),
		"Content-Encoding", "snappy", "X-Prometheus-Remote-Write-Version", "0.1.0"); code != http.StatusNoContent {
		c.t.Fatalf("remote write: %d %s", code, body)
	}
	push := fmt.Sprintf(`{"streams":[{"stream":{"job":"train","level":"info","team":%q},"values":[["%d","0123456789"]]}]}`, team, now.UnixNano())
	if code, body := c.do(http.MethodPost, "/loki/api/v1/push", "application/json", []byte(push)); code != http.StatusNoContent {
		c.t.Fatalf("loki push: %d %s", code, body)
	}
	spans := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}},{"key":"team","value":{"stringValue":%q}}]},"scopeSpans":[{"spans":[
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"step","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}`,
		team, now.UnixNano()-1e6, now.UnixNano())
	if code, body := c.do(http.MethodPost, "/otlp/v1/traces", "application/json", []byte(spans)); code != http.StatusOK {
		c.t.Fatalf("otlp traces: %d %s", code, body)
	}
}

type usageRows []struct {
	Tenant   string `json:"tenant"`
	Team     string `json:"team"`
	Samples  int64  `json:"samples"`
	LogBytes int64  `json:"log_bytes"`
	Spans    int64  `json:"spans"`
	Stored   int64  `json:"bytes_stored_apportioned"`
}

func (c usageClient) rows() usageRows {
	c.t.Helper()
	code, body := c.do(http.MethodGet, "/weft/api/v1/usage", "", nil)
	if code != http.StatusOK {
		c.t.Fatalf("usage: %d %s", code, body)
	}
	var a struct {
		Data struct {
			Rows usageRows `json:"rows"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		c.t.Fatal(err)
	}
	return a.Data.Rows
}

// TestUsageAcrossSignalsAndRestart: remote write, Loki push and OTLP traces
// of two teams of two tenants are counted by the one accounting, flushed
// into the store (on stop, too), and the default report (this month, by
// team) adds up across a restart, each tenant seeing only its rows.
func TestUsageAcrossSignalsAndRestart(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t, dir)
	opts.Tenancy = api.TenancyOptions{Enabled: true}
	opts.UsageFlushInterval = time.Hour // only the flush on stop, in the first run

	a, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := "http://" + a.Addr().String()
	usageClient{t, base, "acme"}.ingest("vision", 3)
	usageClient{t, base, "acme"}.ingest("nlp", 2)
	usageClient{t, base, "globex"}.ingest("vision", 5)
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	opts.UsageFlushInterval = 50 * time.Millisecond
	a = startApp(t, opts)
	base = "http://" + a.Addr().String()
	acme := usageClient{t, base, "acme"}
	acme.ingest("vision", 4)

	want := "[{acme nlp 2 28 1} {acme vision 7 56 2}]"
	var got string
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := acme.rows()
		var parts []string
		for _, r := range rows {
			parts = append(parts, fmt.Sprintf("{%s %s %d %d %d}", r.Tenant, r.Team, r.Samples, r.LogBytes, r.Spans))
		}
		if got = "[" + strings.Join(parts, " ") + "]"; got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acme's usage %s, want %s", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rows := usageClient{t, base, "globex"}.rows()
	if len(rows) != 1 || rows[0].Tenant != "globex" || rows[0].Team != "vision" || rows[0].Samples != 5 || rows[0].Spans != 1 {
		t.Errorf("globex's usage %+v, want its one row", rows)
	}
	if code, body := acme.do(http.MethodGet, "/weft/api/v1/usage/export?month="+time.Now().UTC().Format("2006-01"), "", nil); code != http.StatusOK || !strings.HasPrefix(body, "tenant,team,start,end,") || strings.Count(body, "\n") != 3 {
		t.Errorf("export: %d %s", code, body)
	}
}
