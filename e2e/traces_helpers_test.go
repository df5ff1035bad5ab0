package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/proto/tempopb"
)

// traceWeft is a real weft process with its three listeners.
type traceWeft struct {
	p                  *process
	base               string // main port URL
	grpcAddr, httpAddr string // OTLP ports
}

// startTraceWeft starts weft on dataDir (reused across restarts).
func startTraceWeft(tb testing.TB, name, dataDir string, extra ...string) *traceWeft {
	tb.Helper()
	w := &traceWeft{grpcAddr: freeAddr(tb), httpAddr: freeAddr(tb)}
	addr := freeAddr(tb)
	args := append([]string{"-data-dir", dataDir, "-http-addr", addr, "-otlp-grpc-addr", w.grpcAddr,
		"-otlp-http-addr", w.httpAddr, "-log-level", "warn"}, extra...)
	w.p = startProcess(tb, name, buildWeft(tb), args...)
	w.base = "http://" + addr
	waitReady(tb, w.p, w.base+"/-/ready")
	return w
}

func httpGet(tb testing.TB, u, accept string) (int, []byte) {
	tb.Helper()
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
	return resp.StatusCode, b
}

// tempoSearch runs /api/search as Grafana does and decodes the answer
// strictly.
func tempoSearch(tb testing.TB, base, q string, start, end time.Time) *tempopb.SearchResponse {
	tb.Helper()
	p := url.Values{"q": {q}, "limit": {"10000"}, "spss": {"1000"},
		"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix()+1, 10)}}
	code, body := httpGet(tb, base+"/api/search?"+p.Encode(), "application/json")
	if code != http.StatusOK {
		tb.Fatalf("search %s: %d %s", q, code, body)
	}
	var resp tempopb.SearchResponse
	if err := protojson.Unmarshal(body, &resp); err != nil {
		tb.Fatalf("search %s: strict decode: %v", q, err)
	}
	return &resp
}

// tempoTrace fetches a trace as Grafana does (v2, protobuf); nil on 404.
func tempoTrace(tb testing.TB, base string, id pcommon.TraceID) ptrace.Traces {
	tb.Helper()
	code, body := httpGet(tb, base+"/api/v2/traces/"+hex.EncodeToString(id[:]), "application/protobuf")
	if code == http.StatusNotFound {
		return ptrace.NewTraces()
	}
	if code != http.StatusOK {
		tb.Fatalf("trace %x: %d %s", id, code, body)
	}
	var resp tempopb.TraceByIDResponse
	if err := proto.Unmarshal(body, &resp); err != nil {
		tb.Fatal(err)
	}
	inner, _ := proto.Marshal(resp.Trace)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(inner)
	if err != nil {
		tb.Fatal(err)
	}
	return td
}

// exportHTTP sends td to an OTLP/HTTP traces endpoint and returns the
// status and response. It may run outside the test goroutine.
func exportHTTP(u string, td ptrace.Traces) (int, ptraceotlp.ExportResponse, error) {
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return 0, ptraceotlp.NewExportResponse(), err
	}
	resp, err := http.Post(u, "application/x-protobuf", bytes.NewReader(body))
	out := ptraceotlp.NewExportResponse()
	if err != nil {
		return 0, out, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := out.UnmarshalProto(b); err != nil {
			return resp.StatusCode, out, fmt.Errorf("decode export response: %w", err)
		}
	}
	return resp.StatusCode, out, nil
}

// spanCount sums the spans of a search's traces (serviceStats cover the
// whole trace).
func spanCount(r *tempopb.SearchResponse) int {
	n := 0
	for _, t := range r.Traces {
		for _, s := range t.ServiceStats {
			n += int(s.SpanCount)
		}
	}
	return n
}
