package app

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// otlpGauge is one OTLP request with a gauge point of value v at t, from a
// resource carrying workload context.
func otlpGauge(path string, t time.Time, v float64) pmetricotlp.ExportRequest {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "trainer")
	rm.Resource().Attributes().PutStr("ai.run.id", "r42")
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gpu.util")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.Attributes().PutStr("path", path)
	dp.SetTimestamp(pcommon.NewTimestampFromTime(t))
	dp.SetDoubleValue(v)
	return pmetricotlp.NewExportRequestFromMetrics(md)
}

// TestOTLPListeners checks that the OTLP receiver is served where the docs
// say: /v1/metrics on the OTLP HTTP port, /otlp/v1/metrics and
// /api/v1/otlp/v1/metrics on the main port, MetricsService on the gRPC port,
// and that what each stored is queryable with its workload context.
func TestOTLPListeners(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	a, err := New(ctx, testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	addrs := a.Addrs()
	base := "http://" + addrs["http"].String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	now := time.Now().Truncate(time.Millisecond)

	posts := map[string]string{
		"otlp-port":     "http://" + addrs["otlp_http"].String() + "/v1/metrics",
		"main-otlp":     base + "/otlp/v1/metrics",
		"main-api-otlp": base + "/api/v1/otlp/v1/metrics",
	}
	for path, u := range posts {
		body, err := otlpGauge(path, now, 1).MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Post(u, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", u, resp.StatusCode)
		}
	}

	conn, err := grpc.NewClient(addrs["otlp_grpc"].String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, otlpGauge("grpc", now, 1)); err != nil {
		t.Fatalf("grpc export: %v", err)
	}

	q := base + "/api/v1/query?" + url.Values{
		"query": {`count by (run_id, job) (gpu_util{path=~"otlp-port|main-otlp|main-api-otlp|grpc"})`},
		"time":  {fmtSeconds(now)},
	}.Encode()
	want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"trainer","run_id":"r42"},"value":[` + fmtSeconds(now) + `,"4"]}]}}`
	if code, body := getBody(t, client, q); code != 200 || body != want {
		t.Fatalf("query: %d %s\nwant %s", code, body, want)
	}
}
