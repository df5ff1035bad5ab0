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

func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(DefaultOptions()), Generate(DefaultOptions())
	if len(a) != len(b) {
		t.Fatalf("series count differs: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if !labels.Equal(a[i].Labels, b[i].Labels) || !slices.Equal(a[i].T, b[i].T) ||
			!slices.EqualFunc(a[i].V, b[i].V, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }) {
			t.Fatalf("series %d differs between two runs with the same seed", i)
		}
	}
	o := DefaultOptions()
	o.Seed = 2
	c := Generate(o)
	if len(c) == len(a) && slices.EqualFunc(c[0].V, a[0].V, func(x, y float64) bool { return x == y }) &&
		labels.Equal(c[0].Labels, a[0].Labels) {
		t.Fatalf("seed 2 produced the same first series as seed 1")
	}
}

func TestGenerateShape(t *testing.T) {
	opts := dayOptions()
	all := Generate(opts)
	interval := opts.Interval.Milliseconds()
	runs := map[string]map[string]bool{} // Hostname -> run_ids
	want := []string{"Hostname", "UUID", "__name__", "container", "gpu", "instance", "job", "model", "modelName", "namespace", "pod", "run_id"}
	for _, s := range all {
		var names []string
		s.Labels.Range(func(l labels.Label) { names = append(names, l.Name) })
		if !slices.Equal(names, want) {
			t.Fatalf("labels %v, want names %v", s.Labels, want)
		}
		if s.Labels.Get("__name__") != s.Kind.MetricName() {
			t.Fatalf("series %v has kind %v", s.Labels, s.Kind)
		}
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
	for host, ids := range runs {
		if len(ids) < 3 {
			t.Errorf("%s ran %d jobs in a day, want run churn (>= 3)", host, len(ids))
		}
	}
}

func checkValues(t *testing.T, s Series) {
	t.Helper()
	distinct := map[float64]bool{}
	for i, v := range s.V {
		if math.Float64bits(v) == value.StaleNaN {
			if i != len(s.V)-1 {
				t.Fatalf("%v: stale marker at %d of %d", s.Labels, i, len(s.V))
			}
			continue
		}
		distinct[v] = true
		switch s.Kind {
		case Power:
			if v < 0 || v > 800 || math.Round(v*1000)/1000 != v {
				t.Fatalf("%v: power %v is not watts with 3 decimals", s.Labels, v)
			}
		case TensorActive:
			if v < 0 || v > 1 || math.Round(v*1e6)/1e6 != v {
				t.Fatalf("%v: ratio %v is not in [0,1] with 6 decimals", s.Labels, v)
			}
		default:
			if v != math.Trunc(v) || v < 0 {
				t.Fatalf("%v: %v is not a non-negative integer", s.Labels, v)
			}
		}
		if s.Kind == Utilization && v > 100 {
			t.Fatalf("%v: utilization %v > 100", s.Labels, v)
		}
		if s.Kind.IsCounter() && i > 0 && v < s.V[i-1] {
			t.Fatalf("%v: counter decreased from %v to %v", s.Labels, s.V[i-1], v)
		}
	}
	// Gauges on plateaus and flat counters have few distinct values; only
	// power, energy and the profiling ratio vary from scrape to scrape.
	if n := len(s.V); n >= 200 {
		switch s.Kind {
		case Utilization:
			if len(distinct) > 60 {
				t.Errorf("%v: %d distinct utilization values in %d samples, want plateaus", s.Labels, len(distinct), n)
			}
		case MemClock, ECCDBE:
			if len(distinct) > 2 {
				t.Errorf("%v: %d distinct values, want (almost) constant", s.Labels, len(distinct))
			}
		case SMClock:
			if len(distinct) > len(smClocks)+1 {
				t.Errorf("%v: %d distinct clocks", s.Labels, len(distinct))
			}
		}
	}
}
