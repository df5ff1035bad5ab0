package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/weftdb/weft/bench/internal/push"
	"github.com/weftdb/weft/bench/scenario"
)

// TraceTarget is how the trace benchmark talks to one system: its process,
// where OTLP/HTTP traces go and its query dialect.
type TraceTarget struct {
	Spec TargetSpec
	// PushURL is the OTLP/HTTP traces endpoint of the started process.
	PushURL func(p *Process) string
	Queries TraceQuerier
}

// TraceQuerier runs the benchmark's trace queries in one system's dialect.
// Implementations are safe for concurrent use.
type TraceQuerier interface {
	// TraceSpans fetches trace id and returns how many spans it holds.
	TraceSpans(ctx context.Context, c *http.Client, base string, id scenario.TraceID) (int, error)
	// Search returns the IDs of the traces s finds.
	Search(ctx context.Context, c *http.Client, base string, s TraceSearch) ([]scenario.TraceID, error)
	// ByIDQuery and SearchQuery describe the requests, for the report.
	ByIDQuery() string
	SearchQuery() string
	// DurationOnAnySpan reports whether the search matches the service and
	// the minimum duration on any spans of a trace, not one span with both.
	DurationOnAnySpan() bool
}

// WeftTraceTarget runs weft: OTLP/HTTP traces on its main port, the Tempo
// API for queries.
func WeftTraceTarget(bin, argTmpl string) TraceTarget {
	return TraceTarget{Spec: WeftSpec(bin, argTmpl), PushURL: func(p *Process) string { return p.Base + "/otlp/v1/traces" }, Queries: weftTraces{}}
}

// TraceRunOptions configure one trace benchmark run.
type TraceRunOptions struct {
	// QueryRepeats is how many times the lookups and searches are run.
	QueryRepeats int
	ReadyTimeout time.Duration
	StopTimeout  time.Duration
	// SettleMax bounds the wait after ingest for background work to stop
	// using CPU; that CPU counts as ingest CPU.
	SettleMax time.Duration
	WorkDir   string
	KeepData  bool
	Logger    *slog.Logger // nil: no logs
}

// DefaultTraceRunOptions suit the measurement of record on a few cores.
func DefaultTraceRunOptions() TraceRunOptions {
	return TraceRunOptions{QueryRepeats: 3, ReadyTimeout: 2 * time.Minute, StopTimeout: 2 * time.Minute, SettleMax: 30 * time.Second, WorkDir: os.TempDir()}
}

// TraceQueryResult is one kind of query's latencies over every run and how
// many answers differed from the generator's.
type TraceQueryResult struct {
	Query  string  `json:"query"`
	P50S   float64 `json:"p50_s"`
	P99S   float64 `json:"p99_s"`
	Runs   int     `json:"runs"`
	Wrong  int     `json:"wrong"`
	Detail string  `json:"detail,omitempty"` // the first wrong answer
	Error  string  `json:"error,omitempty"`
}

// Correct reports whether every answer matched.
func (q TraceQueryResult) Correct() bool { return q.Runs > 0 && q.Wrong == 0 && q.Error == "" }

// TraceSystemResult is everything measured on one system.
type TraceSystemResult struct {
	System            string           `json:"system"`
	SpansSent         int              `json:"spans_sent"`
	SpansAccepted     int              `json:"spans_accepted"`
	Rejections        int              `json:"rejections"`
	LastPushError     string           `json:"last_push_error,omitempty"`
	IngestSpansPerS   float64          `json:"ingest_spans_per_s_wall"`
	CPUSecondsIngest  float64          `json:"cpu_seconds_ingest"`
	SpansPerCPUSecond float64          `json:"spans_per_s_per_core"`
	PushP99S          float64          `json:"push_p99_s"`
	PeakRSSBytes      int64            `json:"peak_rss_bytes"`
	DiskBytes         int64            `json:"disk_bytes"`
	DiskApparentBytes int64            `json:"disk_apparent_bytes"`
	DiskBytesPerSpan  float64          `json:"disk_bytes_per_span"`
	GracefulStop      bool             `json:"graceful_stop"`
	ByID              TraceQueryResult `json:"trace_by_id"`
	Search            TraceQueryResult `json:"search"`
	Error             string           `json:"error,omitempty"`
}

