// Command weft-bench generates AI cluster telemetry and runs weft, Prometheus
// and VictoriaMetrics side by side on it, one at a time, on loopback.
//
//	weft-bench -scale small -peer-bin .build/bin -weft-bin bin/weft -out bench/results
//
// `weft-bench scenario NAME` replays an incident scenario into a weft
// instead (see scenario.go and docs/scenarios.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weftdb/weft/bench"
)

// defaultSystems are the metrics mode's systems.
const defaultSystems = "weft,prometheus,victoriametrics"

// options are the command's flags.
type options struct {
	scale, systems, peerBin, weftBin, kfakeBin, weftArgs, out, workDir string
	seed                                                               int64
	activeSeries, churn, spike, labels, perSeries, workers             int
	interval, duration                                                 time.Duration
	repeats                                                            int
	stepStart, stepFactor                                              float64
	stepDur                                                            time.Duration
	stepMax                                                            int
	keepData                                                           bool
	mode                                                               string
	logLines, logBatch                                                 int
	traceSpans                                                         int
	traceEnd                                                           string
	soak                                                               soakFlags
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "scenario" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runScenario(ctx, os.Args[2:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	var o options
	fs := flag.NewFlagSet("weft-bench", flag.ExitOnError)
	fs.StringVar(&o.mode, "mode", "metrics", "metrics (weft, Prometheus, VictoriaMetrics), logs (weft, VictoriaLogs; see bench/logs_run.go), traces (weft, Jaeger; bench/traces_run.go) or soak (weft under mixed load on every ingest path; bench/soak.go)")
	fs.IntVar(&o.traceSpans, "trace-spans", 0, "traces mode: override the number of generated spans")
	fs.StringVar(&o.traceEnd, "trace-end", "", "traces mode: end of the generated window (RFC 3339; default: this minute)")
	fs.IntVar(&o.logLines, "log-lines", 0, "logs mode: override the number of generated lines")
	fs.IntVar(&o.logBatch, "log-lines-per-push", 0, "logs mode: override the lines per push request")
	fs.StringVar(&o.scale, "scale", "small", "workload scale: tiny, small, medium (1M active series) or large")
	fs.StringVar(&o.systems, "systems", defaultSystems, "systems to run, in order (logs mode: weft,victorialogs; traces mode: weft,jaeger)")
	fs.StringVar(&o.peerBin, "peer-bin", ".build/bin", "directory with the peer binaries (prometheus, victoria-metrics, victoria-logs, jaeger)")
	fs.StringVar(&o.weftBin, "weft-bin", "bin/weft", "weft binary")
	fs.StringVar(&o.kfakeBin, "kfake-bin", "bin/weft-kfake", "weft-kfake binary (the broker of system weft-cluster)")
	fs.StringVar(&o.weftArgs, "weft-args", bench.DefaultWeftArgs, "weft command line; {data} and {addr} are replaced")
	fs.StringVar(&o.out, "out", "bench/results", "directory for <timestamp>.json")
	fs.StringVar(&o.workDir, "work-dir", os.TempDir(), "where targets keep their data while they run")
	fs.Int64Var(&o.seed, "seed", 1, "workload seed")
	fs.IntVar(&o.activeSeries, "active-series", 0, "override: active series")
	fs.IntVar(&o.churn, "churn", -1, "override: new series per minute from rotating training runs")
	fs.IntVar(&o.spike, "spike", -1, "override: series in the spike burst (0 disables)")
	fs.IntVar(&o.labels, "labels-per-series", 0, "override: pad series to this many labels")
	fs.IntVar(&o.perSeries, "samples-per-series-per-request", 0, "override: scrapes of a series per request")
	fs.IntVar(&o.workers, "workers", 0, "override: concurrent send lanes")
	fs.DurationVar(&o.interval, "scrape-interval", 0, "override: scrape interval")
	fs.DurationVar(&o.duration, "duration", 0, "override: covered time span")
	fs.IntVar(&o.repeats, "query-repeats", 0, "override: runs of each suite query")
	fs.Float64Var(&o.stepStart, "rate-start", 0, "override: first offered rate (samples/s)")
	fs.Float64Var(&o.stepFactor, "rate-factor", 0, "override: offered rate multiplier per step")
	fs.DurationVar(&o.stepDur, "rate-step", 0, "override: duration of one rate step")
	fs.IntVar(&o.stepMax, "rate-steps", 0, "override: maximum rate steps")
	fs.BoolVar(&o.keepData, "keep-data", false, "keep the targets' data directories")
	o.soak.register(fs)
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runf := run
	switch o.mode {
	case "logs":
		runf = runLogs
	case "traces":
		runf = runTraces
	case "soak":
		runf = runSoak
	}
	if err := runf(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "weft-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	wo, err := bench.Scale(o.scale)
	if err != nil {
		return err
	}
	wo.Seed = o.seed
	setIf(&wo.ActiveSeries, o.activeSeries, o.activeSeries > 0)
	setIf(&wo.ChurnPerMinute, o.churn, o.churn >= 0)
	setIf(&wo.SpikeSeries, o.spike, o.spike >= 0)
	setIf(&wo.LabelsPerSeries, o.labels, o.labels > 0)
	setIf(&wo.SamplesPerSeriesPerRequest, o.perSeries, o.perSeries > 0)
	setIf(&wo.Workers, o.workers, o.workers > 0)
	setIf(&wo.ScrapeInterval, o.interval, o.interval > 0)
	setIf(&wo.Duration, o.duration, o.duration > 0)

	ro := bench.DefaultRunOptions()
	ro.WorkDir, ro.KeepData = o.workDir, o.keepData
	ro.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	setIf(&ro.QueryRepeats, o.repeats, o.repeats > 0)
	setIf(&ro.Step.StartRate, o.stepStart, o.stepStart > 0)
	setIf(&ro.Step.Factor, o.stepFactor, o.stepFactor > 1)
	setIf(&ro.Step.StepDuration, o.stepDur, o.stepDur > 0)
	setIf(&ro.Step.MaxSteps, o.stepMax, o.stepMax > 0)

	var specs []bench.TargetSpec
	var results []bench.SystemResult
	cluster := false
	for _, s := range strings.Split(o.systems, ",") {
		switch strings.TrimSpace(s) {
		case "weft":
			if _, err := os.Stat(o.weftBin); err != nil {
				results = append(results, bench.SystemResult{System: "weft", Error: fmt.Sprintf("weft binary %s: %v (did `go build ./cmd/weft` fail?)", o.weftBin, err)})
				continue
			}
			specs = append(specs, bench.WeftSpec(o.weftBin, o.weftArgs))
		case "weft-cluster": // docs/scale-out.md: the same workload through distributor, Kafka API, ingesters, querier
			cluster = true
		case "prometheus":
			specs = append(specs, bench.PrometheusSpec(filepath.Join(o.peerBin, "prometheus")))
		case "victoriametrics":
			specs = append(specs, bench.VictoriaMetricsSpec(filepath.Join(o.peerBin, "victoria-metrics")))
		case "":
		default:
			return fmt.Errorf("unknown system %q", s)
		}
	}

	ro.Logger.Info("generating workload", "scale", o.scale, "active_series", wo.ActiveSeries)
	w, err := bench.Generate(wo)
	if err != nil {
		return fmt.Errorf("generate workload: %w", err)
	}
	bytes := 0
	for _, s := range w.Segments {
		bytes += s.Bytes
	}
	ro.Logger.Info("workload ready", "samples", w.TotalSamples(), "payload_bytes", bytes, "took", w.GenTime.Round(time.Millisecond))

	for _, spec := range specs {
		if ctx.Err() != nil {
			break
		}
		results = append(results, bench.RunTarget(ctx, spec, w, ro))
	}
	if cluster && ctx.Err() == nil {
		results = append(results, bench.RunCluster(ctx, bench.ClusterSpec{WeftBin: o.weftBin, KafkaBin: o.kfakeBin}, w, ro)...)
	}
	ref := bench.CompareAnswers(results)
	fmt.Println(bench.Markdown(w, results, ref))
	if err := bench.AllFailed(results); err != nil {
		return err
	}
	path, err := bench.WriteJSON(o.out, results, time.Now())
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	return ctx.Err()
}

func setIf[T any](dst *T, v T, ok bool) {
	if ok {
		*dst = v
	}
}
