package logql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// ctxCheckEvery is how many entries are read between context checks.
const ctxCheckEvery = 1024

// evaluator evaluates one query. Not safe for concurrent use.
type evaluator struct {
	src    Source
	opts   *EngineOptions
	params QueryParams
	stats  Stats
	steps  []int64
	step   int64 // spacing of steps (1 for instant queries)
	// minTime is the oldest timestamp a query may select (MaxLookback).
	minTime int64
	// mem is the query's memory budget (MaxQueryMemory).
	mem memBudget
}

// selectStart applies MaxLookback to the start of a selection.
func (ev *evaluator) selectStart(start int64) int64 {
	if ev.minTime != 0 && start < ev.minTime {
		return ev.minTime
	}
	return start
}

// ErrInstantLogQuery: a log (not metric) query was sent as an instant query.
var ErrInstantLogQuery = errors.New("log queries are not supported as an instant query type, please change your query to a range query type")

func (ev *evaluator) eval(ctx context.Context, expr Expr) (*Result, error) {
	switch e := expr.(type) {
	case *LogSelectorExpr:
		if ev.params.Instant {
			return nil, ErrInstantLogQuery
		}
		return ev.evalLogs(ctx, e)
	case SampleExpr:
		if err := ev.makeSteps(); err != nil {
			return nil, err
		}
		v, err := ev.evalSample(ctx, e)
		if err != nil {
			return nil, err
		}
		res, err := ev.toResult(e, v)
		if err != nil {
			return nil, err
		}
		if n := max(len(res.Matrix), len(res.Vector)); ev.opts.MaxSeries > 0 && n > ev.opts.MaxSeries {
			return nil, tooManySeries(ev.opts.MaxSeries)
		}
		return res, nil
	}
	return nil, fmt.Errorf("BUG: unknown expression %T", expr)
}

func (ev *evaluator) makeSteps() error {
	p := ev.params
	if p.Instant {
		ev.steps = []int64{p.End}
		ev.step = 1
		return nil
	}
	step := p.Step
	if step <= 0 {
		secs := math.Max(math.Floor(float64(p.End-p.Start)/1e9/250), 1)
		step = time.Duration(secs) * time.Second
	}
	n := (p.End-p.Start)/int64(step) + 1
	if n > 11000 {
		return fmt.Errorf("%w: exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)", ErrInvalidParams)
	}
	ev.step = int64(step)
	ev.steps = make([]int64, n)
	for k := range ev.steps {
		ev.steps[k] = p.Start + int64(k)*int64(step)
	}
	return nil
}

// value is the result of a metric sub-expression: one vector per step, or a
// scalar per step.
type value struct {
	scalar bool
	s      []float64  // per step when scalar
	v      [][]Sample // per step otherwise
}

func (ev *evaluator) toResult(e SampleExpr, v *value) (*Result, error) {
	if v.scalar {
		if ev.params.Instant {
			return &Result{Type: ValueTypeScalar, Scalar: &Point{T: ev.steps[0], V: v.s[0]}}, nil
		}
		if err := ev.mem.add(pairCost * int64(len(ev.steps))); err != nil {
			return nil, err
		}
		pts := make([]Point, len(ev.steps))
		for i, t := range ev.steps {
			pts[i] = Point{T: t, V: v.s[i]}
		}
		return &Result{Type: ValueTypeMatrix, Matrix: []Series{{Labels: labels.EmptyLabels(), Points: pts}}}, nil
	}
	if ev.params.Instant {
		vec := v.v[0]
		if !preservesOrder(e) {
			slices.SortFunc(vec, func(a, b Sample) int { return labels.Compare(a.Labels, b.Labels) })
		}
		if vec == nil {
			vec = []Sample{}
		}
		return &Result{Type: ValueTypeVector, Vector: vec}, nil
	}
	idx := map[string]int{}
	var out []Series
	for _, vec := range v.v {
		if err := ev.mem.add(pairCost * int64(len(vec))); err != nil {
			return nil, err
		}
		for _, s := range vec {
			k := s.Labels.String()
			i, ok := idx[k]
			if !ok {
				if err := ev.mem.add(seriesCost + int64(len(k))); err != nil {
					return nil, err
				}
				i = len(out)
				idx[k] = i
				out = append(out, Series{Labels: s.Labels})
			}
			out[i].Points = append(out[i].Points, Point{T: s.T, V: s.V})
		}
	}
	slices.SortFunc(out, func(a, b Series) int { return labels.Compare(a.Labels, b.Labels) })
	if out == nil {
		out = []Series{}
	}
	return &Result{Type: ValueTypeMatrix, Matrix: out}, nil
}

func preservesOrder(e SampleExpr) bool {
	if a, ok := e.(*VectorAggExpr); ok {
		return a.Op == "sort" || a.Op == "sort_desc"
	}
	return false
}