// RunTraceTarget starts t, sends w's requests unpaced, looks traces up by
// ID, runs the searches, stops t gracefully and measures its data folder.
// Errors end up in the result; the process is always stopped.
func RunTraceTarget(ctx context.Context, t TraceTarget, w *TraceWorkload, o TraceRunOptions) (res TraceSystemResult) {
	res = TraceSystemResult{System: t.Spec.Name, SpansSent: w.Spans}
	dir, err := os.MkdirTemp(o.WorkDir, "weft-bench-traces-"+t.Spec.Name+"-")
	if err != nil {
		res.Error = fmt.Sprintf("temp dir: %v", err)
		return res
	}
	if !o.KeepData {
		defer os.RemoveAll(dir)
	}
	info := func(msg string, args ...any) {
		if o.Logger != nil {
			o.Logger.Info(msg, append([]any{"system", t.Spec.Name}, args...)...)
		}
	}
	info("starting", "dir", dir)
	p, err := Start(ctx, t.Spec, dir, o.ReadyTimeout)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.Kill()
	client := newClient(w.Opts.Workers)
	defer client.CloseIdleConnections()
	fail := func(step string, err error) TraceSystemResult {
		res.Error = fmt.Sprintf("%s: %v (log tail: %s)", step, err, p.LogTail(400))
		return res
	}
	cpu := func() float64 { c, _ := ReadCPUSeconds(p.Pid()); return c }

	// 1. Ingest, unpaced; the CPU of background work the ingest caused
	// (until the process goes idle) counts.
	info("ingest", "spans", w.Spans, "requests", len(w.Requests))
	c0 := cpu()
	st := pushTraces(ctx, client, t.PushURL(p), w)
	settle(ctx, cpu, o.SettleMax)
	res.CPUSecondsIngest = cpu() - c0
	res.PeakRSSBytes = p.PeakRSS()
	res.SpansAccepted, res.Rejections, res.LastPushError = st.AcceptedSamples, st.Rejections, st.LastError
	res.PushP99S = Percentile(st.Latencies, 0.99).Seconds()
	if st.Wall > 0 {
		res.IngestSpansPerS = float64(st.AcceptedSamples) / st.Wall.Seconds()
	}
	if res.CPUSecondsIngest > 0 {
		res.SpansPerCPUSecond = float64(st.AcceptedSamples) / res.CPUSecondsIngest
	}
	if st.AcceptedSamples == 0 {
		return fail("ingest", fmt.Errorf("no span accepted: %s", st.LastError))
	}

	// 2. Trace by ID, 3. search by service and minimum duration.
	info("trace by id", "traces", len(w.Lookups), "repeats", o.QueryRepeats)
	res.ByID = lookupTraces(ctx, t.Queries, client, p.Base, w.Lookups, o.QueryRepeats)
	info("search", "searches", len(w.Searches), "repeats", o.QueryRepeats)
	res.Search = searchTraces(ctx, t.Queries, client, p.Base, w.Searches, o.QueryRepeats)

	// 4. Graceful stop (both stores flush), then the data folder.
	info("stopping")
	res.GracefulStop = p.Stop(o.StopTimeout)
	if res.DiskBytes, res.DiskApparentBytes, err = DirSize(p.DataDir); err != nil {
		return fail("disk size", err)
	}
	if res.SpansAccepted > 0 {
		res.DiskBytesPerSpan = float64(res.DiskBytes) / float64(res.SpansAccepted)
	}
	return res
}

func lookupTraces(ctx context.Context, q TraceQuerier, c *http.Client, base string, ls []TraceLookup, repeats int) TraceQueryResult {
	r := TraceQueryResult{Query: q.ByIDQuery()}
	var lat []time.Duration
	for range max(repeats, 1) {
		for _, l := range ls {
			if ctx.Err() != nil {
				r.Error = ctx.Err().Error()
				break
			}
			t0 := time.Now()
			n, err := q.TraceSpans(ctx, c, base, l.ID)
			lat = append(lat, time.Since(t0))
			switch {
			case err != nil:
				r.Wrong++
				if r.Detail == "" {
					r.Detail = fmt.Sprintf("trace %x: %v", l.ID, err)
				}
			case n != l.Spans:
				r.Wrong++
				if r.Detail == "" {
					r.Detail = fmt.Sprintf("trace %x: %d spans, want %d", l.ID, n, l.Spans)
				}
			}
		}
	}
	r.Runs = len(lat)
	r.P50S, r.P99S = Percentile(lat, 0.5).Seconds(), Percentile(lat, 0.99).Seconds()
	return r
}

