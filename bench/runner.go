package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"
)

// RunOptions configure one target's benchmark run.
type RunOptions struct {
	Step StepOptions
	// QueryRepeats is how many times each suite query runs (latency
	// percentiles are over all runs; the first answer is compared).
	QueryRepeats int
	// QueryBudget stops repeating a query once its runs took this long (it
	// always runs once), which bounds the suite at large scales.
	QueryBudget  time.Duration
	ReadyTimeout time.Duration
	StopTimeout  time.Duration
	// SpikeVisibleTimeout bounds the wait for the spike's series to show up
	// in queries.
	SpikeVisibleTimeout time.Duration
	// WorkDir holds one temporary directory per target, removed afterwards
	// unless KeepData is set.
	WorkDir  string
	KeepData bool
	Logger   *slog.Logger
}

// DefaultRunOptions suit the small scale.
func DefaultRunOptions() RunOptions {
	return RunOptions{
		Step:                DefaultStepOptions(),
		QueryRepeats:        5,
		QueryBudget:         20 * time.Second,
		ReadyTimeout:        2 * time.Minute,
		StopTimeout:         2 * time.Minute,
		SpikeVisibleTimeout: 2 * time.Minute,
		WorkDir:             os.TempDir(),
	}
}

// ProtocolResult is one write protocol's throughput on a target.
type ProtocolResult struct {
	Protocol        Protocol `json:"protocol"`
	SamplesPerS     float64  `json:"samples_per_s"`
	AcceptedSamples int      `json:"accepted_samples"`
	Requests        int      `json:"requests"`
	Rejections      int      `json:"rejections"`
	LastError       string   `json:"last_error,omitempty"`
	// Stored says a query after the segment found every GPU series of its
	// last scrape; a 2xx without the data (a receiver ignoring a message it
	// does not know) is not throughput.
	Stored    bool    `json:"stored"`
	WriteP50S float64 `json:"write_p50_s"`
	WriteP99S float64 `json:"write_p99_s"`
}

// SpikeResult is the burst of new series: how long the target took to
// acknowledge all of it and to show it in queries.
type SpikeResult struct {
	Series     int     `json:"series"`
	AbsorbS    float64 `json:"absorb_s"`
	VisibleS   float64 `json:"visible_s"` // -1 if not visible within the timeout
	Rejections int     `json:"rejections"`
	LastError  string  `json:"last_error,omitempty"`
}

// QueryResult is one suite query's latency and answer on a target.
type QueryResult struct {
	Name      string   `json:"name"`
	P50S      float64  `json:"p50_s"`
	P99S      float64  `json:"p99_s"`
	Error     string   `json:"error,omitempty"`
	Diffs     []string `json:"diffs,omitempty"` // against the reference system
	answer    *Result
	latencies []time.Duration
}

// SystemResult is everything measured on one system. The first keys are the
// report's headline figures.
type SystemResult struct {
	System                  string  `json:"system"`
	MaxIngestSamplesPerS    float64 `json:"max_ingest_samples_per_s"`
	RSSBytesPerActiveSeries float64 `json:"rss_bytes_per_active_series"`
	CPUSecondsPerMillion    float64 `json:"cpu_seconds_per_million_samples"`
	DiskBytesPerSample      float64 `json:"disk_bytes_per_sample"`
	QueryP50S               float64 `json:"query_p50_s"`
	QueryP99S               float64 `json:"query_p99_s"`

	// BucketBytes and LogBytes are a scale-out cluster's blocks in the
	// bucket and its broker's log (DiskBytes is its ingesters' stores).
	BucketBytes int64 `json:"bucket_bytes,omitempty"`
	LogBytes    int64 `json:"log_bytes,omitempty"`

	Error          string `json:"error,omitempty"`
	MaxIngestBound bool   `json:"max_ingest_is_lower_bound"`
	// RW1DrainSamplesPerS is the unpaced (closed-loop) RW1 rate after the
	// rate search; 0 when nothing was left to drain.
	RW1DrainSamplesPerS float64          `json:"rw1_unpaced_samples_per_s"`
	ActiveSeries        int              `json:"active_series"`
	SamplesSent         int              `json:"samples_sent"`
	SamplesAccepted     int              `json:"samples_accepted"`
	PeakRSSBytes        int64            `json:"peak_rss_bytes"`
	IngestRSSBytes      int64            `json:"ingest_peak_rss_bytes"`
	CPUSecondsIngest    float64          `json:"cpu_seconds_ingest"`
	DiskBytes           int64            `json:"disk_bytes"`
	DiskApparentBytes   int64            `json:"disk_apparent_bytes"`
	GracefulStop        bool             `json:"graceful_stop"`
	Steps               []StepResult     `json:"rate_steps"`
	Protocols           []ProtocolResult `json:"protocols"`
	Spike               *SpikeResult     `json:"spike,omitempty"`
	Queries             []QueryResult    `json:"queries"`
	QueryDiffs          int              `json:"queries_differing"`
}

