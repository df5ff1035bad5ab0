package e2e

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestTracesTelemetrygen drives the real weft's OTLP traces receiver with
// the pinned telemetrygen over gRPC and over HTTP and checks, through the
// Tempo API as Grafana calls it, that exactly the spans sent are stored,
// whole traces of parent and children, under the resource's service and
// workload-context labels.
func TestTracesTelemetrygen(t *testing.T) {
	bin := peerBinary(t, "telemetrygen")
	w := startTraceWeft(t, "weft", filepath.Join(t.TempDir(), "data"))
	const traces, children = 25, 3
	for _, transport := range []string{"grpc", "http"} {
		t.Run(transport, func(t *testing.T) {
			svc := "tg-traces-" + transport
			start := time.Now().Add(-time.Second)
			args := []string{"traces", "--otlp-insecure", "--traces", strconv.Itoa(traces), "--child-spans", strconv.Itoa(children),
				"--rate", "0", "--workers", "1", "--service", svc, "--otlp-attributes", `ai.run.id="r-` + transport + `"`}
			if transport == "grpc" {
				args = append(args, "--otlp-endpoint", w.grpcAddr)
			} else {
				args = append(args, "--otlp-http", "--otlp-endpoint", w.httpAddr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
				t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
			}
			end := time.Now()
			resp := tempoSearch(t, w.base, `{ resource.service.name = "`+svc+`" }`, start, end)
			if len(resp.Traces) != traces || spanCount(resp) != traces*(1+children) {
				t.Fatalf("%d traces, %d spans stored; want %d, %d", len(resp.Traces), spanCount(resp), traces, traces*(1+children))
			}
			// The workload context is a stream label: the same search by run.
			byRun := tempoSearch(t, w.base, `{ resource.ai.run.id = "r-`+transport+`" && kind = server }`, start, end)
			if len(byRun.Traces) != traces {
				t.Fatalf("by run_id: %d traces, want %d", len(byRun.Traces), traces)
			}
			for _, tr := range resp.Traces[:3] {
				id, _ := parseHexTraceID(tr.TraceID)
				if n := tempoTrace(t, w.base, id).SpanCount(); n != 1+children {
					t.Fatalf("trace %s: %d spans, want %d", tr.TraceID, n, 1+children)
				}
			}
		})
	}
}

func parseHexTraceID(s string) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	s = strings.Repeat("0", 32-len(s)) + s
	for i := range id {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return id, false
		}
		id[i] = byte(v)
	}
	return id, true
}

// collectorBatch is shaped like an OpenTelemetry Collector otlp exporter's
// batch: many resources, several scopes each, spans of traces that cross
// the resources.
func collectorBatch(seed byte, resources int) ptrace.Traces {
	td := ptrace.NewTraces()
	base := time.Now().Add(-time.Minute)
	for r := 0; r < resources; r++ {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(r%5))
		rs.Resource().Attributes().PutStr("k8s.pod.name", "pod-"+strconv.Itoa(r))
		for sc := 0; sc < 2; sc++ {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("lib-" + strconv.Itoa(sc))
			for k := 0; k < 3; k++ {
				sp := ss.Spans().AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{0: seed, 1: byte(k), 15: 1})
				sp.SetSpanID(pcommon.SpanID{0: seed, 1: byte(r), 2: byte(sc), 3: byte(k), 7: 1})
				sp.SetName("op")
				sp.SetKind(ptrace.SpanKindServer)
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(k+1) * time.Millisecond)))
			}
		}
	}
	return td
}

