package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// flakyPusher fails every push while fail is set.
type flakyPusher struct {
	*logstore.Store
	fail atomic.Bool
}

func (p *flakyPusher) Push(ctx context.Context, ss []logstore.PushStream) error {
	if p.fail.Load() {
		return errors.New("injected storage failure")
	}
	return p.Store.Push(ctx, ss)
}

type quietPebbleLogger struct{}

func (quietPebbleLogger) Infof(string, ...any)         {}
func (quietPebbleLogger) Errorf(string, ...any)        {}
func (quietPebbleLogger) Fatalf(f string, args ...any) { panic(f) }

// otlpLogsEnv serves the OTLP logs receiver (HTTP at /v1/logs, gRPC) and
// the Loki API over one real log store in a temp dir.
type otlpLogsEnv struct {
	url   string
	conn  *grpc.ClientConn
	store *flakyPusher
}

func newOTLPLogsEnv(tb testing.TB, opts api.OTLPLogsOptions) *otlpLogsEnv {
	tb.Helper()
	db, err := pebble.Open(tb.TempDir(), &pebble.Options{Merger: index.Merger(), Logger: quietPebbleLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(db, index.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	so := logstore.DefaultOptions()
	so.MaintenanceInterval = -1
	store, err := logstore.Open(context.Background(), db, ix, so)
	if err != nil {
		tb.Fatal(err)
	}
	fp := &flakyPusher{Store: store}
	bc := api.NewLogBroadcaster() // shared with the Loki API, as cmd/weft wires it
	opts.Broadcaster = bc
	ing, err := api.NewOTLPLogsIngester(fp, opts)
	if err != nil {
		tb.Fatal(err)
	}
	opts.Ingester = ing
	mux := http.NewServeMux()
	mux.Handle("/v1/logs", api.NewOTLPLogsHandler(fp, opts))
	lo := api.DefaultLokiOptions()
	lo.Broadcaster = bc
	mux.Handle("/loki/", api.NewLokiHandler(store, logql.NewEngine(store, logql.DefaultEngineOptions()), lo))
	srv := httptest.NewServer(mux)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	gs := grpc.NewServer(api.OTLPGRPCServerOptions(api.OTLPOptions{MaxRequestBytes: opts.MaxRequestBytes})...)
	api.RegisterOTLPLogsGRPC(gs, fp, opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-done
		srv.Close()
		store.Close()
		ix.Close()
		db.Close()
	})
	return &otlpLogsEnv{url: srv.URL, conn: conn, store: fp}
}

// logLine is one stored line as the Loki API returns it.
type logLine struct {
	Labels   map[string]string
	Line     string
	Metadata map[string]string
}

// queryLogs returns every line matching q over the last hour.
func (e *otlpLogsEnv) queryLogs(tb testing.TB, q string) []logLine {
	tb.Helper()
	return queryLokiLines(tb, e.url, q)
}

func queryLokiLines(tb testing.TB, base, q string) []logLine {
	tb.Helper()
	now := time.Now()
	params := url.Values{"query": {q}, "limit": {"5000"},
		"start": {strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10)},
		"end":   {strconv.FormatInt(now.Add(time.Minute).UnixNano(), 10)}}
	req, _ := http.NewRequest(http.MethodGet, base+"/loki/api/v1/query_range?"+params.Encode(), nil)
	req.Header.Set("X-Loki-Response-Encoding-Flags", "categorize-labels")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		tb.Fatalf("query_range %s: %d %s", q, res.StatusCode, b)
	}
	var out struct {
		Data struct {
			Result []struct {
				Stream map[string]string `json:"stream"`
				Values [][]json.RawMessage
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("query_range answer %s: %v", b, err)
	}
	var lines []logLine
	for _, s := range out.Data.Result {
		for _, v := range s.Values {
			l := logLine{Labels: s.Stream}
			if len(v) < 2 {
				tb.Fatalf("entry %s", v)
			}
			_ = json.Unmarshal(v[1], &l.Line)
			if len(v) == 3 {
				var md struct {
					SM map[string]string `json:"structuredMetadata"`
				}
				_ = json.Unmarshal(v[2], &md)
				l.Metadata = md.SM
			}
			lines = append(lines, l)
		}
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Line < lines[j].Line })
	return lines
}

// testLogs returns n records of service svc, the first k of them invalid
// (a line over the size limit), stamped around now.
func testLogs(svc string, n, bad int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", svc)
	rl.Resource().Attributes().PutStr("k8s.pod.name", "trainer-0")
	rl.Resource().Attributes().PutStr("ai.run.id", "r42")
	rs := rl.ScopeLogs().AppendEmpty().LogRecords()
	now := time.Now()
	for i := range n {
		r := rs.AppendEmpty()
		r.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * time.Millisecond)))
		r.SetSeverityText("WARN")
		r.SetTraceID(pcommon.TraceID{0xab, 0xcd, byte(i)})
		if i < bad {
			r.Body().SetStr(strings.Repeat("x", 257<<10))
		} else {
			r.Body().SetStr("line " + strconv.Itoa(i))
		}
	}
	return ld
}

