package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// metricRow is one line of the markdown report.
type metricRow = ratioRow[SystemResult]

var reportRows = []metricRow{
	{name: "max ingest (samples/s, RW1)", get: func(r SystemResult) (float64, bool) { return r.MaxIngestSamplesPerS, r.MaxIngestSamplesPerS > 0 },
		lowerBound: func(r SystemResult) bool { return r.MaxIngestBound }},
	{name: "RW1 unpaced (samples/s)", get: func(r SystemResult) (float64, bool) { return r.RW1DrainSamplesPerS, r.RW1DrainSamplesPerS > 0 }},
	{name: "RSS bytes / active series", get: func(r SystemResult) (float64, bool) { return r.RSSBytesPerActiveSeries, r.RSSBytesPerActiveSeries > 0 }},
	{name: "CPU s / 1M samples", get: func(r SystemResult) (float64, bool) { return r.CPUSecondsPerMillion, r.CPUSecondsPerMillion > 0 }},
	{name: "disk bytes / sample", get: func(r SystemResult) (float64, bool) { return r.DiskBytesPerSample, r.DiskBytesPerSample > 0 }},
	{name: "query p50 (s)", get: func(r SystemResult) (float64, bool) { return r.QueryP50S, r.QueryP50S > 0 }},
	{name: "query p99 (s)", get: func(r SystemResult) (float64, bool) { return r.QueryP99S, r.QueryP99S > 0 }},
	{name: "RW1 write p50 (s)", get: protoGetAny(RW1, func(p ProtocolResult) float64 { return p.WriteP50S })},
	{name: "RW1 write p99 (s)", get: protoGetAny(RW1, func(p ProtocolResult) float64 { return p.WriteP99S })},
	{name: "RW1 rejections", get: func(r SystemResult) (float64, bool) {
		for _, p := range r.Protocols {
			if p.Protocol == RW1 {
				return float64(p.Rejections), true
			}
		}
		return 0, false
	}},
	{name: "RW2 unpaced (samples/s)", get: protoGet(RW2, func(p ProtocolResult) float64 { return p.SamplesPerS })},
	{name: "OTLP unpaced (samples/s)", get: protoGet(OTLP, func(p ProtocolResult) float64 { return p.SamplesPerS })},
	{name: "spike absorb (s)", get: func(r SystemResult) (float64, bool) {
		if r.Spike == nil {
			return 0, false
		}
		return r.Spike.AbsorbS, true
	}},
	{name: "spike visible (s)", get: func(r SystemResult) (float64, bool) {
		if r.Spike == nil || r.Spike.VisibleS < 0 {
			return 0, false
		}
		return r.Spike.VisibleS, true
	}},
}

// protoGetAny reads a protocol's figure whether or not its data was stored.
func protoGetAny(p Protocol, f func(ProtocolResult) float64) func(SystemResult) (float64, bool) {
	return func(r SystemResult) (float64, bool) {
		for _, pr := range r.Protocols {
			if pr.Protocol == p && pr.Requests > 0 {
				return f(pr), true
			}
		}
		return 0, false
	}
}

// protoGet reads a protocol's figure when its data was found afterwards.
func protoGet(p Protocol, f func(ProtocolResult) float64) func(SystemResult) (float64, bool) {
	return func(r SystemResult) (float64, bool) {
		for _, pr := range r.Protocols {
			if pr.Protocol == p && pr.AcceptedSamples > 0 && pr.Stored {
				return f(pr), true
			}
		}
		return 0, false
	}
}

// Markdown renders the results as a table of absolute figures with weft/peer
// ratios, followed by rejections, errors and query answer differences.
func Markdown(w *Workload, results []SystemResult, reference string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workload: %d active series (%d nodes x %d GPUs, %d vLLM replicas), churn %d series/min, scrape %s, %d samples sent per system, spike %d series, seed %d\n\n",
		w.ActiveSeries, w.Nodes, GPUsPerNode, w.Replicas, w.Opts.ChurnPerMinute, w.Opts.ScrapeInterval, w.TotalSamples(), w.SpikeSeries, w.Opts.Seed)
	ratioTable(&b, results, reportRows)
	b.WriteString("\n")
	queryTable(&b, results)
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(&b, "- **%s failed**: %s\n", r.System, r.Error)
			continue
		}
		rej := 0
		var lastErr []string
		for _, p := range r.Protocols {
			rej += p.Rejections
			if p.LastError != "" {
				lastErr = append(lastErr, fmt.Sprintf("%s: %s", p.Protocol, trunc(p.LastError, 160)))
			}
		}
		fmt.Fprintf(&b, "- %s: accepted %d of %d samples, %d rejections, graceful stop %v, disk %s, peak RSS %s",
			r.System, r.SamplesAccepted, r.SamplesSent, rej, r.GracefulStop, bytesH(r.DiskBytes), bytesH(r.PeakRSSBytes))
		if r.Spike != nil && r.Spike.Rejections > 0 {
			fmt.Fprintf(&b, ", spike rejections %d", r.Spike.Rejections)
		}
		if len(lastErr) > 0 {
			fmt.Fprintf(&b, "; last errors: %s", strings.Join(lastErr, "; "))
		}
		b.WriteString("\n")
		for _, q := range r.Queries {
			if q.Error != "" {
				fmt.Fprintf(&b, "  - query %s failed: %s\n", q.Name, trunc(q.Error, 200))
			}
		}
	}
	if reference != "" {
		fmt.Fprintf(&b, "\nquery answers compared with %s (relative tolerance %g):\n", reference, RelTolerance)
		same := true
		for _, r := range results {
			for _, q := range r.Queries {
				if len(q.Diffs) > 0 {
					same = false
					fmt.Fprintf(&b, "- %s / %s: %s\n", r.System, q.Name, strings.Join(q.Diffs, "; "))
				}
			}
		}
		if same {
			b.WriteString("- every system returned the same answers\n")
		}
	}
	return b.String()
}

// queryTable writes per-query p50/p99 latencies, one column per system.
func queryTable(b *strings.Builder, results []SystemResult) {
	var names []string
	for _, r := range results {
		if len(r.Queries) > len(names) {
			names = names[:0]
			for _, q := range r.Queries {
				names = append(names, q.Name)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	b.WriteString("| query p50 / p99 (s) |")
	for _, r := range results {
		fmt.Fprintf(b, " %s |", r.System)
	}
	b.WriteString("\n|---|")
	for range results {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for i, n := range names {
		fmt.Fprintf(b, "| %s |", n)
		for _, r := range results {
			switch {
			case i >= len(r.Queries):
				b.WriteString(" – |")
			case r.Queries[i].Error != "":
				b.WriteString(" error |")
			default:
				fmt.Fprintf(b, " %s / %s |", num(r.Queries[i].P50S), num(r.Queries[i].P99S))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func trunc(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func num(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e4:
		return fmt.Sprintf("%d", int64(v))
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.4f", v)
	}
}

func bytesH(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}

// WriteJSON writes results to dir/<timestamp>.json and returns the path.
func WriteJSON(dir string, results []SystemResult, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results dir: %w", err)
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, now.UTC().Format("20060102T150405Z")+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}