// TestTracesBadInputAndCollectorBatches sends Collector-shaped batches
// over gRPC, then bad input of every kind, and checks the errors are clear
// 4xx / INVALID_ARGUMENT with reasons while the good traces stay whole.
func TestTracesBadInputAndCollectorBatches(t *testing.T) {
	w := startTraceWeft(t, "weft", filepath.Join(t.TempDir(), "data"))
	conn, err := grpc.NewClient(w.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const resources = 20
	resp, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(collectorBatch(1, resources)))
	if err != nil || resp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("collector batch: %v %v", err, resp.PartialSuccess())
	}
	// Bad span among good ones: partial success over gRPC.
	mixed := collectorBatch(2, 2)
	bad := mixed.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	bad.SetSpanID(pcommon.SpanID{9})
	resp, err = client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(mixed))
	if err != nil || resp.PartialSuccess().RejectedSpans() != 1 || !strings.Contains(resp.PartialSuccess().ErrorMessage(), "invalid trace id") {
		t.Fatalf("mixed batch: %v %v", err, resp.PartialSuccess())
	}
	// All invalid: INVALID_ARGUMENT with the reason.
	allBad := ptrace.NewTraces()
	sp := allBad.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetStartTimestamp(100)
	sp.SetEndTimestamp(50)
	_, err = client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(allBad))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "ends before it starts") {
		t.Fatalf("all invalid over gRPC: %v", err)
	}
	// Garbage over HTTP: 400 with the decode error; a wrong content type 415.
	r, err := http.Post("http://"+w.httpAddr+"/v1/traces", "application/x-protobuf", strings.NewReader("\xff\xff garbage"))
	if err != nil || r.StatusCode != http.StatusBadRequest {
		t.Fatalf("garbage: %v %v", err, r)
	}
	r.Body.Close()
	r, err = http.Post(w.base+"/otlp/v1/traces", "text/plain", strings.NewReader("x"))
	if err != nil || r.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %v %v", err, r)
	}
	r.Body.Close()

	// The good traces are whole: 3 traces, each with a span per resource and scope.
	for k := 0; k < 3; k++ {
		if n := tempoTrace(t, w.base, pcommon.TraceID{0: 1, 1: byte(k), 15: 1}).SpanCount(); n != resources*2 {
			t.Fatalf("trace %d: %d spans, want %d", k, n, resources*2)
		}
	}
	code, body := httpGet(t, w.base+"/api/v2/search/tag/resource.service.name/values", "")
	if code != 200 || !strings.Contains(string(body), `"svc-4"`) {
		t.Fatalf("service values: %d %s", code, body)
	}
}

// TestTracesKillNine: every span weft acknowledged survives kill -9. A
// sender exports one trace per request over OTLP/HTTP and records the
// acknowledged ones while weft is killed mid-stream; after a restart on the
// same data every acknowledged trace is found whole.
func TestTracesKillNine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	w := startTraceWeft(t, "weft", dir)
	const spansPer = 4
	var (
		mu    sync.Mutex
		acked []pcommon.TraceID
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := pcommon.TraceID{0: 0xee, 14: byte(i >> 8), 15: byte(i)}
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", "crash")
			now := time.Now()
			for j := 0; j < spansPer; j++ {
				sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
				sp.SetTraceID(id)
				sp.SetSpanID(pcommon.SpanID{7: byte(j + 1)})
				sp.SetName("step")
				sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
				sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
			}
			code, _, err := exportHTTP("http://"+w.httpAddr+"/v1/traces", td)
			if err != nil || code != http.StatusOK {
				return // killed
			}
			mu.Lock()
			acked = append(acked, id)
			mu.Unlock()
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := w.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.p.done
	close(stop)
	<-done
	mu.Lock()
	ids := append([]pcommon.TraceID(nil), acked...)
	mu.Unlock()
	if len(ids) < 10 {
		t.Fatalf("only %d traces acknowledged before the kill", len(ids))
	}
	w2 := startTraceWeft(t, "weft-restarted", dir)
	for _, id := range ids {
		if n := tempoTrace(t, w2.base, id).SpanCount(); n != spansPer {
			t.Fatalf("acknowledged trace %x: %d spans after kill -9, want %d (%d acknowledged)", id, n, spansPer, len(ids))
		}
	}
	t.Logf("%d acknowledged traces survived kill -9", len(ids))
}
