package api_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// TestStorageRefusalEveryIngestPath: with the store below its free-space
// reserve (a reserve larger than any disk), every ingest path answers 503
// with Retry-After and the reason (gRPC: UNAVAILABLE), /-/ready says why,
// and reads keep answering.
func TestStorageRefusalEveryIngestPath(t *testing.T) {
	opts := storage.DefaultOptions()
	opts.DiskReserve = 1 << 62
	opts.CheckpointInterval, opts.RetentionInterval = -1, -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	aopts := api.DefaultOptions()
	aopts.Storage = sub.Metrics()
	aopts.Appendable = sub.Metrics()
	aopts.Metadata = sub.Metrics()
	aopts.Engine = query.NewEngine(query.DefaultEngineOptions())
	aopts.Logs = sub.Logs()
	aopts.Traces = sub.Traces()
	aopts.StorageHealth = sub.Health
	s, err := api.New(aopts)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady(true)
	srv := httptest.NewServer(s)
	defer srv.Close()

	now := time.Now()
	wr := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: now.UnixMilli()}},
	}}}
	rw, err := wr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	md := pmetric.NewMetrics()
	g := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	g.SetName("gpu_util")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
	g.Gauge().DataPoints().At(0).SetTimestamp(pcommon.NewTimestampFromTime(now))
	mb, _ := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty()
	lr.Resource().Attributes().PutStr("service.name", "trainer")
	rec := lr.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	rec.SetTimestamp(pcommon.NewTimestampFromTime(now))
	rec.Body().SetStr("step 1")
	lb, _ := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	td := ptrace.NewTraces()
	tr := td.ResourceSpans().AppendEmpty()
	tr.Resource().Attributes().PutStr("service.name", "trainer")
	sp := tr.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetName("step")
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	tb, _ := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	loki := `{"streams":[{"stream":{"job":"x"},"values":[["` + strconv.FormatInt(now.UnixNano(), 10) + `","hello"]]}]}`

	for _, tc := range []struct {
		name, path, ct, enc string
		body                []byte
	}{
		{"remote write", "/api/v1/write", "application/x-protobuf", "snappy", s2.EncodeSnappy(nil, rw)},
		{"loki push", "/loki/api/v1/push", "application/json", "", []byte(loki)},
		{"otlp metrics", "/otlp/v1/metrics", "application/x-protobuf", "", mb},
		{"otlp logs", "/otlp/v1/logs", "application/x-protobuf", "", lb},
		{"otlp traces", "/otlp/v1/traces", "application/x-protobuf", "", tb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.ct)
			if tc.enc != "" {
				req.Header.Set("Content-Encoding", tc.enc)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
				t.Fatalf("status %d, Retry-After %q (%s); want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"), body)
			}
			if !strings.Contains(string(body), "disk space low") {
				t.Fatalf("answer %q does not give the reason", body)
			}
		})
	}

	t.Run("otlp grpc", func(t *testing.T) {
		gs := s.NewOTLPGRPCServer()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = gs.Serve(ln) }()
		defer gs.Stop()
		conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for name, export := range map[string]func() error{
			"metrics": func() error {
				_, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md))
				return err
			},
			"logs": func() error {
				_, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
				return err
			},
			"traces": func() error {
				_, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
				return err
			},
		} {
			st := status.Convert(export())
			if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "disk space low") {
				t.Errorf("%s: %v %q, want UNAVAILABLE with the reason", name, st.Code(), st.Message())
			}
		}
	})

	res, err := http.Get(srv.URL + "/-/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "disk space low") {
		t.Fatalf("/-/ready: %d %q, want 503 with the reason", res.StatusCode, body)
	}
	res, err = http.Get(srv.URL + "/api/v1/query?query=up")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("a read while writes are refused: %d", res.StatusCode)
	}
}
