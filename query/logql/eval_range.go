package logql

import (
	"context"
	"errors"
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
	// Counting aggregations accumulate per step instead of keeping samples:
	// difference arrays over step indexes (prefix sums give the window values).
	cnt, sum []int64
}

// maxExtractedSeries bounds the series a range aggregation may build before
// aggregation (MaxSeries bounds the result): parsed labels of high
// cardinality would otherwise hold one series per entry in memory.
const maxExtractedSeries = 1_000_000

// sumLike reports whether a range aggregation is a sum of per-entry values,
// so that it can be grouped at extraction.
func sumLike(e *RangeAggExpr) bool {
	switch e.Op {
	case "count_over_time", "bytes_over_time", "bytes_rate", "sum_over_time", "rate":
		return true
	}
	return false
}

// counting reports whether an aggregation only needs per-window counts and
// integer sums (exact in difference arrays).
func counting(e *RangeAggExpr) bool {
	switch e.Op {
	case "count_over_time", "bytes_over_time", "bytes_rate":
		return true
	case "rate":
		return e.Left.Unwrap == nil
	}
	return false
}

func ceilDiv(a, b int64) int64 {
	if a >= 0 {
		return (a + b - 1) / b
	}
	return -((-a) / b)
}

// addCounted adds one entry to the step windows that contain it.
func (ev *evaluator) addCounted(s *rseries, ts int64, v float64, off, rng int64) error {
	return ev.addCountedN(s, ts, 1, int64(v), off, rng)
}

// addCountedN adds n entries at ts (or at times in the same windows) whose
// values sum to sum.
func (ev *evaluator) addCountedN(s *rseries, ts int64, n, sum int64, off, rng int64) error {
	if s.cnt == nil {
		if err := ev.mem.add(cellCost * int64(len(ev.steps)+1)); err != nil {
			return err
		}
		s.cnt = make([]int64, len(ev.steps)+1)
		s.sum = make([]int64, len(ev.steps)+1)
	}
	// steps t with t-off-rng < ts <= t-off, i.e. ts+off <= t < ts+off+rng
	k0, k1 := ev.stepSpan(ts, off, rng)
	if k0 > k1 {
		return nil
	}
	s.cnt[k0] += n
	s.cnt[k1+1] -= n
	s.sum[k0] += sum
	s.sum[k1+1] -= sum
	return nil
}

// addSample keeps one (timestamp, value) pair of s.
func (ev *evaluator) addSample(s *rseries, t int64, v float64) error {
	if err := ev.mem.add(pairCost); err != nil {
		return err
	}
	if n := len(s.ts); n > 0 && t < s.ts[n-1] {
		s.unsorted = true
	}
	s.ts = append(s.ts, t)
	s.vs = append(s.vs, v)
	return nil
}

