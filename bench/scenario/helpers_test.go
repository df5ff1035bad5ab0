package scenario

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// testOptions keep the tests quick: an hour with the onset at 35 minutes
// (the ECC precursor then starts at 5 minutes, the NCCL watchdog fires
// twice after the stall).
func testOptions() Options {
	return Options{Seed: 7, Start: time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC), Duration: time.Hour, Onset: 35 * time.Minute}
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Data{}
)

// generated returns scenario name at testOptions, generated once per test
// binary (the data is immutable).
func generated(tb testing.TB, name string) *Data {
	tb.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if d, ok := cache[name]; ok {
		return d
	}
	d, err := Generate(name, testOptions())
	if err != nil {
		tb.Fatal(err)
	}
	cache[name] = d
	return d
}

func minutes(d *Data, m float64) int64 {
	return d.Options.Start.UnixMilli() + int64(m*60_000)
}

// valueAt is the series' last sample at or before t (NaN if none or
// stale).
func valueAt(s *Series, t int64) float64 {
	v := math.NaN()
	for i, ts := range s.T {
		if ts > t {
			break
		}
		v = s.V[i]
	}
	if math.Float64bits(v) == staleNaN {
		return math.NaN()
	}
	return v
}

// rate is a counter's increase per second between two instants.
func rate(s *Series, from, to int64) float64 {
	return (valueAt(s, to) - valueAt(s, from)) / (float64(to-from) / 1000)
}

// mean is a gauge's mean over [from, to].
func mean(s *Series, from, to int64) float64 {
	sum, n := 0.0, 0
	for i, ts := range s.T {
		if ts >= from && ts <= to && math.Float64bits(s.V[i]) != staleNaN {
			sum += s.V[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// sumRate sums rate over series.
func sumRate(ss []*Series, from, to int64) float64 {
	t := 0.0
	for _, s := range ss {
		if r := rate(s, from, to); !math.IsNaN(r) {
			t += r
		}
	}
	return t
}

// meanOf averages mean over series.
func meanOf(ss []*Series, from, to int64) float64 {
	t, n := 0.0, 0
	for _, s := range ss {
		if m := mean(s, from, to); !math.IsNaN(m) {
			t += m
			n++
		}
	}
	return t / float64(n)
}

// lines returns the entries of every stream containing needle, with the
// stream.
func lines(d *Data, needle string) (n int, streams map[*Stream]int) {
	streams = map[*Stream]int{}
	for _, s := range d.Streams {
		for _, e := range s.Entries {
			if strings.Contains(e.Line, needle) {
				n++
				streams[s]++
			}
		}
	}
	return n, streams
}

func l(name, value string) Label { return Label{Name: name, Value: value} }
