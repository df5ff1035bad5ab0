package bench

import (
	"strings"
	"testing"
	"time"
)

func TestLogMarkdown(t *testing.T) {
	w := &LogWorkload{Opts: DefaultLogOptions(), Lines: 100, Bytes: 17000}
	w.Opts.End = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ok := LogQueryResult{Query: "q", P50S: 0.5, P99S: 1, FirstS: 1, Runs: 3, Correct: true}
	results := []LogSystemResult{
		{System: "weft", DiskBytesPerLine: 40, LinesPerCPUSecond: 1000, Needle: ok, Agg: LogQueryResult{Query: "agg", Runs: 3, P50S: 1}},
		{System: "victorialogs", DiskBytesPerLine: 20, LinesPerCPUSecond: 4000, Needle: ok, Agg: ok},
	}
	md := LogMarkdown(w, results)
	for _, c := range []struct{ name, want string }{
		{"disk ratio", "| disk bytes / line (after graceful stop) | 40 | 20 | 2.00 |"},
		{"rate ratio", "| lines / s / core (ingest CPU) | 1000 | 4000 | 0.25 |"},
		{"missing figure", "| ingest lines / s (wall, unpaced) | – | – | – |"},
		{"wrong answer flagged", "`agg` (3 runs): **answer differs from the generator**"},
		{"right answer", "`q` (3 runs): answer matches the generator"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(md, c.want) {
				t.Fatalf("report lacks %q:\n%s", c.want, md)
			}
		})
	}
	results[0].Error = "boom"
	if md := LogMarkdown(w, results); !strings.Contains(md, "**weft failed**: boom") || strings.Contains(md, "weft/victorialogs") {
		t.Fatalf("failed weft not reported as such:\n%s", md)
	}
}

func TestSameLines(t *testing.T) {
	a := []LogLine{{1, "x"}, {2, "y"}, {2, "z"}}
	for _, c := range []struct {
		name string
		b    []LogLine
		want bool
	}{
		{"same order", []LogLine{{1, "x"}, {2, "y"}, {2, "z"}}, true},
		{"other order", []LogLine{{2, "z"}, {1, "x"}, {2, "y"}}, true},
		{"missing", []LogLine{{1, "x"}, {2, "y"}}, false},
		{"other timestamp", []LogLine{{1, "x"}, {3, "y"}, {2, "z"}}, false},
		{"duplicate instead", []LogLine{{1, "x"}, {2, "y"}, {2, "y"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sameLines(a, c.b); got != c.want {
				t.Fatalf("sameLines = %v, want %v", got, c.want)
			}
		})
	}
}