func logsBody(tb testing.TB, ld plog.Logs, ct string) []byte {
	tb.Helper()
	req := plogotlp.NewExportRequestFromLogs(ld)
	var b []byte
	var err error
	if ct == "application/json" {
		b, err = req.MarshalJSON()
	} else {
		b, err = req.MarshalProto()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

type logsHTTPResult struct {
	code   int
	header http.Header
	resp   plogotlp.ExportResponse
	st     *spb.Status
}

func postLogs(tb testing.TB, u, ct, enc string, body []byte) logsHTTPResult {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := logsHTTPResult{code: res.StatusCode, header: res.Header}
	if res.Header.Get("Content-Type") != ct {
		return out
	}
	isJSON := ct == "application/json"
	if res.StatusCode == http.StatusOK {
		out.resp = plogotlp.NewExportResponse()
		if isJSON {
			err = out.resp.UnmarshalJSON(b)
		} else {
			err = out.resp.UnmarshalProto(b)
		}
	} else {
		out.st = &spb.Status{}
		if isJSON {
			err = protojson.Unmarshal(b, out.st)
		} else {
			err = proto.Unmarshal(b, out.st)
		}
	}
	if err != nil {
		tb.Fatalf("decode %d answer %q: %v", res.StatusCode, b, err)
	}
	return out
}

func TestOTLPLogsHTTP(t *testing.T) {
	const (
		pb    = "application/x-protobuf"
		jsonT = "application/json"
	)
	opts := api.DefaultOTLPLogsOptions()
	opts.MaxRequestBytes = 1 << 20
	env := newOTLPLogsEnv(t, opts)
	u := env.url + "/v1/logs"
	cases := []struct {
		name, ct, enc string
		body          func(t *testing.T) []byte
		fail          bool
		code          int
		rejected      int64
		stored        int // lines stored for the case's service
		msg           string
	}{
		{"protobuf", pb, "", func(t *testing.T) []byte { return logsBody(t, testLogs("protobuf", 5, 0), pb) }, false, 200, 0, 5, ""},
		{"json", jsonT, "", func(t *testing.T) []byte { return logsBody(t, testLogs("json", 4, 0), jsonT) }, false, 200, 0, 4, ""},
		{"gzip", pb, "gzip", func(t *testing.T) []byte { return gz(t, logsBody(t, testLogs("gzip", 3, 0), pb)) }, false, 200, 0, 3, ""},
		{"partial", pb, "", func(t *testing.T) []byte { return logsBody(t, testLogs("partial", 3, 1), pb) }, false, 200, 1, 2, "max entry size"},
		{"partial json", jsonT, "", func(t *testing.T) []byte { return logsBody(t, testLogs("partialjson", 3, 2), jsonT) }, false, 200, 2, 1, "max entry size"},
		{"all invalid", pb, "", func(t *testing.T) []byte { return logsBody(t, testLogs("allbad", 2, 2), pb) }, false, 400, 0, 0, "max entry size"},
		{"undecodable", pb, "", func(*testing.T) []byte { return []byte{0xff, 0xff, 0xff} }, false, 400, 0, 0, "decode OTLP logs"},
		{"bad json", jsonT, "", func(*testing.T) []byte { return []byte(`{"resourceLogs":`) }, false, 400, 0, 0, "decode OTLP logs"},
		{"bad gzip", pb, "gzip", func(*testing.T) []byte { return []byte("not gzip") }, false, 400, 0, 0, "gzip"},
		{"too large", pb, "", func(t *testing.T) []byte { return make([]byte, 2<<20) }, false, 413, 0, 0, "exceeds"},
		{"wrong encoding", pb, "br", func(*testing.T) []byte { return nil }, false, 415, 0, 0, "content encoding"},
		{"wrong content type", "text/plain", "", func(*testing.T) []byte { return nil }, false, 415, 0, 0, ""},
		{"storage down", pb, "", func(t *testing.T) []byte { return logsBody(t, testLogs("down", 2, 0), pb) }, true, 503, 0, 0, "injected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.store.fail.Store(c.fail)
			defer env.store.fail.Store(false)
			res := postLogs(t, u, c.ct, c.enc, c.body(t))
			if res.code != c.code {
				t.Fatalf("status %d, want %d (%v)", res.code, c.code, res.st)
			}
			switch {
			case c.code == 200:
				ps := res.resp.PartialSuccess()
				if ps.RejectedLogRecords() != c.rejected || !strings.Contains(ps.ErrorMessage(), c.msg) {
					t.Fatalf("partial_success %d %q, want %d with %q", ps.RejectedLogRecords(), ps.ErrorMessage(), c.rejected, c.msg)
				}
			case res.st != nil:
				if !strings.Contains(res.st.GetMessage(), c.msg) {
					t.Fatalf("status message %q lacks %q", res.st.GetMessage(), c.msg)
				}
				want := codes.InvalidArgument
				switch c.code {
				case 413:
					want = codes.ResourceExhausted
				case 503:
					want = codes.Unavailable
				}
				if codes.Code(res.st.GetCode()) != want {
					t.Fatalf("status code %v, want %v", codes.Code(res.st.GetCode()), want)
				}
			}
			if c.code == 503 && res.header.Get("Retry-After") != "5" {
				t.Fatalf("Retry-After %q, want 5", res.header.Get("Retry-After"))
			}
			svc := strings.ReplaceAll(c.name, " ", "")
			if c.stored > 0 {
				lines := env.queryLogs(t, `{service_name="`+svc+`"}`)
				if len(lines) != c.stored {
					t.Fatalf("%d lines stored, want %d: %v", len(lines), c.stored, lines)
				}
				l := lines[0]
				if l.Labels["pod"] != "trainer-0" || l.Labels["run_id"] != "r42" || l.Metadata["detected_level"] != "warn" ||
					!strings.HasPrefix(l.Metadata["trace_id"], "abcd") || l.Metadata["severity_text"] != "WARN" {
					t.Fatalf("stored line %+v: want context labels, detected_level, trace_id", l)
				}
			}
		})
	}
	if lines := env.queryLogs(t, `{service_name=~"allbad|down"}`); len(lines) != 0 {
		t.Fatalf("rejected requests stored %d lines", len(lines))
	}
	t.Run("method", func(t *testing.T) {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("GET: %d", res.StatusCode)
		}
	})
}

