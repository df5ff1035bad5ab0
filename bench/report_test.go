package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	w := &Workload{Opts: DefaultWorkloadOptions(), ActiveSeries: 100, Nodes: 1, Replicas: 1}
	results := []SystemResult{
		{System: "weft", MaxIngestSamplesPerS: 200_000, RSSBytesPerActiveSeries: 1000, DiskBytesPerSample: 1.5,
			Protocols: []ProtocolResult{{Protocol: RW1, AcceptedSamples: 10, Stored: true, WriteP99S: 0.01}, {Protocol: RW2, AcceptedSamples: 10, Stored: false, SamplesPerS: 5, LastError: "not stored: x"}},
			Queries:   []QueryResult{{Name: "q1", P50S: 0.001, P99S: 0.002, answer: &Result{Type: "vector", Keys: []string{"{a=\"1\"}"}, Points: map[string][][2]float64{`{a="1"}`: {{1, 2}}}}}}},
		{System: "prometheus", MaxIngestSamplesPerS: 100_000, MaxIngestBound: true, RSSBytesPerActiveSeries: 4000, DiskBytesPerSample: 1.5,
			Protocols: []ProtocolResult{{Protocol: RW1, AcceptedSamples: 10, Stored: true, WriteP99S: 0.02}},
			Queries:   []QueryResult{{Name: "q1", P50S: 0.001, P99S: 0.002, answer: &Result{Type: "vector", Keys: []string{"{a=\"1\"}"}, Points: map[string][][2]float64{`{a="1"}`: {{1, 3}}}}}}},
		{System: "victoriametrics", Error: "start: boom"},
	}
	ref := CompareAnswers(results)
	if ref != "prometheus" {
		t.Fatalf("reference %q, want prometheus", ref)
	}
	if results[0].QueryDiffs != 1 {
		t.Fatalf("weft differs in %d queries, want 1", results[0].QueryDiffs)
	}
	md := Markdown(w, results, ref)
	for _, want := range []string{
		"| metric | weft | prometheus | victoriametrics | weft/prometheus | weft/victoriametrics |",
		"| max ingest (samples/s, RW1) | 200k | ≥100k | error | ≤2.00 | – |",
		"| RSS bytes / active series | 1000 | 4000 | error | 0.25 | – |",
		"| disk bytes / sample | 1.50 | 1.50 | error | 1.00 | – |",
		"| RW2 unpaced (samples/s) | – | – | error | – | – |",
		"**victoriametrics failed**: start: boom",
		"rw2: not stored: x",
		"weft / q1: {a=\"1\"} @1.000: 2, want 3",
		"| q1 | 0.0010 / 0.0020 | 0.0010 / 0.0020 | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}

	dir := t.TempDir()
	path, err := WriteJSON(dir, results, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, "20260102T030405Z.json") {
		t.Errorf("path %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d objects, want 3", len(got))
	}
	for _, k := range []string{"system", "max_ingest_samples_per_s", "rss_bytes_per_active_series", "cpu_seconds_per_million_samples", "disk_bytes_per_sample", "query_p50_s", "query_p99_s"} {
		for _, o := range got {
			if _, ok := o[k]; !ok {
				t.Errorf("object %v lacks key %s", o["system"], k)
			}
		}
	}
}
