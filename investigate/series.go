package investigate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// grid is the regular time grid series are read on: Start + i*Step (ms).
type grid struct {
	Start, Step int64
	N           int
}

func (g grid) at(i int) int64 { return g.Start + int64(i)*g.Step }

// series is one metric series on the grid: NaN where it had no sample
// within two steps.
type series struct {
	ls    labels.Labels
	v     []float64
	first int64 // first sample (ms); -1 if none
	last  float64
}

// readSeries reads every float series matching any of alts over g, at
// most max of them (ErrTooMany beyond).
func readSeries(ctx context.Context, q promstorage.Queryable, g grid, max int, alts ...[]*labels.Matcher) ([]*series, error) {
	mint, maxt := g.Start-2*g.Step, g.at(g.N-1)
	qr, err := q.Querier(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("querier: %w", err)
	}
	defer qr.Close()
	seen := map[uint64]struct{}{}
	var out []*series
	for _, ms := range alts {
		ss := qr.Select(ctx, false, &promstorage.SelectHints{Start: mint, End: maxt, Func: "series"}, ms...)
		var it chunkenc.Iterator
		for ss.Next() {
			s := ss.At()
			ls := s.Labels()
			h := ls.Hash()
			if _, dup := seen[h]; dup {
				continue
			}
			seen[h] = struct{}{}
			if len(out) >= max {
				return nil, fmt.Errorf("%w: more than %d series in scope", ErrTooMany, max)
			}
			it = s.Iterator(it)
			out = append(out, resample(ls, it, g))
		}
		if err := ss.Err(); err != nil {
			return nil, fmt.Errorf("select: %w", err)
		}
	}
	return out, nil
}

// resample puts the last sample at or before each grid point, if it is at
// most two steps old; staleness markers end a series.
func resample(ls labels.Labels, it chunkenc.Iterator, g grid) *series {
	s := &series{ls: ls, v: make([]float64, g.N), first: -1, last: math.NaN()}
	for i := range s.v {
		s.v[i] = math.NaN()
	}
	i := 0
	var lastT int64 = math.MinInt64
	lastV := math.NaN()
	fill := func(upTo int64) {
		for i < g.N && g.at(i) < upTo {
			if lastT != math.MinInt64 && g.at(i)-lastT <= 2*g.Step {
				s.v[i] = lastV
			}
			i++
		}
	}
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		if vt != chunkenc.ValFloat {
			continue
		}
		t, v := it.At()
		fill(t)
		if value.IsStaleNaN(v) {
			lastT, lastV = math.MinInt64, math.NaN()
			continue
		}
		if s.first < 0 {
			s.first = t
		}
		lastT, lastV = t, v
		s.last = v
	}
	fill(math.MaxInt64)
	return s
}

// isCounter decides whether a series is read as a rate: a counter's name
// (_total, any case) and values that never fall (but for resets) and rise
// at most steps of the baseline. A counter that rarely moves (an error
// count) is read as a level: its step is the event.
func isCounter(s *series, base int) bool {
	name := s.ls.Get(labels.MetricName)
	lower := strings.ToLower(name)
	if !strings.HasSuffix(lower, "_total") && !strings.Contains(lower, "_total_") && !strings.Contains(lower, "energy_consumption") {
		return false
	}
	rises, steps := 0, 0
	prev := math.NaN()
	for _, v := range s.v[:base] {
		if math.IsNaN(v) {
			continue
		}
		if !math.IsNaN(prev) {
			steps++
			if v > prev {
				rises++
			}
		}
		prev = v
	}
	return steps > 0 && rises*2 >= steps
}

// rates turns a counter's values into per-second rates on the grid.
func rates(v []float64, step int64) []float64 {
	out := make([]float64, len(v))
	out[0] = math.NaN()
	for i := 1; i < len(v); i++ {
		a, b := v[i-1], v[i]
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			out[i] = math.NaN()
		case b < a: // reset
			out[i] = b / (float64(step) / 1000)
		default:
			out[i] = (b - a) / (float64(step) / 1000)
		}
	}
	return out
}

// change is what the change-point detection found on one series.
type change struct {
	base, post float64 // medians before and after the onset
	sigma      float64 // the baseline's robust spread (scaled MAD, floored)
	z          float64 // signed (post - base) / sigma, capped at ±zCap
	onset      int     // grid index; -1: no change
}

// zCap bounds deviations: a counter that was exactly 0 moves infinitely.
const zCap = 1000

// detect finds the onset of a lasting change in v[from:] against the
// baseline v[:from]: the first point beyond 4 σ of the baseline median
// (σ: the scaled MAD, at least 2% of the median) after which at least 70%
// of the points deviate the same way. minSigma floors σ: counts of events
// move in whole steps.
func detect(v []float64, from int, minSigma float64) change {
	c := change{onset: -1}
	base := finite(v[:from])
	if len(base) < 4 || from >= len(v) {
		return c
	}
	c.base = median(base)
	c.sigma = max(1.4826*mad(base, c.base), 0.02*math.Abs(c.base), minSigma)
	thr := 4 * c.sigma
	n := len(v)
	for i := from; i < n; i++ {
		x := v[i]
		if math.IsNaN(x) || math.Abs(x-c.base) <= thr {
			continue
		}
		up := x > c.base
		same, total := 0, 0
		for _, y := range v[i:] {
			if math.IsNaN(y) {
				continue
			}
			total++
			if (y > c.base+thr && up) || (y < c.base-thr && !up) {
				same++
			}
		}
		if total >= 2 && float64(same) >= 0.7*float64(total) {
			// A ramp began where it left the baseline's band, not where
			// it crossed 4 σ.
			for i > from && !math.IsNaN(v[i-1]) && math.Abs(v[i-1]-c.base) > 1.5*c.sigma && (v[i-1] > c.base) == up {
				i--
			}
			c.onset = i
			c.post = median(finite(v[i:]))
			c.z = max(-zCap, min(zCap, (c.post-c.base)/c.sigma))
			return c
		}
	}
	return c
}

func finite(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// median of v (not modified); NaN when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mad is the median absolute deviation of v from m.
func mad(v []float64, m float64) float64 {
	d := make([]float64, len(v))
	for i, x := range v {
		d[i] = math.Abs(x - m)
	}
	return median(d)
}
