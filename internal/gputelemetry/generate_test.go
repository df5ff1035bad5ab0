package gputelemetry

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

func dayOptions() Options {
	o := DefaultOptions()
	o.Duration = 24 * time.Hour
	return o
}

func sameSeries(a, b []Series) int {
	if len(a) != len(b) {
		return -2
	}
	for i := range a {
		if !labels.Equal(a[i].Labels, b[i].Labels) || !slices.Equal(a[i].T, b[i].T) ||
			!slices.EqualFunc(a[i].V, b[i].V, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }) {
			return i
		}
	}
	return -1
}

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(DefaultOptions()), Generate(DefaultOptions())
	if i := sameSeries(a, b); i != -1 {
		t.Fatalf("series %d differs between two runs with the same seed (-2: count)", i)
	}
	o := DefaultOptions()
	o.Seed = 2
	c := Generate(o)
	if len(c) == len(a) && slices.EqualFunc(c[0].V, a[0].V, func(x, y float64) bool { return x == y }) &&
		labels.Equal(c[0].Labels, a[0].Labels) {
		t.Fatalf("seed 2 produced the same first series as seed 1")
	}
}

// TestGenerateFamiliesIndependent checks that asking for more families
// changes none of the values of those asked for before: every family has
// its own draws, so a data set stays comparable when the agent grows.
func TestGenerateFamiliesIndependent(t *testing.T) {
	o := DefaultOptions()
	o.Duration = 30 * time.Minute
	compact := Generate(o)
	o.Families = AllKinds()
	all := Generate(o)
	byLabels := map[string]Series{}
	for _, s := range all {
		byLabels[s.Labels.String()] = s
	}
	for _, s := range compact {
		x, ok := byLabels[s.Labels.String()]
		if !ok {
			t.Fatalf("%v missing when every family is generated", s.Labels)
		}
		if i := sameSeries([]Series{s}, []Series{x}); i != -1 {
			t.Fatalf("%v changed when every family is generated", s.Labels)
		}
	}
}

func TestGenerateShape(t *testing.T) {
	opts := dayOptions()
	all := Generate(opts)
	interval := opts.Interval.Milliseconds()
	runs := map[string]map[string]bool{} // Hostname -> run_ids
	want := []string{"Hostname", "UUID", "__name__", "container", "device", "gpu", "gpu_uuid", "instance", "job", "model", "modelName", "namespace", "pci_bus_id", "pod", "run_id"}
	kinds := map[Kind]int{}
	for _, s := range all {
		var names []string
		s.Labels.Range(func(l labels.Label) { names = append(names, l.Name) })
		if !slices.Equal(names, want) {
			t.Fatalf("labels %v, want names %v", s.Labels, want)
		}
		if s.Labels.Get("__name__") != s.Kind.MetricName() {
			t.Fatalf("series %v has kind %v", s.Labels, s.Kind)
		}
		if s.Labels.Get("UUID") != s.Labels.Get("gpu_uuid") {
			t.Fatalf("%v: gpu_uuid differs from UUID", s.Labels)
		}
		kinds[s.Kind]++
		host := s.Labels.Get("Hostname")
		if runs[host] == nil {
			runs[host] = map[string]bool{}
		}
		runs[host][s.Labels.Get("run_id")] = true
		if len(s.T) != len(s.V) || len(s.T) == 0 {
			t.Fatalf("%v: %d timestamps, %d values", s.Labels, len(s.T), len(s.V))
		}
		for i := 1; i < len(s.T); i++ {
			d := s.T[i] - s.T[i-1]
			// Consecutive scrapes: one interval ± twice the jitter, or a
			// missed scrape (a multiple of the interval).
			if r := d % interval; d < interval-2*int64(opts.JitterMs) || (r > 2*int64(opts.JitterMs) && r < interval-2*int64(opts.JitterMs)) {
				t.Fatalf("%v: step %d ms at %d is off the %d ms grid", s.Labels, d, i, interval)
			}
		}
		checkValues(t, s)
	}
	if len(kinds) != len(CompactKinds()) {
		t.Errorf("%d families generated, want the %d compact ones", len(kinds), len(CompactKinds()))
	}
	for host, ids := range runs {
		if len(ids) < 3 {
			t.Errorf("%s ran %d jobs in a day, want run churn (>= 3)", host, len(ids))
		}
	}
}

