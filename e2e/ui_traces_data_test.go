package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The trace and rule data of the UI's trace and alert tests, beside the
// training run of ui_data_test.go: the trace of the faulty rank's failed
// step (uiTraceID, the trace_id of its NCCL error line), sent over
// OTLP/HTTP; gateway traces from the pinned telemetrygen; an OpenTelemetry
// SDK program's trace with a log line inside a span (otelapp); and rule
// files that fire on the run.

// The failed step's spans: the step, its data loading (another service),
// forward, backward and the allreduce that timed out.
const (
	uiStepSpan      = "train_step"
	uiAllreduceSpan = "allreduce"
	uiAllreduceMsg  = "NCCL watchdog timeout: rank 5 missed allreduce"
	uiGatewaySvc    = "gateway"
	uiGatewayTraces = 5
	uiGatewayKids   = 2
)

// uiTraceSpans is the failed step in waterfall order: name, service,
// depth.
var uiTraceSpans = []struct {
	name, service string
	depth         int
}{
	{uiStepSpan, "trainer", 0}, {"load_batch", "dataloader", 1}, {"read_shard", "dataloader", 2},
	{"forward", "trainer", 1}, {"backward", "trainer", 1}, {uiAllreduceSpan, "trainer", 1},
}

// loadTrainingTrace sends the failed step's trace, starting at start, to an
// OTLP/HTTP traces endpoint (host:port).
func loadTrainingTrace(t testing.TB, otlpHTTP string, start time.Time) {
	t.Helper()
	tid, ok := parseHexTraceID(uiTraceID)
	if !ok {
		t.Fatal("bad uiTraceID")
	}
	td := ptrace.NewTraces()
	resource := func(svc string) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		a := rs.Resource().Attributes()
		a.PutStr("service.name", svc)
		a.PutStr("ai.run.id", uiRun)
		a.PutStr("ai.rank", uiFaultyRank)
		a.PutStr("host.name", uiFaultyHost)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("weft-e2e")
		return ss.Spans()
	}
	trainer, loader := resource("trainer"), resource("dataloader")
	ms := func(n int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(start.Add(time.Duration(n) * time.Millisecond))
	}
	add := func(ss ptrace.SpanSlice, id, parent byte, name string, kind ptrace.SpanKind, from, to int) ptrace.Span {
		s := ss.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0xa0, id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0xa0, parent})
		}
		s.SetName(name)
		s.SetKind(kind)
		s.SetStartTimestamp(ms(from))
		s.SetEndTimestamp(ms(to))
		return s
	}
	add(trainer, 1, 0, uiStepSpan, ptrace.SpanKindInternal, 0, 2600).Attributes().PutInt("training.step", 1240)
	add(loader, 2, 1, "load_batch", ptrace.SpanKindClient, 0, 150)
	add(loader, 6, 2, "read_shard", ptrace.SpanKindInternal, 10, 120).Attributes().PutStr("dataset.shard", "shard-0042")
	add(trainer, 3, 1, "forward", ptrace.SpanKindInternal, 150, 900)
	add(trainer, 4, 1, "backward", ptrace.SpanKindInternal, 900, 1800)
	ar := add(trainer, 5, 1, uiAllreduceSpan, ptrace.SpanKindClient, 1800, 2600)
	ar.Status().SetCode(ptrace.StatusCodeError)
	ar.Status().SetMessage(uiAllreduceMsg)
	ar.Attributes().PutStr("nccl.op", "allreduce")
	ar.Attributes().PutInt("nccl.bytes", 268435456)
	ev := ar.Events().AppendEmpty()
	ev.SetName("watchdog timeout")
	ev.SetTimestamp(ms(2500))
	code, resp, err := exportHTTP("http://"+otlpHTTP+"/v1/traces", td)
	if err != nil || code != 200 || resp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("export the training trace: %d %v (rejected %d)", code, err, resp.PartialSuccess().RejectedSpans())
	}
}

// loadGatewayTraces sends uiGatewayTraces traces of service "gateway"
// (a root and uiGatewayKids children each) with the pinned telemetrygen
// over OTLP/gRPC.
func loadGatewayTraces(t testing.TB, otlpGRPC string) {
	t.Helper()
	bin := peerBinary(t, "telemetrygen")
	args := []string{"traces", "--otlp-insecure", "--otlp-endpoint", otlpGRPC, "--traces", strconv.Itoa(uiGatewayTraces),
		"--child-spans", strconv.Itoa(uiGatewayKids), "--rate", "0", "--workers", "1", "--service", uiGatewaySvc, "--status-code", "Ok"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
	}
}

