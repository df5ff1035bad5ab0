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
	"sync/atomic"
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

// TestMemoryBudgetRefusal: past the memory budget a request that creates a
// series or a log stream answers 429 with Retry-After and the reason
// (gRPC RESOURCE_EXHAUSTED), and one for existing streams is taken.
func TestMemoryBudgetRefusal(t *testing.T) {
	var used atomic.Int64
	opts := storage.DefaultOptions()
	opts.MemoryBudget = 1 << 30
	opts.MemoryInUse = used.Load
	opts.CheckpointInterval, opts.RetentionInterval = -1, -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	aopts := api.DefaultOptions()
	aopts.Storage = sub.Metrics()
	aopts.Appendable = sub.Metrics()
	aopts.Engine = query.NewEngine(query.DefaultEngineOptions())
	aopts.Logs = sub.Logs()
	s, err := api.New(aopts)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady(true)
	srv := httptest.NewServer(s)
	defer srv.Close()

	now := time.Now()
	rw := func(job string, ts time.Time) []byte {
		wr := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
			Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: job}},
			Samples: []prompb.Sample{{Value: 1, Timestamp: ts.UnixMilli()}},
		}}}
		b, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return s2.EncodeSnappy(nil, b)
	}
	loki := func(job string, ts time.Time) []byte {
		return []byte(`{"streams":[{"stream":{"job":"` + job + `"},"values":[["` + strconv.FormatInt(ts.UnixNano(), 10) + `","hello"]]}]}`)
	}
	post := func(path, ct, enc string, body []byte) (int, string, http.Header) {
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	if code, body, _ := post("/api/v1/write", "application/x-protobuf", "snappy", rw("old", now)); code != http.StatusNoContent {
		t.Fatalf("under budget: %d %s", code, body)
	}
	if code, body, _ := post("/loki/api/v1/push", "application/json", "", loki("old", now)); code != http.StatusNoContent {
		t.Fatalf("under budget: %d %s", code, body)
	}
	used.Store(2 << 30)
	time.Sleep(300 * time.Millisecond) // the budget re-reads memory every 250ms

	later := now.Add(time.Second)
	for _, tc := range []struct {
		name, path, ct, enc string
		body                []byte
		want                int
	}{
		{"existing series", "/api/v1/write", "application/x-protobuf", "snappy", rw("old", later), http.StatusNoContent},
		{"existing log stream", "/loki/api/v1/push", "application/json", "", loki("old", later), http.StatusNoContent},
		{"new series", "/api/v1/write", "application/x-protobuf", "snappy", rw("new", later), http.StatusTooManyRequests},
		{"new log stream", "/loki/api/v1/push", "application/json", "", loki("new", later), http.StatusTooManyRequests},
	} {
		code, body, hdr := post(tc.path, tc.ct, tc.enc, tc.body)
		if code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, code, body, tc.want)
			continue
		}
		if tc.want == http.StatusTooManyRequests && (hdr.Get("Retry-After") == "" || !strings.Contains(body, "memory budget exceeded")) {
			t.Errorf("%s: Retry-After %q, body %q: want both, with the reason", tc.name, hdr.Get("Retry-After"), body)
		}
	}

	md := pmetric.NewMetrics()
	g := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	g.SetName("brand_new")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
	g.Gauge().DataPoints().At(0).SetTimestamp(pcommon.NewTimestampFromTime(later))
	mb, _ := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
	if code, body, _ := post("/otlp/v1/metrics", "application/x-protobuf", "", mb); code != http.StatusTooManyRequests || !strings.Contains(body, "memory budget exceeded") {
		t.Errorf("otlp new series: %d %q, want 429 with the reason", code, body)
	}
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
	_, err = pmetricotlp.NewGRPCClient(conn).Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "memory budget exceeded") {
		t.Errorf("otlp grpc new series: %v %q, want RESOURCE_EXHAUSTED with the reason", st.Code(), st.Message())
	}
}
