package logql

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

func groupLabels(g *Grouping, ls labels.Labels) labels.Labels {
	if g == nil {
		return labels.EmptyLabels()
	}
	b := labels.NewBuilder(ls)
	if g.Without {
		b.Del(g.Labels...)
		b.Del(ErrorLabel, ErrorDetailsLabel)
	} else {
		b.Keep(g.Labels...)
	}
	return b.Labels()
}

type aggGroup struct {
	labels labels.Labels
	vals   []float64
	items  []Sample
}

func (ev *evaluator) vectorAgg(e *VectorAggExpr, in *value) (*value, error) {
	if in.scalar {
		return nil, fmt.Errorf("%w: %s needs a vector", ErrExecution, e.Op)
	}
	out := &value{v: make([][]Sample, len(ev.steps))}
	for i, vec := range in.v {
		t := ev.steps[i]
		if e.Op == "sort" || e.Op == "sort_desc" {
			res := slices.Clone(vec)
			slices.SortStableFunc(res, func(a, b Sample) int {
				c := cmpFloat(a.V, b.V)
				if e.Op == "sort_desc" {
					c = -c
				}
				if c == 0 {
					return labels.Compare(a.Labels, b.Labels)
				}
				return c
			})
			if err := ev.mem.add(sampleCost * int64(len(res))); err != nil {
				return nil, err
			}
			out.v[i] = res
			continue
		}
		groups := map[string]*aggGroup{}
		var order []*aggGroup
		for _, s := range vec {
			gl := groupLabels(e.Grouping, s.Labels)
			k := labelsKey(gl)
			g := groups[k]
			if g == nil {
				if err := ev.mem.add(labelsBytes(gl) + seriesCost + int64(len(k))); err != nil {
					return nil, err
				}
				g = &aggGroup{labels: gl}
				groups[k] = g
				order = append(order, g)
			}
			g.vals = append(g.vals, s.V)
			g.items = append(g.items, s)
		}
		for _, g := range order {
			switch e.Op {
			case "topk", "bottomk":
				items := slices.Clone(g.items)
				slices.SortStableFunc(items, func(a, b Sample) int {
					c := cmpFloat(b.V, a.V)
					if e.Op == "bottomk" {
						c = -c
					}
					if c == 0 {
						return labels.Compare(a.Labels, b.Labels)
					}
					return c
				})
				k := int(e.Param)
				if k > len(items) {
					k = len(items)
				}
				out.v[i] = append(out.v[i], items[:k]...)
				continue
			}
			var v float64
			switch e.Op {
			case "sum":
				v = sumF(g.vals)
			case "avg":
				v = sumF(g.vals) / float64(len(g.vals))
			case "count":
				v = float64(len(g.vals))
			case "min":
				v = g.vals[0]
				for _, x := range g.vals[1:] {
					if x < v || math.IsNaN(v) {
						v = x
					}
				}
			case "max":
				v = g.vals[0]
				for _, x := range g.vals[1:] {
					if x > v || math.IsNaN(v) {
						v = x
					}
				}
			case "stddev":
				v = math.Sqrt(variance(g.vals))
			case "stdvar":
				v = variance(g.vals)
			}
			out.v[i] = append(out.v[i], Sample{Labels: g.labels, T: t, V: v})
		}
		if err := ev.mem.add(sampleCost * int64(len(out.v[i]))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// cmpFloat orders NaN last.
func cmpFloat(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return 1
	case math.IsNaN(b):
		return -1
	}
	return cmp.Compare(a, b)
}

func isComparison(op string) bool { return binPrec[op] == 3 }

// arith applies op; for comparisons it returns (lhs, kept) or (0/1, true) with bool.
func arith(op string, l, r float64, retBool bool) (float64, bool) {
	switch op {
	case "+":
		return l + r, true
	case "-":
		return l - r, true
	case "*":
		return l * r, true
	case "/":
		return l / r, true
	case "%":
		return math.Mod(l, r), true
	case "^":
		return math.Pow(l, r), true
	}
	ok := compare(op, l, r)
	if retBool {
		if ok {
			return 1, true
		}
		return 0, true
	}
	return l, ok
}

func signature(m *VectorMatching, ls labels.Labels) string {
	if m == nil {
		return labelsKey(ls)
	}
	b := labels.NewBuilder(ls)
	if m.On {
		b.Keep(m.Labels...)
	} else {
		b.Del(m.Labels...)
	}
	return labelsKey(b.Labels())
}

func (ev *evaluator) binOp(e *BinOpExpr, l, r *value) (*value, error) {
	n := len(ev.steps)
	switch {
	case l.scalar && r.scalar:
		if err := ev.mem.add(8 * int64(n)); err != nil {
			return nil, err
		}
		out := &value{scalar: true, s: make([]float64, n)}
		for i := range out.s {
			v, _ := arith(e.Op, l.s[i], r.s[i], e.ReturnBool)
			out.s[i] = v
		}
		return out, nil
	case l.scalar || r.scalar:
		out := &value{v: make([][]Sample, n)}
		for i := 0; i < n; i++ {
			var (
				vec  []Sample
				sc   float64
				swap bool
			)
			if r.scalar {
				vec, sc = l.v[i], r.s[i]
			} else {
				vec, sc, swap = r.v[i], l.s[i], true
			}
			for _, s := range vec {
				lv, rv := s.V, sc
				if swap {
					lv, rv = sc, s.V
				}
				v, keep := arith(e.Op, lv, rv, e.ReturnBool)
				if !keep {
					continue
				}
				if isComparison(e.Op) && !e.ReturnBool {
					v = s.V
				}
				out.v[i] = append(out.v[i], Sample{Labels: s.Labels, T: s.T, V: v})
			}
			if err := ev.mem.add(sampleCost * int64(len(out.v[i]))); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out := &value{v: make([][]Sample, n)}
	for i := 0; i < n; i++ {
		res, err := vectorBinop(e, l.v[i], r.v[i])
		if err != nil {
			return nil, err
		}
		cost := sampleCost * int64(len(res))
		if e.Matching != nil { // each result sample has a label set of its own
			for _, s := range res {
				cost += labelsBytes(s.Labels)
			}
		}
		if err := ev.mem.add(cost); err != nil {
			return nil, err
		}
		out.v[i] = res
	}
	return out, nil
}

func vectorBinop(e *BinOpExpr, lhs, rhs []Sample) ([]Sample, error) {
	m := e.Matching
	switch e.Op {
	case "and", "unless":
		sigs := map[string]bool{}
		for _, s := range rhs {
			sigs[signature(m, s.Labels)] = true
		}
		var out []Sample
		for _, s := range lhs {
			if sigs[signature(m, s.Labels)] == (e.Op == "and") {
				out = append(out, s)
			}
		}
		return out, nil
	case "or":
		sigs := map[string]bool{}
		out := slices.Clone(lhs)
		for _, s := range lhs {
			sigs[signature(m, s.Labels)] = true
		}
		for _, s := range rhs {
			if !sigs[signature(m, s.Labels)] {
				out = append(out, s)
			}
		}
		return out, nil
	}
	many, one := lhs, rhs
	swapped := m != nil && m.GroupRight
	if swapped {
		many, one = rhs, lhs
	}
	oneBySig := map[string]Sample{}
	for _, s := range one {
		sig := signature(m, s.Labels)
		if prev, dup := oneBySig[sig]; dup {
			side := "right"
			if swapped {
				side = "left"
			}
			return nil, fmt.Errorf("%w: found duplicate series for the match group on the %s hand-side of the operation: [%s, %s];many-to-many matching not allowed: matching labels must be unique on one side", ErrExecution, side, prev.Labels, s.Labels)
		}
		oneBySig[sig] = s
	}
	grouped := m != nil && (m.GroupLeft || m.GroupRight)
	matched := map[string]bool{}
	var out []Sample
	for _, s := range many {
		sig := signature(m, s.Labels)
		o, ok := oneBySig[sig]
		if !ok {
			continue
		}
		if !grouped {
			if matched[sig] {
				return nil, fmt.Errorf("%w: multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)", ErrExecution)
			}
			matched[sig] = true
		}
		lv, rv := s.V, o.V
		if swapped {
			lv, rv = o.V, s.V
		}
		v, keep := arith(e.Op, lv, rv, e.ReturnBool)
		if !keep {
			continue
		}
		if isComparison(e.Op) && !e.ReturnBool {
			v = lv
		}
		out = append(out, Sample{Labels: resultLabels(m, s.Labels, o.Labels), T: s.T, V: v})
	}
	if err := checkDuplicates(out); err != nil {
		return nil, err
	}
	return out, nil
}

func resultLabels(m *VectorMatching, many, one labels.Labels) labels.Labels {
	if m == nil {
		return many
	}
	b := labels.NewBuilder(many)
	if !m.GroupLeft && !m.GroupRight {
		if m.On {
			b.Keep(m.Labels...)
		} else {
			b.Del(m.Labels...)
		}
		return b.Labels()
	}
	for _, name := range m.Include {
		if v := one.Get(name); v != "" {
			b.Set(name, v)
		} else {
			b.Del(name)
		}
	}
	return b.Labels()
}