// runOtelApp builds and runs e2e/internal/otelapp against an OTLP/HTTP
// endpoint (host:port): one trace of two spans (run r-otel), a log line in
// its child span, a latency histogram with the trace as exemplar. It
// returns the trace ID.
func runOtelApp(t testing.TB, otlpHTTP, service string) string {
	t.Helper()
	app := filepath.Join(t.TempDir(), "otelapp")
	build := exec.Command("go", "build", "-o", app, "./e2e/internal/otelapp")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build otelapp: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, app, "-endpoint", otlpHTTP, "-service", service).CombinedOutput()
	if err != nil {
		t.Fatalf("otelapp: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	if len(id) != 32 {
		t.Fatalf("otelapp printed %q, want a trace ID", out)
	}
	return id
}

// The UI test's rules, evaluated every second: on the training run's
// data, GPUUtilLow fires for the faulty GPU, GPUHot is pending for it (its
// `for` is an hour), the "limited" group fails (8 alerts over its limit of
// 1), and the LogQL rule NCCLWatchdogTimeout fires for the run.
const (
	uiPromRules = `groups:
  - name: gpu
    interval: 1s
    rules:
      - alert: GPUUtilLow
        expr: last_over_time(DCGM_FI_DEV_GPU_UTIL{run_id!=""}[1h]) < 50
        labels: {severity: critical}
        annotations:
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.Hostname }} at {{ $value }}% utilization'
          runbook_url: https://example.com/runbooks/GPUUtilLow
      - alert: GPUHot
        expr: last_over_time(DCGM_FI_DEV_GPU_TEMP[1h]) > 80
        for: 1h
        labels: {severity: warning}
      - record: run:gpu_util:avg
        expr: avg by (run_id) (last_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))
  - name: limited
    interval: 1s
    limit: 1
    rules:
      - alert: AnyGPUTemp
        expr: last_over_time(DCGM_FI_DEV_GPU_TEMP[1h]) > 0
`
	uiLogRules = `groups:
  - name: training-logs
    interval: 1s
    rules:
      - alert: NCCLWatchdogTimeout
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "NCCL watchdog" [2h])) > 0
        labels: {severity: critical}
        annotations:
          summary: 'NCCL watchdog timeout in run {{ $labels.run_id }}'
`
)

// uiRuleFlags writes the rule files and returns weft's flags for them.
func uiRuleFlags(t testing.TB) []string {
	t.Helper()
	dir := t.TempDir()
	prom, logs := filepath.Join(dir, "gpu.yml"), filepath.Join(dir, "logs.yml")
	for p, body := range map[string]string{prom: uiPromRules, logs: uiLogRules} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"-rules.file", prom, "-rules.logql-file", logs}
}

// loadBenchTrace sends BenchmarkUI's trace to weft's main port: n spans
// over 8 services, each span the child of span (i-1)/8 (four levels for
// 1,000), the whole trace 4 s long. It returns the trace ID.
func loadBenchTrace(t testing.TB, base string, n int) string {
	t.Helper()
	const id = "be0c00000000000000000000000000ce"
	tid, _ := parseHexTraceID(id)
	td := ptrace.NewTraces()
	var svcSpans [8]ptrace.SpanSlice
	for k := range svcSpans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(k))
		svcSpans[k] = rs.ScopeSpans().AppendEmpty().Spans()
	}
	start := time.Now().Add(-time.Minute)
	spanID := func(i int) pcommon.SpanID { return pcommon.SpanID{0xb0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)} }
	// Each level's spans split their parent's time among up to 8 children.
	type window struct{ from, to time.Duration }
	win := make([]window, n)
	for i := range n {
		if i == 0 {
			win[0] = window{0, 4 * time.Second}
		} else {
			p := win[(i-1)/8]
			w := (p.to - p.from) / 8
			k := time.Duration((i - 1) % 8)
			win[i] = window{p.from + k*w, p.from + (k+1)*w - w/10}
		}
		s := svcSpans[i%8].AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(spanID(i))
		if i > 0 {
			s.SetParentSpanID(spanID((i - 1) / 8))
		}
		s.SetName("op-" + strconv.Itoa(i%37))
		s.SetKind(ptrace.SpanKindInternal)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(win[i].from)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(win[i].to)))
		s.Attributes().PutInt("i", int64(i))
	}
	code, resp, err := exportHTTP(base+"/otlp/v1/traces", td)
	if err != nil || code != 200 || resp.PartialSuccess().RejectedSpans() != 0 {
		t.Fatalf("export the bench trace: %d %v", code, err)
	}
	return id
}