func TestOTLPLogsGRPC(t *testing.T) {
	opts := api.DefaultOTLPLogsOptions()
	opts.MaxRequestBytes = 1 << 20
	env := newOTLPLogsEnv(t, opts)
	client := plogotlp.NewGRPCClient(env.conn)
	big := testLogs("big", 1, 0)
	big.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().SetStr(strings.Repeat("y", 2<<20))
	cases := []struct {
		name     string
		ld       plog.Logs
		gzip     bool
		fail     bool
		code     codes.Code
		rejected int64
		stored   int
		msg      string
	}{
		{"ok", testLogs("g-ok", 5, 0), false, false, codes.OK, 0, 5, ""},
		{"gzip", testLogs("g-gzip", 2, 0), true, false, codes.OK, 0, 2, ""},
		{"partial", testLogs("g-partial", 4, 1), false, false, codes.OK, 1, 3, "max entry size"},
		{"all invalid", testLogs("g-allbad", 2, 2), false, false, codes.InvalidArgument, 0, 0, "max entry size"},
		{"too large", big, false, false, codes.ResourceExhausted, 0, 0, ""},
		{"storage down", testLogs("g-down", 2, 0), false, true, codes.Unavailable, 0, 0, "injected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.store.fail.Store(c.fail)
			defer env.store.fail.Store(false)
			var copts []grpc.CallOption
			if c.gzip {
				copts = append(copts, grpc.UseCompressor(gzip.Name))
			}
			resp, err := client.Export(context.Background(), plogotlp.NewExportRequestFromLogs(c.ld), copts...)
			st, _ := status.FromError(err)
			if st.Code() != c.code || c.code != codes.OK && !strings.Contains(st.Message(), c.msg) {
				t.Fatalf("Export: %v, want %v with %q", err, c.code, c.msg)
			}
			if c.code == codes.OK {
				ps := resp.PartialSuccess()
				if ps.RejectedLogRecords() != c.rejected || !strings.Contains(ps.ErrorMessage(), c.msg) {
					t.Fatalf("partial_success %d %q, want %d with %q", ps.RejectedLogRecords(), ps.ErrorMessage(), c.rejected, c.msg)
				}
			}
			if c.code == codes.Unavailable {
				var ri *errdetails.RetryInfo
				for _, d := range st.Details() {
					if r, ok := d.(*errdetails.RetryInfo); ok {
						ri = r
					}
				}
				if ri == nil || ri.GetRetryDelay().AsDuration() != api.DefaultOTLPRetryAfter {
					t.Fatalf("RetryInfo %v, want %v", ri, api.DefaultOTLPRetryAfter)
				}
			}
			svc := c.ld.ResourceLogs().At(0).Resource().Attributes().AsRaw()["service.name"].(string)
			if lines := env.queryLogs(t, `{service_name="`+svc+`"}`); len(lines) != c.stored {
				t.Fatalf("%d lines stored, want %d", len(lines), c.stored)
			}
		})
	}
}

