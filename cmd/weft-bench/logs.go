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

// runLogs is -mode logs: weft against VictoriaLogs on one generated log
// stream (systems from -systems: weft, victorialogs).
func runLogs(ctx context.Context, o options) error {
	lo := bench.DefaultLogOptions()
	lo.Seed = o.seed
	setIf(&lo.Lines, o.logLines, o.logLines > 0)
	setIf(&lo.LinesPerPush, o.logBatch, o.logBatch > 0)
	setIf(&lo.Workers, o.workers, o.workers > 0)
	ro := bench.DefaultLogRunOptions()
	ro.WorkDir, ro.KeepData = o.workDir, o.keepData
	setIf(&ro.QueryRepeats, o.repeats, o.repeats > 0)
	lg := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ro.Logger = lg

	systems := o.systems
	if systems == defaultSystems {
		systems = "weft,victorialogs"
	}
	var targets []bench.LogTarget
	var results []bench.LogSystemResult
	for _, s := range strings.Split(systems, ",") {
		switch strings.TrimSpace(s) {
		case "weft":
			if _, err := os.Stat(o.weftBin); err != nil {
				results = append(results, bench.LogSystemResult{System: "weft", Error: fmt.Sprintf("weft binary %s: %v (did `go build ./cmd/weft` fail?)", o.weftBin, err)})
				continue
			}
			targets = append(targets, bench.WeftLogTarget(o.weftBin, o.weftArgs))
		case "victorialogs":
			targets = append(targets, bench.VictoriaLogsTarget(filepath.Join(o.peerBin, "victoria-logs")))
		case "":
		default:
			return fmt.Errorf("unknown system %q for -mode logs", s)
		}
	}

	lg.Info("generating log workload", "lines", lo.Lines)
	w, err := bench.GenerateLogs(lo)
	if err != nil {
		return fmt.Errorf("generate log workload: %w", err)
	}
	body := 0
	for _, p := range w.Payloads {
		body += len(p.Body)
	}
	lg.Info("log workload ready", "lines", w.Lines, "payloads", len(w.Payloads), "payload_bytes", body, "took", w.GenTime.Round(time.Millisecond))
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		results = append(results, bench.RunLogTarget(ctx, t, w, ro))
	}
	fmt.Println(bench.LogMarkdown(w, results))
	if err := bench.AllLogsFailed(results); err != nil {
		return err
	}
	path, err := bench.WriteLogJSON(o.out, w, results, time.Now())
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	return ctx.Err()
}
