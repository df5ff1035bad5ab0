package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/klauspost/compress/gzip"
	"io"

	"github.com/weftdb/weft/internal/gputelemetry"
)

func tinyOptions(tb testing.TB) WorkloadOptions {
	tb.Helper()
	o, err := Scale("tiny")
	if err != nil {
		tb.Fatal(err)
	}
	o.Start = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	return o
}

// tinyRW1 is the tiny workload as one remote-write 1.0 segment, no spike.
func tinyRW1(tb testing.TB) (WorkloadOptions, *Workload) {
	tb.Helper()
	o := tinyOptions(tb)
	o.Segments = []Segment{{RW1, 1}}
	o.SpikeSeries = 0
	w, err := Generate(o)
	if err != nil {
		tb.Fatal(err)
	}
	return o, w
}

func TestGenerateDeterministic(t *testing.T) {
	o := tinyOptions(t)
	a, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Segments) != len(b.Segments) {
		t.Fatalf("segments %d vs %d", len(a.Segments), len(b.Segments))
	}
	for i := range a.Segments {
		pa, pb := a.Segments[i].Payloads, b.Segments[i].Payloads
		if len(pa) != len(pb) {
			t.Fatalf("segment %d: %d vs %d payloads", i, len(pa), len(pb))
		}
		for j := range pa {
			if !bytes.Equal(pa[j].Body, pb[j].Body) {
				t.Fatalf("segment %d payload %d differs between runs with the same seed", i, j)
			}
		}
	}
	o.Seed++
	c, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Segments[0].Payloads[0].Body, c.Segments[0].Payloads[0].Body) {
		t.Fatal("a different seed produced the same first payload")
	}
}