func TestOTLPLogsInvalidOptions(t *testing.T) {
	opts := api.DefaultOTLPLogsOptions()
	opts.Ingest.Workload.Rules = append(opts.Ingest.Workload.Rules, opts.Ingest.Workload.Rules[0])
	if _, err := api.NewOTLPLogsIngester(nil, opts); err == nil {
		t.Fatal("duplicate workload rule accepted")
	}
	srv := httptest.NewServer(api.NewOTLPLogsHandler(nil, opts))
	defer srv.Close()
	if res := postLogs(t, srv.URL, "application/x-protobuf", "", logsBody(t, testLogs("x", 1, 0), "application/x-protobuf")); res.code != 500 {
		t.Fatalf("status %d, want 500", res.code)
	}
}

// richOTLPLogs has every body type, nested attributes and records without
// timestamps or severity (a fuzz seed).
func richOTLPLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutEmptyMap("nested").PutStr("a.b", "c")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("scope")
	rs := sl.LogRecords()
	rs.AppendEmpty().Body().SetEmptyBytes().FromRaw([]byte{1, 2, 3})
	rs.AppendEmpty().Body().SetEmptySlice().AppendEmpty().SetDouble(1.5)
	r := rs.AppendEmpty()
	r.Body().SetBool(true)
	r.SetSeverityNumber(plog.SeverityNumberFatal)
	r.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
	return ld
}
