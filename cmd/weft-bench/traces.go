package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftdb/weft/bench"
)

// runTraces is -mode traces: weft against Jaeger v2 on the same generated
// spans (systems from -systems: weft, jaeger; see bench/traces_run.go).
func runTraces(ctx context.Context, o options) error {
	to := bench.DefaultTraceOptions()
	to.Seed = o.seed
	setIf(&to.Spans, o.traceSpans, o.traceSpans > 0)
	setIf(&to.Workers, o.workers, o.workers > 0)
	// The window ends at the start of this minute: both systems keep spans
	// by their arrival, and the same -trace-end gives the same spans.
	to.End = time.Now().UTC().Truncate(time.Minute)
	if o.traceEnd != "" {
		t, err := time.Parse(time.RFC3339, o.traceEnd)
		if err != nil {
			return fmt.Errorf("-trace-end: %w", err)
		}
		to.End = t
	}
	ro := bench.DefaultTraceRunOptions()
	ro.WorkDir, ro.KeepData = o.workDir, o.keepData
	setIf(&ro.QueryRepeats, o.repeats, o.repeats > 0)
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ro.Logger = lg

	systems := o.systems
	if systems == defaultSystems {
		systems = "weft,jaeger"
	}
	var targets []bench.TraceTarget
	var results []bench.TraceSystemResult
	for _, s := range strings.Split(systems, ",") {
		switch strings.TrimSpace(s) {
		case "weft":
			if _, err := os.Stat(o.weftBin); err != nil {
				results = append(results, bench.TraceSystemResult{System: "weft", Error: fmt.Sprintf("weft binary %s: %v (did `go build ./cmd/weft` fail?)", o.weftBin, err)})
				continue
			}
			targets = append(targets, bench.WeftTraceTarget(o.weftBin, o.weftArgs))
		case "jaeger":
			targets = append(targets, bench.JaegerTraceTarget(filepath.Join(o.peerBin, "jaeger")))
		case "":
		default:
			return fmt.Errorf("unknown system %q for -mode traces", s)
		}
	}

	lg.Info("generating trace workload", "spans", to.Spans)
	w, err := bench.GenerateTraces(to)
	if err != nil {
		return fmt.Errorf("generate trace workload: %w", err)
	}
	lg.Info("trace workload ready", "spans", w.Spans, "traces", w.Traces, "requests", len(w.Requests), "payload_bytes", w.Bytes, "took", w.GenTime.Round(time.Millisecond))
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		results = append(results, bench.RunTraceTarget(ctx, t, w, ro))
	}
	fmt.Println(bench.TraceMarkdown(w, results))
	if err := bench.AllTracesFailed(results); err != nil {
		return err
	}
	path, err := bench.WriteTraceJSON(o.out, w, results, time.Now())
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	return ctx.Err()
}
