package logql

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// rseries holds the samples of one output series of a range aggregation.
type rseries struct {
	labels   labels.Labels
	ts       []int64
	vs       []float64
	unsorted bool
}

func (s *rseries) add(t int64, v float64) {
	if n := len(s.ts); n > 0 && t < s.ts[n-1] {
		s.unsorted = true
	}
	s.ts = append(s.ts, t)
	s.vs = append(s.vs, v)
}

func (s *rseries) sort() {
	if !s.unsorted {
		return
	}
	idx := make([]int, len(s.ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case s.ts[a] < s.ts[b]:
			return -1
		case s.ts[a] > s.ts[b]:
			return 1
		}
		return 0
	})
	ts := make([]int64, len(idx))
	vs := make([]float64, len(idx))
	for i, j := range idx {
		ts[i], vs[i] = s.ts[j], s.vs[j]
	}
	s.ts, s.vs, s.unsorted = ts, vs, false
}

// extractSamples reads the range's entries and turns them into series.
func (ev *evaluator) extractSamples(ctx context.Context, e *RangeAggExpr) ([]*rseries, error) {
	r := e.Left
	rng, off := int64(r.Range), int64(r.Offset)
	first, last := ev.steps[0], ev.steps[len(ev.steps)-1]
	it, err := ev.src.Select(ctx, SelectParams{
		Start: first - off - rng + 1, End: last - off + 1,
		Matchers: r.Left.Matchers, LineFilters: literalFilters(r.Left.Stages), Direction: Forward,
	})
	if err != nil {
		return nil, fmt.Errorf("select logs: %w", err)
	}
	defer it.Close()
	var (
		byKey     = map[string]*rseries{}
		out       []*rseries
		lb        = &lbuilder{}
		curStream labels.Labels
		curCopy   labels.Labels
		curSeries *rseries
		skip      string
		n         int
	)
	if r.Unwrap != nil {
		skip = r.Unwrap.Label
	}
	grouping := e.Grouping
	for it.Next() {
		n++
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		stream, ent := it.At()
		ev.stats.EntriesScanned++
		ev.stats.BytesScanned += int64(len(ent.Line))
		if curStream.IsEmpty() || !labels.Equal(stream, curStream) {
			curCopy = stream.Copy()
			curStream = curCopy
			curSeries = nil
		}
		lb.reset(curCopy, ent.Metadata)
		line, ok := runStages(r.Left.Stages, ent.Timestamp, ent.Line, lb)
		if !ok {
			continue
		}
		var v float64
		switch e.Op {
		case "bytes_over_time", "bytes_rate":
			v = float64(len(line))
		case "count_over_time", "absent_over_time":
			v = 1
		default:
			if r.Unwrap == nil { // rate
				v = 1
				break
			}
			s, _ := lb.get(r.Unwrap.Label)
			var cerr error
			v, cerr = convertUnwrap(r.Unwrap.Conv, s)
			if cerr != nil {
				lb.setErr(errSampleExtr, cerr.Error())
			}
			kept := true
			for _, f := range r.Unwrap.Filters {
				if !evalLabelFilter(f, lb) {
					kept = false
					break
				}
			}
			if !kept {
				continue
			}
		}
		var s *rseries
		if !lb.changed && grouping == nil && skip == "" {
			if curSeries == nil {
				key := string(lb.key(nil, ""))
				if curSeries = byKey[key]; curSeries == nil {
					curSeries = &rseries{labels: curCopy}
					byKey[key] = curSeries
					out = append(out, curSeries)
				}
			}
			s = curSeries
		} else {
			kb := lb.key(grouping, skip)
			if s = byKey[string(kb)]; s == nil {
				s = &rseries{labels: lb.grouped(grouping, skip)}
				byKey[string(kb)] = s
				out = append(out, s)
			}
		}
		s.add(ent.Timestamp, v)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	if ev.opts.MaxSeries > 0 && len(out) > ev.opts.MaxSeries && e.Op != "absent_over_time" {
		return nil, fmt.Errorf("%w (%d)", ErrTooManySeries, ev.opts.MaxSeries)
	}
	return out, nil
}

func convertUnwrap(conv, s string) (float64, error) {
	s = strings.TrimSpace(s)
	switch conv {
	case "duration", "duration_seconds":
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, err
		}
		return d.Seconds(), nil
	case "bytes":
		b, err := parseBytes(s)
		return float64(b), err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("strconv.ParseFloat: parsing %q: invalid syntax", s)
	}
	return v, nil
}

