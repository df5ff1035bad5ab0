package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/weftdb/weft/bench/internal/push"
)

// LogTarget is how the log benchmark talks to one system: its process spec
// and its push and query dialect.
type LogTarget struct {
	Spec     TargetSpec
	PushPath string
	Queries  LogQuerier
}

// LogQuerier runs the benchmark's log queries in one system's dialect.
// Implementations are safe for concurrent use.
type LogQuerier interface {
	// Lines returns every line containing needle in [start, end] (ns).
	Lines(ctx context.Context, c *http.Client, base, needle string, start, end int64) ([]LogLine, error)
	// CountByRun returns job="trainer" lines per run_id in [start, end].
	CountByRun(ctx context.Context, c *http.Client, base string, start, end int64) (map[string]int, error)
	// Total returns the number of lines in [start, end].
	Total(ctx context.Context, c *http.Client, base string, start, end int64) (int, error)
	// NeedleQuery and AggQuery are the query texts, for the report.
	NeedleQuery(needle string) string
	AggQuery() string
}

// WeftLogTarget runs weft with its Loki push and query API.
func WeftLogTarget(bin, argTmpl string) LogTarget {
	return LogTarget{Spec: WeftSpec(bin, argTmpl), PushPath: "/loki/api/v1/push", Queries: weftLogs{}}
}

// VictoriaLogsTarget runs single-node VictoriaLogs. Lines are pushed to its
// Loki endpoint with message parsing off, so the line is kept verbatim in
// _msg as weft keeps it (JSON lines are not split into fields).
func VictoriaLogsTarget(bin string) LogTarget {
	return LogTarget{
		Spec: TargetSpec{
			Name: "victorialogs", Binary: bin,
			Args: func(_, dataDir, addr string) ([]string, error) {
				return []string{
					"-storageDataPath=" + dataDir,
					"-httpListenAddr=" + addr,
					"-retentionPeriod=30d",
					"-loggerLevel=WARN",
				}, nil
			},
			ReadyPath: "/health", FlushPath: "/internal/force_flush",
		},
		PushPath: "/insert/loki/api/v1/push?disable_message_parsing=1",
		Queries:  victoriaLogs{},
	}
}

// LogRunOptions configure one log benchmark run.
type LogRunOptions struct {
	// QueryRepeats is how many times each query runs for its percentiles.
	QueryRepeats int
	ReadyTimeout time.Duration
	StopTimeout  time.Duration
	// SettleMax bounds the wait after ingest for background work (sealing,
	// merges) to stop using CPU; that CPU counts as ingest CPU.
	SettleMax time.Duration
	WorkDir   string
	KeepData  bool
	Logger    *slog.Logger // nil: no logs
}

// DefaultLogRunOptions suit bench-logs on a few cores.
func DefaultLogRunOptions() LogRunOptions {
	return LogRunOptions{QueryRepeats: 20, ReadyTimeout: 2 * time.Minute, StopTimeout: 2 * time.Minute, SettleMax: 10 * time.Second, WorkDir: os.TempDir()}
}

// LogQueryResult is one query's latencies and whether its answer matched
// the generator's.
type LogQueryResult struct {
	Query string  `json:"query"`
	P50S  float64 `json:"p50_s"`
	P99S  float64 `json:"p99_s"`
	// FirstS is the first run's latency (the least cached).
	FirstS  float64 `json:"first_s"`
	Runs    int     `json:"runs"`
	Correct bool    `json:"correct"`
	Error   string  `json:"error,omitempty"`
}

// LogSystemResult is everything measured on one system.
type LogSystemResult struct {
	System            string         `json:"system"`
	DiskBytesPerLine  float64        `json:"disk_bytes_per_line"`
	LinesPerCPUSecond float64        `json:"lines_per_s_per_core"`
	IngestLinesPerS   float64        `json:"ingest_lines_per_s_wall"`
	CPUSecondsIngest  float64        `json:"cpu_seconds_ingest"`
	LinesSent         int            `json:"lines_sent"`
	LinesAccepted     int            `json:"lines_accepted"`
	LinesFound        int            `json:"lines_found"`
	Rejections        int            `json:"rejections"`
	LastPushError     string         `json:"last_push_error,omitempty"`
	PushP50S          float64        `json:"push_p50_s"`
	PushP99S          float64        `json:"push_p99_s"`
	PeakRSSBytes      int64          `json:"peak_rss_bytes"`
	DiskBytes         int64          `json:"disk_bytes"`
	DiskApparentBytes int64          `json:"disk_apparent_bytes"`
	GracefulStop      bool           `json:"graceful_stop"`
	Needle            LogQueryResult `json:"needle"`
	Agg               LogQueryResult `json:"agg_1h"`
	Error             string         `json:"error,omitempty"`
	needleAnswer      []LogLine
	aggAnswer         map[string]int
}

