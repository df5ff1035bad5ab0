package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type logRow = ratioRow[LogSystemResult]

var logRows = []logRow{
	{name: "disk bytes / line (after graceful stop)", get: func(r LogSystemResult) (float64, bool) { return r.DiskBytesPerLine, r.DiskBytesPerLine > 0 }},
	{name: "lines / s / core (ingest CPU)", get: func(r LogSystemResult) (float64, bool) { return r.LinesPerCPUSecond, r.LinesPerCPUSecond > 0 }},
	{name: "ingest lines / s (wall, unpaced)", get: func(r LogSystemResult) (float64, bool) { return r.IngestLinesPerS, r.IngestLinesPerS > 0 }},
	{name: "ingest CPU s", get: func(r LogSystemResult) (float64, bool) { return r.CPUSecondsIngest, r.CPUSecondsIngest > 0 }},
	{name: "push p99 (s)", get: func(r LogSystemResult) (float64, bool) { return r.PushP99S, r.PushP99S > 0 }},
	{name: "peak RSS (MiB)", get: func(r LogSystemResult) (float64, bool) {
		return float64(r.PeakRSSBytes) / (1 << 20), r.PeakRSSBytes > 0
	}},
	{name: "needle p50 (s)", get: func(r LogSystemResult) (float64, bool) {
		return r.Needle.P50S, r.Needle.Runs > 0 && r.Needle.Error == ""
	}},
	{name: "needle p99 (s)", get: func(r LogSystemResult) (float64, bool) {
		return r.Needle.P99S, r.Needle.Runs > 0 && r.Needle.Error == ""
	}},
	{name: "needle first run (s)", get: func(r LogSystemResult) (float64, bool) {
		return r.Needle.FirstS, r.Needle.Runs > 0 && r.Needle.Error == ""
	}},
	{name: "count by run_id 1h p50 (s)", get: func(r LogSystemResult) (float64, bool) { return r.Agg.P50S, r.Agg.Runs > 0 && r.Agg.Error == "" }},
	{name: "count by run_id 1h p99 (s)", get: func(r LogSystemResult) (float64, bool) { return r.Agg.P99S, r.Agg.Runs > 0 && r.Agg.Error == "" }},
	{name: "count by run_id 1h first run (s)", get: func(r LogSystemResult) (float64, bool) { return r.Agg.FirstS, r.Agg.Runs > 0 && r.Agg.Error == "" }},
}

// LogMarkdown renders the log results: absolute figures, weft/peer ratios,
// and what each system answered against the generator's books.
func LogMarkdown(w *LogWorkload, results []LogSystemResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log workload: %d lines (%.0f bytes of text per line) in %d streams over %s ending %s, %d payloads of <= %d lines, %d lanes, trace_id on %.0f%% of lines, seed %d; needle %s on %d lines; %d trainer lines in the aggregation hour\n\n",
		w.Lines, float64(w.Bytes)/float64(max(w.Lines, 1)), len(w.Streams), w.Opts.Span, w.Opts.End.UTC().Format(time.RFC3339), len(w.Payloads), w.Opts.LinesPerPush, w.Opts.Workers,
		w.Opts.TraceFraction*100, w.Opts.Seed, w.Expect.Needle, len(w.Expect.NeedleLines), sumCounts(w.Expect.TrainerPerRun))
	ratioTable(&b, results, logRows)
	b.WriteString("\nratios are weft/peer: below 1 is better for bytes, CPU, RSS and latency; above 1 for line rates.\n\n")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(&b, "- **%s failed**: %s\n", r.System, trunc(r.Error, 400))
			continue
		}
		fmt.Fprintf(&b, "- %s: accepted %d of %d lines (%d found by a count query), %d rejections, graceful stop %v, disk %s (apparent %s)",
			r.System, r.LinesAccepted, r.LinesSent, r.LinesFound, r.Rejections, r.GracefulStop, bytesH(r.DiskBytes), bytesH(r.DiskApparentBytes))
		if r.LastPushError != "" {
			fmt.Fprintf(&b, "; last push error: %s", trunc(r.LastPushError, 160))
		}
		b.WriteString("\n")
		for _, q := range []LogQueryResult{r.Needle, r.Agg} {
			verdict := "answer matches the generator"
			switch {
			case q.Error != "":
				verdict = "error: " + trunc(q.Error, 200)
			case !q.Correct:
				verdict = "**answer differs from the generator**"
			}
			fmt.Fprintf(&b, "  - `%s` (%d runs): %s\n", q.Query, q.Runs, verdict)
		}
	}
	return b.String()
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// LogReport is the JSON file's content.
type LogReport struct {
	Workload struct {
		Lines         int     `json:"lines"`
		LineBytes     int     `json:"line_bytes"`
		Streams       int     `json:"streams"`
		SpanS         float64 `json:"span_s"`
		End           string  `json:"end"`
		Seed          int64   `json:"seed"`
		LinesPerPush  int     `json:"lines_per_push"`
		Workers       int     `json:"workers"`
		TraceFraction float64 `json:"trace_fraction"`
		Needle        string  `json:"needle"`
		NeedleLines   int     `json:"needle_lines"`
	} `json:"workload"`
	Results []LogSystemResult `json:"results"`
}

// WriteLogJSON writes dir/logs-<timestamp>.json and returns its path.
func WriteLogJSON(dir string, w *LogWorkload, results []LogSystemResult, now time.Time) (string, error) {
	var r LogReport
	wl := &r.Workload
	wl.Lines, wl.LineBytes, wl.Streams = w.Lines, w.Bytes, len(w.Streams)
	wl.SpanS, wl.End, wl.Seed = w.Opts.Span.Seconds(), w.Opts.End.UTC().Format(time.RFC3339), w.Opts.Seed
	wl.LinesPerPush, wl.Workers, wl.TraceFraction = w.Opts.LinesPerPush, w.Opts.Workers, w.Opts.TraceFraction
	wl.Needle, wl.NeedleLines = w.Expect.Needle, len(w.Expect.NeedleLines)
	r.Results = results
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, "logs-"+now.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}
