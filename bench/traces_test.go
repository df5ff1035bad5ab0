package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/weftdb/weft/bench/scenario"
)

func tinyTraceOptions() TraceOptions {
	o := DefaultTraceOptions()
	o.Spans, o.Services, o.Replicas, o.Runs, o.RanksPerRun = 6000, 3, 2, 2, 4
	o.SpansPerRequest, o.Workers, o.ByID = 250, 3, 40
	o.SearchQuantile = 0.9
	o.End = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return o
}

// decodeTraceRequests parses every request body back into spans per trace.
func decodeTraceRequests(t testing.TB, w *TraceWorkload) map[scenario.TraceID]int {
	t.Helper()
	perTrace := map[scenario.TraceID]int{}
	for i, r := range w.Requests {
		zr, err := gzip.NewReader(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if td.SpanCount() != r.Spans {
			t.Fatalf("request %d: %d spans, says %d", i, td.SpanCount(), r.Spans)
		}
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					perTrace[scenario.TraceID(sp.TraceID())]++
					if sp.EndTimestamp() < sp.StartTimestamp() {
						t.Fatalf("request %d: span %s ends before it starts", i, sp.Name())
					}
				}
			}
		}
	}
	return perTrace
}

// TestGenerateTraces checks the generator's books against what its requests
// really contain, and that it is deterministic.
func TestGenerateTraces(t *testing.T) {
	o := tinyTraceOptions()
	w, err := GenerateTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	perTrace := decodeTraceRequests(t, w)
	total := 0
	for _, n := range perTrace {
		total += n
	}
	if total != w.Spans || len(perTrace) != w.Traces {
		t.Fatalf("requests hold %d spans in %d traces, workload says %d in %d", total, len(perTrace), w.Spans, w.Traces)
	}
	if w.Spans < o.Spans*9/10 || w.Spans > o.Spans*11/10 {
		t.Errorf("%d spans generated, asked for %d", w.Spans, o.Spans)
	}
	if len(w.Lookups) != o.ByID {
		t.Fatalf("%d lookups, want %d", len(w.Lookups), o.ByID)
	}
	for _, l := range w.Lookups {
		if perTrace[l.ID] != l.Spans {
			t.Fatalf("lookup %x: books %d spans, requests hold %d", l.ID, l.Spans, perTrace[l.ID])
		}
	}
	// One search per model service and one for the trainers, each with
	// traces to find, every Must also a May, none cut by the limit.
	if len(w.Searches) != o.Services+1 {
		t.Fatalf("%d searches, want %d", len(w.Searches), o.Services+1)
	}
	for _, s := range w.Searches {
		if len(s.Must) == 0 || s.MinDuration <= 0 || len(s.MayAnySpan) > s.Limit {
			t.Errorf("search %s >= %s: %d must, %d may, limit %d", s.Service, s.MinDuration, len(s.Must), len(s.May), s.Limit)
		}
		for id := range s.Must {
			if !s.May[id] {
				t.Errorf("search %s: %x must but not may", s.Service, id)
			}
		}
		for id := range s.May {
			if !s.MayAnySpan[id] {
				t.Errorf("search %s: %x may on one span but not on any span", s.Service, id)
			}
		}
	}
	again, err := GenerateTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Requests) != len(w.Requests) {
		t.Fatalf("second run: %d requests, first %d", len(again.Requests), len(w.Requests))
	}
	for i := range w.Requests {
		if !bytes.Equal(w.Requests[i].Body, again.Requests[i].Body) {
			t.Fatalf("request %d differs between two runs of the same options", i)
		}
	}
}

func TestTraceOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*TraceOptions)
	}{
		{"no spans", func(o *TraceOptions) { o.Spans = 0 }},
		{"short span", func(o *TraceOptions) { o.Span = time.Hour }},
		{"no end", func(o *TraceOptions) { o.End = time.Time{} }},
		{"no workers", func(o *TraceOptions) { o.Workers = 0 }},
		{"bad share", func(o *TraceOptions) { o.TrainingShare = 1.5 }},
		{"bad quantile", func(o *TraceOptions) { o.SearchQuantile = 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := tinyTraceOptions()
			c.mod(&o)
			if o.Validate() == nil {
				t.Fatal("accepted")
			}
		})
	}
	if err := tinyTraceOptions().Validate(); err != nil {
		t.Fatalf("tiny: %v", err)
	}
}

func TestCheckSearch(t *testing.T) {
	a, b, c := scenario.TraceID{1}, scenario.TraceID{2}, scenario.TraceID{3}
	s := TraceSearch{Must: map[scenario.TraceID]bool{a: true}, May: map[scenario.TraceID]bool{a: true, b: true}}
	for _, tc := range []struct {
		name string
		got  []scenario.TraceID
		ok   bool
	}{
		{"must only", []scenario.TraceID{a}, true},
		{"must and may", []scenario.TraceID{a, b}, true},
		{"missing must", []scenario.TraceID{b}, false},
		{"unexpected", []scenario.TraceID{a, c}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := checkSearch(s, tc.got, nil); (msg == "") != tc.ok {
				t.Fatalf("checkSearch = %q, want ok %v", msg, tc.ok)
			}
		})
	}
	if id, err := parseTraceID("abc"); err != nil || id != (scenario.TraceID{14: 0x0a, 15: 0xbc}) {
		t.Fatalf("parseTraceID(abc) = %x, %v", id, err)
	}
}

// TestSmokeTracesWeft builds cmd/weft and runs the trace benchmark against
// it at a tiny scale: every span accepted, every trace looked up whole and
// every search's answer within the generator's. Not timed; Jaeger is not
// needed.
func TestSmokeTracesWeft(t *testing.T) {
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
	o := tinyTraceOptions()
	o.End = time.Now().UTC().Truncate(time.Second)
	w, err := GenerateTraces(o)
	if err != nil {
		t.Fatal(err)
	}
	ro := DefaultTraceRunOptions()
	ro.QueryRepeats, ro.WorkDir, ro.SettleMax = 1, t.TempDir(), 2*time.Second
	r := RunTraceTarget(ctx, WeftTraceTarget(bin, args), w, ro)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.SpansAccepted != w.Spans || r.Rejections != 0 {
		t.Errorf("accepted %d of %d spans, %d rejections (last: %s)", r.SpansAccepted, w.Spans, r.Rejections, r.LastPushError)
	}
	if !r.ByID.Correct() || r.ByID.Runs != len(w.Lookups) {
		t.Errorf("trace by ID: %d runs, %d wrong (%s), error %q", r.ByID.Runs, r.ByID.Wrong, r.ByID.Detail, r.ByID.Error)
	}
	if !r.Search.Correct() || r.Search.Runs != len(w.Searches) {
		t.Errorf("search: %d runs, %d wrong (%s), error %q", r.Search.Runs, r.Search.Wrong, r.Search.Detail, r.Search.Error)
	}
	if !r.GracefulStop || r.DiskBytes <= 0 || r.CPUSecondsIngest <= 0 || r.PeakRSSBytes <= 0 {
		t.Errorf("graceful stop %v, disk %d bytes, ingest CPU %.2fs, peak RSS %d", r.GracefulStop, r.DiskBytes, r.CPUSecondsIngest, r.PeakRSSBytes)
	}
}