// RunLogTarget starts t, pushes w unpaced, checks the line count, runs the
// needle and aggregation queries, stops t gracefully and measures its data
// folder. Errors end up in the result; the process is always stopped.
func RunLogTarget(ctx context.Context, t LogTarget, w *LogWorkload, o LogRunOptions) (res LogSystemResult) {
	res = LogSystemResult{System: t.Spec.Name, LinesSent: w.Lines}
	dir, err := os.MkdirTemp(o.WorkDir, "weft-bench-logs-"+t.Spec.Name+"-")
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
	fail := func(step string, err error) LogSystemResult {
		res.Error = fmt.Sprintf("%s: %v (log tail: %s)", step, err, p.LogTail(400))
		return res
	}
	cpu := func() float64 { c, _ := ReadCPUSeconds(p.Pid()); return c }

	// 1. Ingest, unpaced; the CPU of flushing and of background work the
	// ingest caused (until the process goes idle) counts.
	info("ingest", "lines", w.Lines, "payloads", len(w.Payloads))
	c0 := cpu()
	st := pushLogs(ctx, client, p.Base+t.PushPath, w)
	if err := p.Flush(ctx); err != nil {
		return fail("flush", err)
	}
	settle(ctx, cpu, o.SettleMax)
	res.CPUSecondsIngest = cpu() - c0
	res.LinesAccepted, res.Rejections, res.LastPushError = st.AcceptedSamples, st.Rejections, st.LastError
	res.PushP50S, res.PushP99S = Percentile(st.Latencies, 0.5).Seconds(), Percentile(st.Latencies, 0.99).Seconds()
	if st.Wall > 0 {
		res.IngestLinesPerS = float64(st.AcceptedSamples) / st.Wall.Seconds()
	}
	if res.CPUSecondsIngest > 0 {
		res.LinesPerCPUSecond = float64(st.AcceptedSamples) / res.CPUSecondsIngest
	}
	if st.AcceptedSamples == 0 {
		return fail("ingest", fmt.Errorf("no line accepted: %s", st.LastError))
	}
	ex := w.Expect
	first, last := ex.MinTS-int64(time.Second), ex.MaxTS+int64(time.Second)
	if res.LinesFound, err = t.Queries.Total(ctx, client, p.Base, first, last); err != nil {
		return fail("count lines", err)
	}

	// 2. Needle: one trace ID over the whole range.
	info("needle query", "repeats", o.QueryRepeats)
	res.Needle.Query = t.Queries.NeedleQuery(ex.Needle)
	res.needleAnswer = repeatQuery(ctx, &res.Needle, o.QueryRepeats, func() ([]LogLine, error) {
		return t.Queries.Lines(ctx, client, p.Base, ex.Needle, first, last)
	})
	res.Needle.Correct = res.Needle.Error == "" && sameLines(res.needleAnswer, ex.NeedleLines)

	// 3. Count by run over the last hour.
	info("aggregation query", "repeats", o.QueryRepeats)
	res.Agg.Query = t.Queries.AggQuery()
	res.aggAnswer = repeatQuery(ctx, &res.Agg, o.QueryRepeats, func() (map[string]int, error) {
		return t.Queries.CountByRun(ctx, client, p.Base, ex.AggStart, ex.AggEnd)
	})
	res.Agg.Correct = res.Agg.Error == "" && sameCounts(res.aggAnswer, ex.TrainerPerRun)

	// 4. Graceful stop, then the data folder.
	res.PeakRSSBytes = p.PeakRSS()
	_ = p.Flush(ctx)
	info("stopping")
	res.GracefulStop = p.Stop(o.StopTimeout)
	res.DiskBytes, res.DiskApparentBytes, err = DirSize(p.DataDir)
	if err != nil {
		return fail("disk size", err)
	}
	if res.LinesAccepted > 0 {
		res.DiskBytesPerLine = float64(res.DiskBytes) / float64(res.LinesAccepted)
	}
	return res
}

// settleIdle is the CPU use (cores) under which a target counts as idle.
const settleIdle = 0.02

// settle waits until the process uses less than settleIdle cores over half
// a second, or max passed.
func settle(ctx context.Context, cpu func() float64, max time.Duration) {
	const every = 500 * time.Millisecond
	deadline := time.Now().Add(max)
	prev := cpu()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(every)
		c := cpu()
		if c-prev < settleIdle*every.Seconds() {
			return
		}
		prev = c
	}
}

// repeatQuery runs q n times (at least once), records latencies into r and
// returns the first answer. The first error stops the repeats.
func repeatQuery[T any](ctx context.Context, r *LogQueryResult, n int, q func() (T, error)) T {
	var first T
	var lat []time.Duration
	for i := range max(n, 1) {
		if ctx.Err() != nil {
			break
		}
		t0 := time.Now()
		a, err := q()
		lat = append(lat, time.Since(t0))
		if err != nil {
			r.Error = err.Error()
			break
		}
		if i == 0 {
			first = a
		}
	}
	r.Runs = len(lat)
	if len(lat) > 0 {
		r.FirstS = lat[0].Seconds()
	}
	r.P50S, r.P99S = Percentile(lat, 0.5).Seconds(), Percentile(lat, 0.99).Seconds()
	return first
}

// pushLogs sends every payload, one worker per lane in order, unpaced,
// retrying like Replayer.send. AcceptedSamples counts lines.
func pushLogs(ctx context.Context, c *http.Client, url string, w *LogWorkload) SendStats {
	lanes := make([][]*LogPayload, w.Opts.Workers)
	for i := range w.Payloads {
		p := &w.Payloads[i]
		lanes[p.Lane] = append(lanes[p.Lane], p)
	}
	var (
		mu  sync.Mutex
		tot SendStats
		wg  sync.WaitGroup
	)
	began := time.Now()
	for _, lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st SendStats
			for _, p := range lane {
				if ctx.Err() != nil {
					break
				}
				pushOne(ctx, c, url, p, &st)
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

func pushOne(ctx context.Context, c *http.Client, url string, p *LogPayload, st *SendStats) {
	s := push.Sender{Client: c, URL: url, Header: http.Header{"Content-Type": {"application/json"}, "User-Agent": {"weft-bench"}}, Policy: retryPolicy(time.Minute)}
	sendCounted(ctx, &s, p.Body, p.Lines, st)
}