// decodeRW1 returns the series of every RW1 payload of seg.
func decodeRW1(tb testing.TB, seg *SegmentData) []prompb.TimeSeries {
	tb.Helper()
	var out []prompb.TimeSeries
	for _, p := range seg.Payloads {
		raw, err := snappy.Decode(nil, p.Body)
		if err != nil {
			tb.Fatal(err)
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(raw); err != nil {
			tb.Fatal(err)
		}
		n := 0
		for _, ts := range req.Timeseries {
			n += len(ts.Samples)
		}
		if n != p.Samples {
			tb.Fatalf("payload claims %d samples, holds %d", p.Samples, n)
		}
		out = append(out, req.Timeseries...)
	}
	return out
}

func TestWorkloadDynamics(t *testing.T) {
	o, w := tinyRW1(t)
	seg := w.Segments[0]
	nSteps := int(o.Duration / o.ScrapeInterval)
	// Every active series gets one sample per scrape; rotated series add a
	// staleness marker and their successors start later.
	if seg.Samples < w.ActiveSeries*nSteps {
		t.Fatalf("%d samples, want at least %d", seg.Samples, w.ActiveSeries*nSteps)
	}
	type hist struct {
		last   sample
		kind   string
		stales int
	}
	byKey := map[string]*hist{}
	runs := map[string]bool{}
	for _, ts := range decodeRW1(t, seg) {
		var key, name string
		for i, l := range ts.Labels {
			if i > 0 && ts.Labels[i-1].Name >= l.Name {
				t.Fatalf("labels not sorted: %v", ts.Labels)
			}
			key += l.Name + "=" + l.Value + ","
			if l.Name == "__name__" {
				name = l.Value
			}
			if l.Name == "run_id" {
				runs[l.Value] = true
			}
		}
		h := byKey[key]
		if h == nil {
			h = &hist{last: sample{t: math.MinInt64}, kind: name}
			byKey[key] = h
		}
		for _, s := range ts.Samples {
			if s.Timestamp <= h.last.t {
				t.Fatalf("%s: timestamp %d not after %d", key, s.Timestamp, h.last.t)
			}
			if math.Float64bits(s.Value) == math.Float64bits(staleNaN) {
				h.stales++
				h.last.t = s.Timestamp
				continue
			}
			counter := name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" || name == "vllm:generation_tokens_total" || name == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
			if counter && h.last.t != math.MinInt64 && s.Value < h.last.v {
				t.Fatalf("%s: counter went down %g -> %g", key, h.last.v, s.Value)
			}
			if name == "DCGM_FI_DEV_GPU_UTIL" && (s.Value < 0 || s.Value > 100) {
				t.Fatalf("utilization %g out of range", s.Value)
			}
			h.last = sample{s.Timestamp, s.Value}
		}
	}
	if got, want := len(byKey), seg.Expect.Created["DCGM_FI_DEV_GPU_UTIL"]*SeriesPerGPU+w.Replicas*SeriesPerReplica; got != want {
		t.Errorf("distinct series %d, want %d", got, want)
	}
	if seg.Expect.Created["DCGM_FI_DEV_GPU_UTIL"] <= w.Nodes*GPUsPerNode {
		t.Errorf("no churn: %d GPU util series for %d GPUs", seg.Expect.Created["DCGM_FI_DEV_GPU_UTIL"], w.Nodes*GPUsPerNode)
	}
	if len(runs) != seg.Expect.Runs {
		t.Errorf("%d runs in payloads, expectation says %d", len(runs), seg.Expect.Runs)
	}
	if seg.Expect.ActiveGPUs != w.Nodes*GPUsPerNode {
		t.Errorf("active GPUs %d, want %d", seg.Expect.ActiveGPUs, w.Nodes*GPUsPerNode)
	}
}

func TestPayloadsDecode(t *testing.T) {
	o := tinyOptions(t)
	w, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range w.Segments {
		t.Run(string(seg.Protocol), func(t *testing.T) {
			for _, p := range seg.Payloads {
				var n int
				switch seg.Protocol {
				case RW1:
					raw, err := snappy.Decode(nil, p.Body)
					if err != nil {
						t.Fatal(err)
					}
					var req prompb.WriteRequest
					if err := req.Unmarshal(raw); err != nil {
						t.Fatal(err)
					}
					for _, ts := range req.Timeseries {
						n += len(ts.Samples)
					}
				case RW2:
					raw, err := snappy.Decode(nil, p.Body)
					if err != nil {
						t.Fatal(err)
					}
					var req writev2.Request
					if err := req.Unmarshal(raw); err != nil {
						t.Fatal(err)
					}
					for _, ts := range req.Timeseries {
						for _, r := range ts.LabelsRefs {
							if int(r) >= len(req.Symbols) {
								t.Fatalf("label ref %d out of %d symbols", r, len(req.Symbols))
							}
						}
						n += len(ts.Samples)
					}
				case OTLP:
					zr, err := gzip.NewReader(bytes.NewReader(p.Body))
					if err != nil {
						t.Fatal(err)
					}
					raw, err := io.ReadAll(zr)
					if err != nil {
						t.Fatal(err)
					}
					req := pmetricotlp.NewExportRequest()
					if err := req.UnmarshalProto(raw); err != nil {
						t.Fatal(err)
					}
					// A histogram data point stands for its buckets, sum and count.
					n = req.Metrics().DataPointCount()
					if n == 0 {
						t.Fatal("empty OTLP payload")
					}
					continue
				}
				if n != p.Samples {
					t.Fatalf("payload claims %d samples, holds %d", p.Samples, n)
				}
			}
		})
	}
	if w.Spike == nil || w.SpikeSeries < o.SpikeSeries {
		t.Fatalf("spike of %d series, want >= %d", w.SpikeSeries, o.SpikeSeries)
	}
}

// TestGPUFamiliesAreTheAgents checks that every GPU metric name the
// workload sends is one weft-agent exports (through the shared generator,
// whose own test holds its family table to gpuagent.AllMetrics), and that
// every GPU sends each of its families once per scrape.
func TestGPUFamiliesAreTheAgents(t *testing.T) {
	_, w := tinyRW1(t)
	agent := map[string]bool{}
	for _, f := range gputelemetry.Families() {
		agent[f.Name] = true
	}
	perGPU := map[string]map[string]bool{} // UUID -> names
	for _, ts := range decodeRW1(t, w.Segments[0]) {
		var name, uuid string
		for _, l := range ts.Labels {
			switch l.Name {
			case "__name__":
				name = l.Value
			case "UUID":
				uuid = l.Value
			}
		}
		if strings.HasPrefix(name, "vllm:") {
			continue
		}
		if !agent[name] {
			t.Errorf("GPU series %s: weft-agent exports no such family", name)
		}
		if perGPU[uuid] == nil {
			perGPU[uuid] = map[string]bool{}
		}
		perGPU[uuid][name] = true
	}
	for uuid, names := range perGPU {
		if len(names) != SeriesPerGPU {
			t.Fatalf("GPU %s sends %d families, want %d", uuid, len(names), SeriesPerGPU)
		}
	}
	if len(perGPU) < w.Nodes*GPUsPerNode {
		t.Fatalf("%d GPUs sent series, want %d", len(perGPU), w.Nodes*GPUsPerNode)
	}
}
