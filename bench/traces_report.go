package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// traceRow's goals are issue 15's.
type traceRow = ratioRow[TraceSystemResult]

var traceRows = []traceRow{
	{name: "spans / s / core (ingest CPU)", goal: "≥ 3", above: true, want: 3, get: func(r TraceSystemResult) (float64, bool) { return r.SpansPerCPUSecond, r.SpansPerCPUSecond > 0 }},
	{name: "disk bytes / span (after graceful stop)", goal: "≤ 0.3", want: 0.3, get: func(r TraceSystemResult) (float64, bool) { return r.DiskBytesPerSpan, r.DiskBytesPerSpan > 0 }},
	{name: "trace by ID p99 (s)", goal: "≤ 0.5", want: 0.5, get: func(r TraceSystemResult) (float64, bool) { return r.ByID.P99S, r.ByID.Runs > 0 && r.ByID.Error == "" }},
	{name: "search service + minDuration 1h p99 (s)", goal: "≤ 0.5", want: 0.5, get: func(r TraceSystemResult) (float64, bool) {
		return r.Search.P99S, r.Search.Runs > 0 && r.Search.Error == ""
	}},
	{name: "peak RSS while ingesting (MiB)", get: func(r TraceSystemResult) (float64, bool) {
		return float64(r.PeakRSSBytes) / (1 << 20), r.PeakRSSBytes > 0
	}},
	{name: "ingest spans / s (wall, unpaced)", get: func(r TraceSystemResult) (float64, bool) { return r.IngestSpansPerS, r.IngestSpansPerS > 0 }},
	{name: "ingest CPU s", get: func(r TraceSystemResult) (float64, bool) { return r.CPUSecondsIngest, r.CPUSecondsIngest > 0 }},
	{name: "push p99 (s)", get: func(r TraceSystemResult) (float64, bool) { return r.PushP99S, r.PushP99S > 0 }},
	{name: "trace by ID p50 (s)", get: func(r TraceSystemResult) (float64, bool) { return r.ByID.P50S, r.ByID.Runs > 0 && r.ByID.Error == "" }},
	{name: "search p50 (s)", get: func(r TraceSystemResult) (float64, bool) {
		return r.Search.P50S, r.Search.Runs > 0 && r.Search.Error == ""
	}},
}

// TraceMarkdown renders the trace results: absolute figures, weft/peer
// ratios against the goals, and whether each system's answers matched.
func TraceMarkdown(w *TraceWorkload, results []TraceSystemResult) string {
	var b strings.Builder
	o := w.Opts
	fmt.Fprintf(&b, "trace workload: %d spans in %d traces from %d resources (%d model services x %d replicas behind a router, %d training runs x %d ranks, %.0f%% of spans from training), %s ending %s, %d requests of <= %d spans (%s gzip protobuf), %d lanes, seed %d; %d traces looked up by ID, %d searches over the last hour\n\n",
		w.Spans, w.Traces, w.Resources, o.Services, o.Replicas, o.Runs, o.RanksPerRun, o.TrainingShare*100, o.Span, o.End.UTC().Format(time.RFC3339),
		len(w.Requests), o.SpansPerRequest, bytesH(int64(w.Bytes)), o.Workers, o.Seed, len(w.Lookups), len(w.Searches))
	ratioTable(&b, results, traceRows)
	b.WriteString("\nratios are weft/peer; goals from issue 15.\n\n")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(&b, "- **%s failed**: %s\n", r.System, trunc(r.Error, 400))
			continue
		}
		fmt.Fprintf(&b, "- %s: accepted %d of %d spans, %d rejections, graceful stop %v, disk %s (apparent %s)",
			r.System, r.SpansAccepted, r.SpansSent, r.Rejections, r.GracefulStop, bytesH(r.DiskBytes), bytesH(r.DiskApparentBytes))
		if r.LastPushError != "" {
			fmt.Fprintf(&b, "; last push error: %s", trunc(r.LastPushError, 160))
		}
		b.WriteString("\n")
		for _, q := range []TraceQueryResult{r.ByID, r.Search} {
			verdict := "every answer matches the generator"
			switch {
			case q.Error != "":
				verdict = "error: " + trunc(q.Error, 200)
			case q.Wrong > 0:
				verdict = fmt.Sprintf("**%d of %d answers differ from the generator** (first: %s)", q.Wrong, q.Runs, trunc(q.Detail, 200))
			}
			fmt.Fprintf(&b, "  - `%s` (%d runs): %s\n", q.Query, q.Runs, verdict)
		}
	}
	return b.String()
}

// AllTracesFailed returns an error when no system produced a result.
func AllTracesFailed(results []TraceSystemResult) error {
	for _, r := range results {
		if r.Error == "" {
			return nil
		}
	}
	return fmt.Errorf("every system failed")
}

// TraceReport is the JSON file's content.
type TraceReport struct {
	Workload struct {
		Spans, Traces, Resources, Requests, Bytes int
		Seed                                      int64
		End                                       string
		SpanS                                     float64
		Options                                   TraceOptions
	} `json:"workload"`
	Results []TraceSystemResult `json:"results"`
}

// WriteTraceJSON writes dir/traces-<timestamp>.json and returns its path.
func WriteTraceJSON(dir string, w *TraceWorkload, results []TraceSystemResult, now time.Time) (string, error) {
	var r TraceReport
	wl := &r.Workload
	wl.Spans, wl.Traces, wl.Resources, wl.Requests, wl.Bytes = w.Spans, w.Traces, w.Resources, len(w.Requests), w.Bytes
	wl.Seed, wl.End, wl.SpanS, wl.Options = w.Opts.Seed, w.Opts.End.UTC().Format(time.RFC3339), w.Opts.Span.Seconds(), w.Opts
	r.Results = results
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, "traces-"+now.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}