func (o RunOptions) log() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// newClient returns an HTTP client with enough idle connections for the
// send lanes.
func newClient(lanes int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = lanes * 2
	tr.MaxIdleConnsPerHost = lanes * 2
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// system is a running system under test: one process (*Process) or a
// scale-out cluster of them (*Cluster).
type system interface {
	// WriteBase is where writes go, QueryBase where queries go.
	WriteBase() string
	QueryBase() string
	// CPUSeconds is the CPU time its processes used so far.
	CPUSeconds() float64
	PeakRSS() int64
	Flush(ctx context.Context) error
	Stop(timeout time.Duration) bool
	Kill()
	// DiskBytes measures its data (allocated and apparent bytes).
	DiskBytes() (allocated, apparent int64, err error)
	LogTail(n int) string
}

// RunTarget starts spec, replays w, runs the query suite, sends the spike,
// stops the target gracefully and measures its data directory. Errors end up
// in the result's Error; the process is always stopped.
func RunTarget(ctx context.Context, spec TargetSpec, w *Workload, o RunOptions) SystemResult {
	return runSystem(ctx, spec.Name, spec.WritePath, spec.OTLPPath, func(ctx context.Context, dir string) (system, error) {
		p, err := Start(ctx, spec, dir, o.ReadyTimeout)
		if err != nil {
			return nil, err
		}
		return p, nil
	}, w, o)
}

// runSystem is RunTarget over any system start returns.
func runSystem(ctx context.Context, name, writePath, otlpPath string, start func(ctx context.Context, dir string) (system, error), w *Workload, o RunOptions) (res SystemResult) {
	res = SystemResult{System: name, ActiveSeries: w.ActiveSeries, SamplesSent: w.TotalSamples()}
	lg := o.log().With("system", name)
	dir, err := os.MkdirTemp(o.WorkDir, "weft-bench-"+name+"-")
	if err != nil {
		res.Error = fmt.Sprintf("temp dir: %v", err)
		return res
	}
	if !o.KeepData {
		defer os.RemoveAll(dir)
	}
	lg.Info("starting", "dir", dir)
	p, err := start(ctx, dir)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.Kill()
	client := newClient(w.Opts.Workers)
	qc := &QueryClient{Client: client, Base: p.QueryBase()}
	cpu := p.CPUSeconds
	fail := func(step string, err error) SystemResult {
		res.Error = fmt.Sprintf("%s: %v (log tail: %s)", step, err, p.LogTail(400))
		return res
	}

	// 1. Primary segment: step the rate up, then deliver the rest.
	primary := w.Segments[0]
	url := p.WriteBase() + writePath
	c0 := cpu()
	lg.Info("ingest", "protocol", primary.Protocol, "samples", primary.Samples)
	mr := NewReplayer(client, url, primary, w.Opts.Workers).FindMaxRate(ctx, o.stepFor(w))
	if err := p.Flush(ctx); err != nil {
		return fail("flush", err)
	}
	res.CPUSecondsIngest += cpu() - c0
	res.IngestRSSBytes = p.PeakRSS()
	res.Steps = mr.Steps
	res.MaxIngestSamplesPerS, res.MaxIngestBound = mr.Max, !mr.Saturated
	res.SamplesAccepted += mr.Total.AcceptedSamples
	pr := protoResult(primary.Protocol, mr.Total)
	pr.Stored = verifySegment(ctx, qc, primary, w.Opts.ScrapeInterval, &pr)
	res.Protocols = append(res.Protocols, pr)
	if mr.Drain.AcceptedSamples > 0 {
		res.RW1DrainSamplesPerS = mr.Drain.SamplesPerSecond()
	}
	if mr.Total.AcceptedSamples == 0 {
		return fail("ingest", fmt.Errorf("no sample accepted: %s", mr.Total.LastError))
	}

	// 2. Query suite at the end of the primary segment.
	lg.Info("queries")
	res.Queries = runSuite(ctx, qc, Suite(), primary.Expect.EvalTime, o.QueryRepeats, o.QueryBudget)
	res.QueryP50S, res.QueryP99S = pctS(allLatencies(res.Queries), 0.5), pctS(allLatencies(res.Queries), 0.99)
	if x, ok := p.(interface {
		extraSuites(context.Context, *http.Client, *SystemResult, int64, RunOptions)
	}); ok { // a cluster's second read path (the bucket)
		x.extraSuites(ctx, client, &res, primary.Expect.EvalTime, o)
	}

	// 3. The other protocols, unpaced, continuing the same series in time.
	for _, seg := range w.Segments[1:] {
		u := url
		if seg.Protocol == OTLP {
			if otlpPath == "" {
				res.Protocols = append(res.Protocols, ProtocolResult{Protocol: OTLP, LastError: "not served"})
				continue
			}
			u = p.WriteBase() + otlpPath
		}
		lg.Info("ingest", "protocol", seg.Protocol, "samples", seg.Samples)
		c0 := cpu()
		st := NewReplayer(client, u, seg, w.Opts.Workers).Run(ctx, Limits{})
		cpuSeg := cpu() - c0
		pr := protoResult(seg.Protocol, st)
		if err := p.Flush(ctx); err != nil {
			return fail("flush", err)
		}
		// Samples (and the CPU spent on them) only count when stored.
		if pr.Stored = verifySegment(ctx, qc, seg, w.Opts.ScrapeInterval, &pr); pr.Stored {
			res.SamplesAccepted += st.AcceptedSamples
			res.CPUSecondsIngest += cpuSeg
		}
		res.Protocols = append(res.Protocols, pr)
	}

	// 4. Spike: a burst of new series, unpaced; then wait until visible.
	if w.Spike != nil {
		lg.Info("spike", "series", w.SpikeSeries)
		c0 := cpu()
		t0 := time.Now()
		st := NewReplayer(client, url, w.Spike, w.Opts.Workers).Run(ctx, Limits{})
		sr := &SpikeResult{Series: w.SpikeSeries, AbsorbS: time.Since(t0).Seconds(), Rejections: st.Rejections, LastError: st.LastError, VisibleS: -1}
		res.CPUSecondsIngest += cpu() - c0
		res.SamplesAccepted += st.AcceptedSamples
		want := w.Spike.Expect.ActiveGPUs
		q := Query{Name: "spike_visible", Kind: Instant, Expr: `count(DCGM_FI_DEV_GPU_UTIL{Hostname=~"burst-.*"})`}
		deadline := time.Now().Add(o.SpikeVisibleTimeout)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			_ = p.Flush(ctx)
			if r, err := qc.Do(ctx, q, w.Spike.Expect.EvalTime); err == nil && len(r.Keys) == 1 && int(r.Points[r.Keys[0]][0][1]) == want {
				sr.VisibleS = time.Since(t0).Seconds()
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		res.Spike = sr
	}

	// 5. Graceful stop (flushes), then the data folder.
	res.PeakRSSBytes = p.PeakRSS()
	_ = p.Flush(ctx)
	lg.Info("stopping")
	res.GracefulStop = p.Stop(o.StopTimeout)
	res.DiskBytes, res.DiskApparentBytes, err = p.DiskBytes()
	if err != nil {
		return fail("disk size", err)
	}
	if res.ActiveSeries > 0 {
		res.RSSBytesPerActiveSeries = float64(res.IngestRSSBytes) / float64(res.ActiveSeries)
	}
	if res.SamplesAccepted > 0 {
		res.CPUSecondsPerMillion = res.CPUSecondsIngest / float64(res.SamplesAccepted) * 1e6
		res.DiskBytesPerSample = float64(res.DiskBytes) / float64(res.SamplesAccepted)
	}
	return res
}

// verifySegment checks that the target holds exactly the generator's number
// of DCGM_FI_DEV_GPU_UTIL samples inside seg's time range, and notes what it
// found in pr.LastError otherwise. The window starts half an interval before
// the segment's first scrape, so jitter cannot move a sample across it.
func verifySegment(ctx context.Context, qc *QueryClient, seg *SegmentData, iv time.Duration, pr *ProtocolResult) bool {
	window := seg.Expect.EvalTime - seg.FirstScrap + iv.Milliseconds()/2
	q := Query{Name: "verify_" + string(seg.Protocol), Kind: Instant,
		Expr: fmt.Sprintf(`sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[%dms]))`, window)}
	r, err := qc.Do(ctx, q, seg.Expect.EvalTime)
	got := 0.0
	if err == nil && len(r.Keys) == 1 && len(r.Points[r.Keys[0]]) == 1 {
		got = r.Points[r.Keys[0]][0][1]
	}
	if got == float64(seg.Expect.UtilSamples) {
		return true
	}
	msg := fmt.Sprintf("not stored: %s = %v, want %d", q.Expr, got, seg.Expect.UtilSamples)
	if err != nil {
		msg = fmt.Sprintf("not verified: %v", err)
	}
	if pr.LastError != "" {
		msg += "; " + pr.LastError
	}
	pr.LastError = msg
	return false
}

// stepFor fills in the warm-up: one scrape of every active series.
func (o RunOptions) stepFor(w *Workload) StepOptions {
	so := o.Step
	if so.WarmupSamples == 0 {
		so.WarmupSamples = w.ActiveSeries * w.Opts.SamplesPerSeriesPerRequest
	}
	return so
}

func protoResult(p Protocol, st SendStats) ProtocolResult {
	return ProtocolResult{
		Protocol: p, SamplesPerS: st.SamplesPerSecond(), AcceptedSamples: st.AcceptedSamples, Requests: st.Requests,
		Rejections: st.Rejections, LastError: st.LastError,
		WriteP50S: Percentile(st.Latencies, 0.5).Seconds(), WriteP99S: Percentile(st.Latencies, 0.99).Seconds(),
	}
}

// runSuite runs every query up to repeats times, stopping a query's repeats
// once they took budget (0 = no budget).
func runSuite(ctx context.Context, qc *QueryClient, suite []Query, evalTime int64, repeats int, budget time.Duration) []QueryResult {
	out := make([]QueryResult, 0, len(suite))
	for _, q := range suite {
		qr := QueryResult{Name: q.Name}
		var lat []time.Duration
		began := time.Now()
		for i := 0; i < max(1, repeats) && (i == 0 || budget <= 0 || time.Since(began) < budget); i++ {
			t0 := time.Now()
			r, err := qc.Do(ctx, q, evalTime)
			if err != nil {
				lat = append(lat, time.Since(t0))
				qr.Error = err.Error()
				break
			}
			lat = append(lat, r.Latency)
			if qr.answer == nil {
				qr.answer = r
			}
		}
		qr.P50S, qr.P99S = Percentile(lat, 0.5).Seconds(), Percentile(lat, 0.99).Seconds()
		qr.latencies = lat
		out = append(out, qr)
	}
	return out
}

func allLatencies(qs []QueryResult) []time.Duration {
	var all []time.Duration
	for _, q := range qs {
		all = append(all, q.latencies...)
	}
	return all
}

func pctS(ds []time.Duration, q float64) float64 { return Percentile(ds, q).Seconds() }

// CompareAnswers diffs every system's query answers against the reference
// system (Prometheus when it ran, else the first system without an error)
// and records the differences in the results.
func CompareAnswers(results []SystemResult) (reference string) {
	ref := -1
	for i, r := range results {
		if r.Error == "" && len(r.Queries) > 0 && (ref < 0 || r.System == "prometheus") {
			ref = i
		}
	}
	if ref < 0 {
		return ""
	}
	for i := range results {
		if i == ref || len(results[i].Queries) == 0 {
			continue
		}
		results[i].QueryDiffs = 0
		for j := range results[i].Queries {
			q := &results[i].Queries[j]
			want := results[ref].Queries[j].answer
			switch {
			case q.Error != "" || want == nil:
				continue
			case q.answer == nil:
				q.Diffs = []string{"no answer"}
			default:
				q.Diffs = Diff(want, q.answer)
			}
			if len(q.Diffs) > 0 {
				results[i].QueryDiffs++
			}
		}
	}
	return results[ref].System
}