func (ev *evaluator) evalRangeAgg(ctx context.Context, e *RangeAggExpr) (*value, error) {
	series, err := ev.extractSamples(ctx, e)
	if err != nil {
		return nil, err
	}
	rng, off := int64(e.Left.Range), int64(e.Left.Offset)
	out := &value{v: make([][]Sample, len(ev.steps))}
	if e.Op == "absent_over_time" {
		for i, t := range ev.steps {
			present := false
			for _, s := range series {
				lo, _ := slices.BinarySearch(s.ts, t-off-rng+1)
				if lo < len(s.ts) && s.ts[lo] <= t-off {
					present = true
					break
				}
			}
			if !present {
				out.v[i] = []Sample{{Labels: absentLabels(e.Left.Left.Matchers), T: t, V: 1}}
			}
		}
		return out, nil
	}
	slices.SortFunc(series, func(a, b *rseries) int { return labels.Compare(a.labels, b.labels) })
	rangeSec := float64(rng) / 1e9
	for _, s := range series {
		if s.labels.Has(ErrorLabel) {
			return nil, pipelineErr(s.labels)
		}
		s.sort()
		lo, hi := 0, 0
		for i, t := range ev.steps {
			start, end := t-off-rng, t-off // (start, end]
			for lo < len(s.ts) && s.ts[lo] <= start {
				lo++
			}
			if hi < lo {
				hi = lo
			}
			for hi < len(s.ts) && s.ts[hi] <= end {
				hi++
			}
			if hi == lo {
				continue
			}
			v, ok := aggregateRange(e, s.ts[lo:hi], s.vs[lo:hi], start, end, rangeSec)
			if !ok {
				continue
			}
			out.v[i] = append(out.v[i], Sample{Labels: s.labels, T: t, V: v})
		}
	}
	return out, nil
}

func absentLabels(ms []*labels.Matcher) labels.Labels {
	b := labels.NewScratchBuilder(len(ms))
	seen := map[string]bool{}
	for _, m := range ms {
		if m.Type == labels.MatchEqual && !seen[m.Name] {
			seen[m.Name] = true
			b.Add(m.Name, m.Value)
		}
	}
	b.Sort()
	return b.Labels()
}

func aggregateRange(e *RangeAggExpr, ts []int64, vs []float64, start, end int64, rangeSec float64) (float64, bool) {
	switch e.Op {
	case "count_over_time":
		return float64(len(vs)), true
	case "rate":
		if e.Left.Unwrap == nil {
			return float64(len(vs)) / rangeSec, true
		}
		return sumF(vs) / rangeSec, true
	case "bytes_over_time", "sum_over_time":
		return sumF(vs), true
	case "bytes_rate":
		return sumF(vs) / rangeSec, true
	case "avg_over_time":
		return sumF(vs) / float64(len(vs)), true
	case "min_over_time":
		m := vs[0]
		for _, v := range vs[1:] {
			if v < m || math.IsNaN(m) {
				m = v
			}
		}
		return m, true
	case "max_over_time":
		m := vs[0]
		for _, v := range vs[1:] {
			if v > m || math.IsNaN(m) {
				m = v
			}
		}
		return m, true
	case "first_over_time":
		return vs[0], true
	case "last_over_time":
		return vs[len(vs)-1], true
	case "stdvar_over_time":
		return variance(vs), true
	case "stddev_over_time":
		return math.Sqrt(variance(vs)), true
	case "quantile_over_time":
		return quantile(e.Param, vs), true
	case "rate_counter":
		return extrapolatedRate(ts, vs, start, end, rangeSec)
	}
	return 0, false
}

func sumF(vs []float64) float64 {
	var s float64
	for _, v := range vs {
		s += v
	}
	return s
}

func variance(vs []float64) float64 {
	var mean, m2 float64
	for i, v := range vs {
		d := v - mean
		mean += d / float64(i+1)
		m2 += d * (v - mean)
	}
	return m2 / float64(len(vs))
}

// quantile is Prometheus' quantile with linear interpolation.
func quantile(q float64, in []float64) float64 {
	if len(in) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	vs := slices.Clone(in)
	slices.Sort(vs)
	n := float64(len(vs))
	rank := q * (n - 1)
	lower := math.Max(0, math.Floor(rank))
	upper := math.Min(n-1, lower+1)
	w := rank - math.Floor(rank)
	return vs[int(lower)]*(1-w) + vs[int(upper)]*w
}

// extrapolatedRate is the counter rate of Prometheus' rate(), over the
// window (start, end].
func extrapolatedRate(ts []int64, vs []float64, start, end int64, rangeSec float64) (float64, bool) {
	if len(vs) < 2 {
		return 0, false
	}
	result := vs[len(vs)-1] - vs[0]
	prev := vs[0]
	for _, v := range vs[1:] {
		if v < prev {
			result += prev
		}
		prev = v
	}
	durToStart := float64(ts[0]-start) / 1e9
	durToEnd := float64(end-ts[len(ts)-1]) / 1e9
	sampled := float64(ts[len(ts)-1]-ts[0]) / 1e9
	if sampled == 0 {
		return 0, false
	}
	avg := sampled / float64(len(vs)-1)
	threshold := avg * 1.1
	if durToStart >= threshold {
		durToStart = avg / 2
	}
	if result > 0 && vs[0] >= 0 {
		if dz := sampled * (vs[0] / result); dz < durToStart {
			durToStart = dz
		}
	}
	if durToEnd >= threshold {
		durToEnd = avg / 2
	}
	factor := (sampled + durToStart + durToEnd) / sampled / rangeSec
	return result * factor, true
}