func (ev *evaluator) evalSample(ctx context.Context, e SampleExpr) (*value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch e := e.(type) {
	case *LiteralExpr:
		if err := ev.mem.add(8 * int64(len(ev.steps))); err != nil {
			return nil, err
		}
		s := make([]float64, len(ev.steps))
		for i := range s {
			s[i] = e.Val
		}
		return &value{scalar: true, s: s}, nil
	case *VectorExpr:
		if err := ev.mem.add(sampleCost * int64(len(ev.steps))); err != nil {
			return nil, err
		}
		v := make([][]Sample, len(ev.steps))
		for i, t := range ev.steps {
			v[i] = []Sample{{Labels: labels.EmptyLabels(), T: t, V: e.Val}}
		}
		return &value{v: v}, nil
	case *RangeAggExpr:
		return ev.evalRangeAgg(ctx, e)
	case *VectorAggExpr:
		if ra, ok := e.Expr.(*RangeAggExpr); ok && e.Op == "sum" && ra.Grouping == nil && sumLike(ra) {
			// sum by (g) (count_over_time(...)) equals count_over_time grouped
			// by g at extraction: far fewer series (Loki does the same).
			pushed := *ra
			pushed.Grouping = e.Grouping
			if pushed.Grouping == nil {
				pushed.Grouping = &Grouping{Labels: []string{}}
			}
			in, err := ev.evalRangeAgg(ctx, &pushed)
			if err != nil {
				return nil, err
			}
			return ev.vectorAgg(e, in)
		}
		in, err := ev.evalSample(ctx, e.Expr)
		if err != nil {
			return nil, err
		}
		return ev.vectorAgg(e, in)
	case *BinOpExpr:
		l, err := ev.evalSample(ctx, e.LHS)
		if err != nil {
			return nil, err
		}
		r, err := ev.evalSample(ctx, e.RHS)
		if err != nil {
			return nil, err
		}
		return ev.binOp(e, l, r)
	case *LabelReplaceExpr:
		in, err := ev.evalSample(ctx, e.Left)
		if err != nil {
			return nil, err
		}
		if in.scalar {
			return nil, fmt.Errorf("%w: label_replace needs a vector", ErrExecution)
		}
		// Series keep their labels from step to step: replace each label
		// set once.
		done := map[string]labels.Labels{}
		for _, vec := range in.v {
			for i := range vec {
				k := labelsKey(vec[i].Labels)
				out, ok := done[k]
				if !ok {
					out = labelReplace(e, vec[i].Labels)
					if err := ev.mem.add(labelsBytes(out) + int64(len(k))); err != nil {
						return nil, err
					}
					done[k] = out
				}
				vec[i].Labels = out
			}
			if err := checkDuplicates(vec); err != nil {
				return nil, err
			}
		}
		return in, nil
	}
	return nil, fmt.Errorf("BUG: unknown expression %T", e)
}

// checkDuplicates fails when two samples of one vector have the same labels.
func checkDuplicates(vec []Sample) error {
	if len(vec) < 2 {
		return nil
	}
	seen := make(map[string]struct{}, len(vec))
	for _, s := range vec {
		k := labelsKey(s.Labels)
		if _, dup := seen[k]; dup {
			return fmt.Errorf("%w: vector cannot contain metrics with the same labelset", ErrExecution)
		}
		seen[k] = struct{}{}
	}
	return nil
}

func labelReplace(e *LabelReplaceExpr, ls labels.Labels) labels.Labels {
	src := ls.Get(e.Src)
	m := e.re.FindStringSubmatchIndex(src)
	if m == nil {
		return ls
	}
	res := e.re.ExpandString(nil, e.Repl, src, m)
	b := labels.NewBuilder(ls)
	if len(res) == 0 {
		b.Del(e.Dst)
	} else {
		b.Set(e.Dst, string(res))
	}
	return b.Labels()
}

// pipelineErr builds the error Loki returns when a metric query's series
// carry __error__.
func pipelineErr(ls labels.Labels) error {
	return fmt.Errorf("%w: '%s' for series: '%s'.\nUse a label filter to intentionally skip this error. (e.g | __error__!=\"%s\").\nTo skip all potential errors you can match empty errors.(e.g __error__=\"\")\nThe label filter can also be specified after unwrap. (e.g | unwrap latency | __error__=\"\" )",
		ErrPipeline, ls.Get(ErrorLabel), ls.String(), ls.Get(ErrorLabel))
}

func labelsKey(ls labels.Labels) string {
	var b strings.Builder
	ls.Range(func(l labels.Label) {
		b.WriteString(l.Name)
		b.WriteByte(0xff)
		b.WriteString(l.Value)
		b.WriteByte(0xfe)
	})
	return b.String()
}
