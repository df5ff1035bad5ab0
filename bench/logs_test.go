package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func tinyLogOptions() LogOptions {
	o := DefaultLogOptions()
	o.Lines, o.LinesPerPush, o.Workers = 6000, 250, 3
	o.End = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return o
}

// pushedLine is one entry decoded back from a push body.
type pushedLine struct {
	labels map[string]string
	ts     int64
	line   string
}

// decodePayloads parses every push body as Loki's JSON push format.
func decodePayloads(t testing.TB, w *LogWorkload) []pushedLine {
	t.Helper()
	var out []pushedLine
	for i, p := range w.Payloads {
		var req struct {
			Streams []struct {
				Stream map[string]string `json:"stream"`
				Values [][]string        `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(p.Body, &req); err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		n := 0
		for _, s := range req.Streams {
			for _, v := range s.Values {
				if len(v) != 2 {
					t.Fatalf("payload %d: entry with %d fields", i, len(v))
				}
				ts, err := strconv.ParseInt(v[0], 10, 64)
				if err != nil {
					t.Fatalf("payload %d: timestamp %q", i, v[0])
				}
				out = append(out, pushedLine{s.Stream, ts, v[1]})
				n++
			}
		}
		if n != p.Lines {
			t.Fatalf("payload %d: %d lines, says %d", i, n, p.Lines)
		}
	}
	return out
}

// TestGenerateLogs checks the generator's books against what its payloads
// really contain, and that it is deterministic.
func TestGenerateLogs(t *testing.T) {
	o := tinyLogOptions()
	w, err := GenerateLogs(o)
	if err != nil {
		t.Fatal(err)
	}
	lines := decodePayloads(t, w)
	if len(lines) != o.Lines || w.Lines != o.Lines {
		t.Fatalf("payloads hold %d lines, workload says %d, want %d", len(lines), w.Lines, o.Lines)
	}
	ex := w.Expect
	var needle []LogLine
	perRun := map[string]int{}
	last := map[string]int64{} // per stream (pod is unique)
	streams := map[string]bool{}
	kinds := map[string]int{}
	for _, l := range lines {
		pod := l.labels["pod"]
		streams[pod] = true
		if l.ts <= last[pod] {
			t.Fatalf("stream %s: timestamp %d after %d (out of order)", pod, l.ts, last[pod])
		}
		last[pod] = l.ts
		if l.ts <= o.End.UnixNano()-int64(o.Span) || l.ts > o.End.UnixNano() {
			t.Fatalf("timestamp %d outside the span", l.ts)
		}
		if l.ts%int64(time.Millisecond) == 0 {
			t.Fatalf("timestamp %d on a millisecond bound", l.ts)
		}
		if strings.Contains(l.line, ex.Needle) {
			needle = append(needle, LogLine{l.ts, l.line})
		}
		if l.labels["job"] == "trainer" && l.ts >= ex.AggStart && l.ts <= ex.AggEnd {
			perRun[l.labels["run_id"]]++
		}
		for _, k := range []string{"trace_id", "NCCL", "Xid", "level=warn", "level=error", `"loss":`, " loss="} {
			if strings.Contains(l.line, k) {
				kinds[k]++
			}
		}
		for _, name := range []string{"job", "namespace", "pod", "run_id", "rank"} {
			if l.labels[name] == "" {
				t.Fatalf("stream %v lacks label %s", l.labels, name)
			}
		}
	}
	if len(streams) != len(w.Streams) || len(streams) < 24 {
		t.Errorf("%d streams in the payloads, %d generated; want a few dozen", len(streams), len(w.Streams))
	}
	if len(needle) == 0 || !sameLines(needle, ex.NeedleLines) {
		t.Errorf("needle %s: payloads hold %d lines with it, generator expects %d", ex.Needle, len(needle), len(ex.NeedleLines))
	}
	if !sameCounts(perRun, ex.TrainerPerRun) || len(perRun) != o.Runs {
		t.Errorf("trainer lines per run in the hour: payloads %v, generator %v", perRun, ex.TrainerPerRun)
	}
	for k, n := range kinds {
		if n == 0 {
			t.Errorf("no line of kind %q", k)
		}
	}
	if f := float64(kinds["trace_id"]) / float64(len(lines)); f < o.TraceFraction/2 || f > o.TraceFraction*2 {
		t.Errorf("trace_id on %.3f of lines, want about %.2f", f, o.TraceFraction)
	}

	w2, err := GenerateLogs(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(w2.Payloads) != len(w.Payloads) {
		t.Fatalf("second run: %d payloads, first %d", len(w2.Payloads), len(w.Payloads))
	}
	for i := range w.Payloads {
		if !bytes.Equal(w.Payloads[i].Body, w2.Payloads[i].Body) {
			t.Fatalf("payload %d differs between two runs with the same options", i)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "abc", "abc"},
		{"quotes and backslash", `msg="a \ b"`, `msg="a \ b"`},
		{"control", "a\tb\nc\x01", "a\tb\nc\x01"},
		{"utf8", "héllo ✓", "héllo ✓"},
		{"invalid utf8", "a\xffb", "a\ufffdb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			if err := json.Unmarshal(appendJSONString(nil, c.in), &got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestLogOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*LogOptions)
	}{
		{"no lines", func(o *LogOptions) { o.Lines = 0 }},
		{"short span", func(o *LogOptions) { o.Span = time.Minute }},
		{"too dense", func(o *LogOptions) { o.Lines = int(o.Span / time.Millisecond) }},
		{"no workers", func(o *LogOptions) { o.Workers = 0 }},
		{"bad fraction", func(o *LogOptions) { o.TraceFraction = 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultLogOptions()
			c.mod(&o)
			if o.Validate() == nil {
				t.Fatal("accepted")
			}
		})
	}
	if err := DefaultLogOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestSmokeLogsWeft builds cmd/weft and runs the log benchmark against it at
// a tiny scale: every line accepted and counted, the needle query returns
// exactly the generator's lines and the hourly count by run_id its counts.
// Not timed.
func TestSmokeLogsWeft(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weft")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/weftdb/weft/cmd/weft")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/weft: %v\n%s", err, out)
	}
	args := os.Getenv("WEFT_BENCH_WEFT_ARGS")
	if args == "" {
		args = DefaultWeftArgs
	}
	o := tinyLogOptions()
	o.End = time.Now().Truncate(time.Second) // weft refuses lines older than a week
	w, err := GenerateLogs(o)
	if err != nil {
		t.Fatal(err)
	}
	ro := DefaultLogRunOptions()
	ro.QueryRepeats, ro.WorkDir, ro.SettleMax = 2, t.TempDir(), 2*time.Second
	r := RunLogTarget(ctx, WeftLogTarget(bin, args), w, ro)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.LinesAccepted != w.Lines || r.Rejections != 0 || r.LinesFound != w.Lines {
		t.Errorf("accepted %d, found %d of %d lines, %d rejections (last: %s)", r.LinesAccepted, r.LinesFound, w.Lines, r.Rejections, r.LastPushError)
	}
	if !r.Needle.Correct || r.Needle.Runs != 2 {
		t.Errorf("needle %s: %d runs, error %q, got %d lines, want %v", r.Needle.Query, r.Needle.Runs, r.Needle.Error, len(r.needleAnswer), w.Expect.NeedleLines)
	}
	if !r.Agg.Correct || r.Agg.Runs != 2 {
		t.Errorf("%s: %d runs, error %q, got %v, want %v", r.Agg.Query, r.Agg.Runs, r.Agg.Error, r.aggAnswer, w.Expect.TrainerPerRun)
	}
	if !r.GracefulStop || r.DiskBytes <= 0 {
		t.Errorf("graceful stop %v, disk %d bytes", r.GracefulStop, r.DiskBytes)
	}
}