func checkValues(t *testing.T, s Series) {
	t.Helper()
	distinct := map[float64]bool{}
	name := s.Kind.MetricName()
	for i, v := range s.V {
		if math.Float64bits(v) == value.StaleNaN {
			if i != len(s.V)-1 {
				t.Fatalf("%v: stale marker at %d of %d", s.Labels, i, len(s.V))
			}
			continue
		}
		distinct[v] = true
		switch name {
		case "DCGM_FI_DEV_POWER_USAGE":
			if v < 0 || v > 800 || math.Round(v*1000)/1000 != v {
				t.Fatalf("%v: power %v is not watts with 3 decimals", s.Labels, v)
			}
		default:
			if v != math.Trunc(v) || v < 0 {
				t.Fatalf("%v: %v is not a non-negative integer", s.Labels, v)
			}
		}
		if name == "DCGM_FI_DEV_GPU_UTIL" && v > 100 {
			t.Fatalf("%v: utilization %v > 100", s.Labels, v)
		}
		// PCIe throughput is typed counter (as dcgm-exporter does) but is
		// a sampled rate.
		if s.Kind.IsCounter() && name != "DCGM_FI_DEV_PCIE_RX_THROUGHPUT" && i > 0 && v < s.V[i-1] {
			t.Fatalf("%v: counter decreased from %v to %v", s.Labels, s.V[i-1], v)
		}
	}
	// Gauges on plateaus and flat counters have few distinct values; only
	// power, energy and the traffic figures vary from scrape to scrape.
	if n := len(s.V); n >= 200 {
		switch name {
		case "DCGM_FI_DEV_GPU_UTIL":
			if len(distinct) > 60 {
				t.Errorf("%v: %d distinct utilization values in %d samples, want plateaus", s.Labels, len(distinct), n)
			}
		case "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":
			if len(distinct) > 2 {
				t.Errorf("%v: %d distinct values, want (almost) constant", s.Labels, len(distinct))
			}
		case "DCGM_FI_DEV_SM_CLOCK":
			if len(distinct) > len(H100.SMClocks)+1 {
				t.Errorf("%v: %d distinct clocks", s.Labels, len(distinct))
			}
		case "DCGM_FI_DEV_CLOCKS_EVENT_REASONS":
			if len(distinct) > 3 {
				t.Errorf("%v: %d distinct reason masks, want a few", s.Labels, len(distinct))
			}
		}
	}
}

// TestGenerateAllKinds generates every family over a mixed fleet (H100
// with MIG, A100, V100) and checks the family-specific series: per link
// and direction, per reason, per process, per MIG device, and the agent's
// own series per node.
func TestGenerateAllKinds(t *testing.T) {
	o := DefaultOptions()
	o.Nodes = 3
	o.Duration = 20 * time.Minute
	o.Families = AllKinds()
	o.Models = []GPUModel{H100, A100, V100}
	o.MIGNodes = 1
	count := map[string]map[string]bool{} // family -> distinct label sets
	for _, s := range Generate(o) {
		n := s.Kind.MetricName()
		if count[n] == nil {
			count[n] = map[string]bool{}
		}
		count[n][s.Labels.String()] = true
	}
	for _, tc := range []struct {
		family string
		want   int
	}{
		// One run per node at a time in 20 minutes, possibly two: at least.
		{"weft_gpu_nvlink_data_kib_total", 8 * 2 * (18 + 12 + 6)},
		{"weft_gpu_nvlink_errors_total", 8 * 4 * (18 + 12 + 6)},
		{"weft_gpu_clock_event_active", 3 * 8 * 9},
		{"weft_gpu_clock_event_seconds_total", 3 * 8 * 6},
		{"weft_gpu_mig_instance_info", 8 * 2},
		{"weft_gpu_process_memory_used", 3 * 8},
		{"DCGM_FI_DEV_RETIRED_SBE", 8},
		{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 2 * 8},
		{"gpu_agent_nvml_up", 3},
		{"gpu_agent_queue_bytes", 3},
	} {
		if got := len(count[tc.family]); got < tc.want {
			t.Errorf("%s: %d series, want at least %d", tc.family, got, tc.want)
		}
	}
}
