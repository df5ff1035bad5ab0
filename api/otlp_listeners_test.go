package api_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weftdb/weft/api"
)

// TestOTLPListenersInstrumented: requests on the OTLP HTTP port and calls
// on the OTLP gRPC server appear in /metrics, each with its own label
// (issue 19, item 5: they appeared nowhere).
func TestOTLPListenersInstrumented(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv, s, _ := newSubstrateServer(t, func(o *api.Options) { o.Registerer, o.Gatherer = reg, reg })
	otlpHTTP := httptest.NewServer(s.OTLPHandler())
	t.Cleanup(otlpHTTP.Close)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewOTLPGRPCServer()
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "trainer")
	dp := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	dp.SetName("train_step")
	p := dp.SetEmptyGauge().DataPoints().AppendEmpty()
	p.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	p.SetDoubleValue(1)
	req := pmetricotlp.NewExportRequestFromMetrics(md)
	body, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(otlpHTTP.URL+"/v1/metrics", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("OTLP HTTP port: %d", resp.StatusCode)
	}
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, req); err != nil {
		t.Fatalf("OTLP gRPC: %v", err)
	}

	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`weft_http_requests_total{code="200",handler="/v1/metrics"} 1`,
		`weft_grpc_requests_total{code="OK",method="/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