// newSeries charges and returns a series of a range aggregation.
func (ev *evaluator) newSeries(ls labels.Labels, key string) (*rseries, error) {
	if err := ev.mem.add(seriesCost + labelsBytes(ls) + int64(len(key))); err != nil {
		return nil, err
	}
	return &rseries{labels: ls}, nil
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
	if ts, ok := ev.src.(TimestampSource); ok && timestampsOnly(e) {
		saved := ev.stats
		out, err := ev.extractCounts(ctx, e, ts)
		if !errors.Is(err, errNeedEntries) {
			return out, err
		}
		ev.stats = saved // the entries are counted below
	}
	it, err := ev.selectEntries(ctx, SelectParams{
		Start: ev.selectStart(first - off - rng + 1), End: last - off + 1,
		Matchers: r.Left.Matchers, LineFilters: literalFilters(r.Left.Stages), Direction: Forward,
	}, r.Left.Stages)
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
	setParserHints(e)
	countMode := counting(e)
	stages := r.Left.Stages
	nf := filterPrefix(stages)
	// plain: only line filters and no unwrap, so an entry without structured
	// metadata belongs to its stream's series.
	plain := nf == len(stages) && r.Unwrap == nil
	for it.Next() {
		n++
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		stream, ent := it.At()
		ev.stats.EntriesScanned++
		if err := ev.readBytes(len(ent.Line)); err != nil {
			return nil, err
		}
		if curStream.IsEmpty() || !labels.Equal(stream, curStream) {
			curCopy = stream.Copy()
			curStream = curCopy
			curSeries = nil
		}
		if !lineFiltersMatch(stages[:nf], ent.Line) {
			continue
		}
		if plain && curSeries != nil && ent.Metadata.IsEmpty() {
			// Fast path: no label work, the stream's series is known.
			v := 1.0
			if e.Op == "bytes_over_time" || e.Op == "bytes_rate" {
				v = float64(len(ent.Line))
			}
			if countMode {
				err = ev.addCounted(curSeries, ent.Timestamp, v, off, rng)
			} else {
				err = ev.addSample(curSeries, ent.Timestamp, v)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		lb.reset(curCopy, ent.Metadata)
		line, ok, err := runStages(stages[nf:], ent.Timestamp, ent.Line, lb)
		if err != nil {
			return nil, err
		}
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
		if !lb.changed && skip == "" {
			// Only the stream labels: one series per stream, found once.
			if curSeries == nil {
				key := string(lb.key(grouping, ""))
				if curSeries = byKey[key]; curSeries == nil {
					if curSeries, err = ev.newSeries(lb.grouped(grouping, ""), key); err != nil {
						return nil, err
					}
					byKey[key] = curSeries
					out = append(out, curSeries)
				}
			}
			s = curSeries
		} else {
			kb := lb.key(grouping, skip)
			if s = byKey[string(kb)]; s == nil {
				if len(out) >= maxExtractedSeries {
					return nil, fmt.Errorf("%w: more than %d series before aggregation", ErrTooManySeries, maxExtractedSeries)
				}
				if s, err = ev.newSeries(lb.grouped(grouping, skip), string(kb)); err != nil {
					return nil, err
				}
				byKey[string(kb)] = s
				out = append(out, s)
			}
		}
		if countMode {
			err = ev.addCounted(s, ent.Timestamp, v, off, rng)
		} else {
			err = ev.addSample(s, ent.Timestamp, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return out, nil
}

// setParserHints tells json and logfmt stages which labels the rest of a
// `by`-grouped range aggregation reads, so that they skip the others. Any
// template stage reads every label: then there are no hints.
func setParserHints(e *RangeAggExpr) {
	g := e.Grouping
	if g == nil || g.Without {
		return
	}
	need := map[string]bool{}
	add := func(n string) {
		need[n] = true
		if base, ok := strings.CutSuffix(n, extractedSuffix); ok {
			need[base] = true
		}
	}
	for _, n := range g.Labels {
		add(n)
	}
	var walk func(f LabelFilter)
	walk = func(f LabelFilter) {
		switch f := f.(type) {
		case *BinaryLabelFilter:
			walk(f.Left)
			walk(f.Right)
		case *StringLabelFilter:
			add(f.Matcher.Name)
		case *NumericLabelFilter:
			add(f.Name)
		}
	}
	if u := e.Left.Unwrap; u != nil {
		add(u.Label)
		for _, f := range u.Filters {
			walk(f)
		}
	}
	for _, st := range e.Left.Left.Stages {
		switch s := st.(type) {
		case *LabelFilterStage:
			walk(s.Filter)
		case *DropStage:
			for _, m := range s.Labels {
				add(m.Name)
			}
		case *KeepStage:
			for _, m := range s.Labels {
				add(m.Name)
			}
		case *LineFormatStage, *LabelFormatStage:
			return
		}
	}
	for _, st := range e.Left.Left.Stages {
		if p, ok := st.(*ParserStage); ok && (p.Kind == "json" || p.Kind == "logfmt") && len(p.Exprs) == 0 {
			p.need = need
		}
	}
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
				if err := ev.mem.add(sampleCost); err != nil {
					return nil, err
				}
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
		// A series adds at most one sample per step: charged after each.
		added := 0
		if s.cnt != nil {
			var c, b int64
			for i, t := range ev.steps {
				c += s.cnt[i]
				b += s.sum[i]
				if c == 0 {
					continue
				}
				var v float64
				switch e.Op {
				case "count_over_time":
					v = float64(c)
				case "rate":
					v = float64(c) / rangeSec
				case "bytes_over_time":
					v = float64(b)
				case "bytes_rate":
					v = float64(b) / rangeSec
				}
				out.v[i] = append(out.v[i], Sample{Labels: s.labels, T: t, V: v})
				added++
			}
			if err := ev.mem.add(sampleCost * int64(added)); err != nil {
				return nil, err
			}
			continue
		}
		if s.unsorted {
			if err := ev.mem.add(pairCost*int64(len(s.ts)) + 8*int64(len(s.ts))); err != nil {
				return nil, err // sort's copies
			}
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
			added++
		}
		if err := ev.mem.add(sampleCost * int64(added)); err != nil {
			return nil, err
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