func searchTraces(ctx context.Context, q TraceQuerier, c *http.Client, base string, ss []TraceSearch, repeats int) TraceQueryResult {
	r := TraceQueryResult{Query: q.SearchQuery()}
	var lat []time.Duration
	for range max(repeats, 1) {
		for _, s := range ss {
			if ctx.Err() != nil {
				r.Error = ctx.Err().Error()
				break
			}
			t0 := time.Now()
			got, err := q.Search(ctx, c, base, s)
			lat = append(lat, time.Since(t0))
			if q.DurationOnAnySpan() {
				s.May = s.MayAnySpan
			}
			if msg := checkSearch(s, got, err); msg != "" {
				r.Wrong++
				if r.Detail == "" {
					r.Detail = fmt.Sprintf("service %s, minDuration %s: %s", s.Service, s.MinDuration, msg)
				}
			}
		}
	}
	r.Runs = len(lat)
	r.P50S, r.P99S = Percentile(lat, 0.5).Seconds(), Percentile(lat, 0.99).Seconds()
	return r
}

// checkSearch says what is wrong with an answer ("" when nothing is).
func checkSearch(s TraceSearch, got []scenario.TraceID, err error) string {
	if err != nil {
		return err.Error()
	}
	seen := map[scenario.TraceID]bool{}
	extra := 0
	for _, id := range got {
		seen[id] = true
		if !s.May[id] {
			extra++
		}
	}
	missing := 0
	for id := range s.Must {
		if !seen[id] {
			missing++
		}
	}
	if extra > 0 || missing > 0 {
		return fmt.Sprintf("%d traces found, %d of them unexpected, %d of %d expected missing", len(got), extra, missing, len(s.Must))
	}
	return ""
}

// pushTraces sends every request over Workers lanes (request i on lane
// i mod Workers, in order), unpaced, retrying like pushLogs.
// AcceptedSamples counts spans.
func pushTraces(ctx context.Context, c *http.Client, url string, w *TraceWorkload) SendStats {
	var (
		mu  sync.Mutex
		tot SendStats
		wg  sync.WaitGroup
	)
	s := push.Sender{Client: c, URL: url, Policy: retryPolicy(time.Minute), Header: http.Header{
		"Content-Type": {"application/x-protobuf"}, "Content-Encoding": {"gzip"}, "User-Agent": {"weft-bench"}}}
	began := time.Now()
	for lane := range w.Opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st SendStats
			for i := lane; i < len(w.Requests) && ctx.Err() == nil; i += w.Opts.Workers {
				sendCounted(ctx, &s, w.Requests[i].Body, w.Requests[i].Spans, &st)
			}
			mu.Lock()
			tot.merge(st)
			mu.Unlock()
		}()
	}
	wg.Wait()
	tot.Wall = time.Since(began)
	return tot
}

// jaegerConfig is Jaeger v2's configuration (an OpenTelemetry Collector
// config, cmd/jaeger/config-badger.yaml of v1.76.0 trimmed): OTLP
// receivers, the batch processor, Badger on disk for the spans and the
// query API. Every listener is on loopback.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %[1]s
  jaeger_query:
    storage:
      traces: bench_store
    http:
      endpoint: %[2]s
    grpc:
      endpoint: %[3]s
  jaeger_storage:
    backends:
      bench_store:
        badger:
          directories:
            keys: %[4]s
            values: %[5]s
          ephemeral: false
          ttl:
            spans: 720h
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[6]s
      http:
        endpoint: %[7]s
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: bench_store
`

// JaegerTraceTarget runs Jaeger v2 (make jaeger) with Badger under the data
// directory, OTLP/HTTP for the spans and its query API (/api/traces).
func JaegerTraceTarget(bin string) TraceTarget {
	var otlpHTTP string // chosen when the process is configured
	spec := TargetSpec{
		Name: "jaeger", Binary: bin, ReadyPath: "/api/services",
		Args: func(dir, dataDir, addr string) ([]string, error) {
			var ports [4]string
			for i := range ports {
				a, err := FreeAddr()
				if err != nil {
					return nil, err
				}
				ports[i] = a
			}
			otlpHTTP = ports[3]
			cfg := fmt.Sprintf(jaegerConfig, ports[0], addr, ports[1], filepath.Join(dataDir, "keys"), filepath.Join(dataDir, "values"), ports[2], ports[3])
			path := filepath.Join(dir, "jaeger.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				return nil, fmt.Errorf("write jaeger config: %w", err)
			}
			return []string{"--config", path}, nil
		},
	}
	return TraceTarget{Spec: spec, PushURL: func(*Process) string { return "http://" + otlpHTTP + "/v1/traces" }, Queries: jaegerTraces{}}
}
