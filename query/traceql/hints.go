package traceql

import (
	"github.com/weftdb/weft/storage/traceentry"
)

// Hints returns the pushdown hints of the query: comparisons that a trace
// must satisfy to match (see traceentry.Hints). They are derived so that
// they never exclude a matching trace:
//
//   - a spanset filter { a && b && c } gives all-conditions hints of those
//     conjuncts that are simple comparisons of a field with a constant
//     (others are left out, which only weakens the hint);
//   - { a || b } gives any-condition hints when every disjunct is simple,
//     else none;
//   - negations, nil comparisons and arithmetic give none;
//   - {A} && {B} and the structural operators that need both sides keep
//     the stronger side's hints; {A} || {B} combines as "any"; the negated
//     structural operators (whose left side may match nothing) keep the
//     right side's;
//   - a later stage | {B} narrows the spans the pipeline returns, so their
//     conditions and B's must hold on one span; max(x) > v and min(x) < v
//     (and >=, <=) imply a returned span with x > v (x < v).
func (q *Query) Hints() traceentry.Hints {
	h := pipelineHints(q.pipeline).trace
	if len(h.conds) == 0 {
		return traceentry.Hints{}
	}
	return traceentry.Hints{Conditions: h.conds, AllConditions: h.all}
}

// hint is a necessary condition: some span satisfies all of conds (all) or
// at least one of them (!all). No conds: no constraint.
type hint struct {
	conds []traceentry.Condition
	all   bool
}

func (h hint) empty() bool { return len(h.conds) == 0 }

// and combines two necessary conditions that hold for the same spans.
func andSameSpan(a, b hint) hint {
	switch {
	case a.empty():
		return b
	case b.empty():
		return a
	case a.all && b.all:
		return hint{conds: append(append([]traceentry.Condition(nil), a.conds...), b.conds...), all: true}
	}
	return stronger(a, b)
}

// stronger picks the more selective of two conditions that both hold.
func stronger(a, b hint) hint {
	switch {
	case a.empty():
		return b
	case b.empty():
		return a
	case a.all != b.all:
		if a.all {
			return a
		}
		return b
	case a.all && len(b.conds) > len(a.conds):
		return b
	case !a.all && len(b.conds) < len(a.conds):
		return b
	}
	return a
}

// either combines two alternatives: one of them holds.
func either(a, b hint) hint {
	if a.empty() || b.empty() {
		return hint{}
	}
	return hint{conds: append(append([]traceentry.Condition(nil), a.conds...), b.conds...)}
}

// setHints are two necessary conditions of a spanset expression: every
// span it returns satisfies span, and a trace it returns spans of satisfies
// trace.
type setHints struct{ span, trace hint }

func pipelineHints(pl *pipeline) setHints {
	var h setHints
	for i, st := range pl.stages {
		switch st := st.(type) {
		case spansetExpr:
			x := spansetHints(st)
			// The stage returns spans of its input that satisfy x.span.
			h.span = andSameSpan(h.span, x.span)
			h.trace = stronger(stronger(h.trace, x.trace), h.span)
		case *scalarFilter:
			if i > 0 {
				h.trace = stronger(h.trace, andSameSpan(h.span, scalarHint(st)))
			}
		}
	}
	return h
}

func spansetHints(x spansetExpr) setHints {
	switch x := x.(type) {
	case *spansetFilter:
		if x.expr == nil {
			return setHints{}
		}
		h := fieldHints(x.expr)
		return setHints{span: h, trace: h}
	case *pipeline:
		return pipelineHints(x)
	case *spansetOp:
		l, r := spansetHints(x.lhs), spansetHints(x.rhs)
		switch x.op {
		case ssAnd:
			return setHints{span: either(l.span, r.span), trace: stronger(l.trace, r.trace)}
		case ssOr:
			return setHints{span: either(l.span, r.span), trace: either(l.trace, r.trace)}
		case ssNotChild, ssNotParent, ssNotDesc, ssNotAnc, ssNotSibling:
			return r // the left side may match nothing
		case ssUChild, ssUParent, ssUDesc, ssUAnc, ssUSibling:
			return setHints{span: either(l.span, r.span), trace: stronger(l.trace, r.trace)}
		}
		return setHints{span: r.span, trace: stronger(l.trace, r.trace)}
	}
	return setHints{}
}

func fieldHints(e fieldExpr) hint {
	switch e := e.(type) {
	case *logicalExpr:
		var conds []traceentry.Condition
		for _, t := range e.terms {
			c, ok := condition(t)
			if !ok {
				if e.or {
					return hint{} // an unknown alternative could match anything
				}
				continue
			}
			conds = append(conds, c)
		}
		if len(conds) == 1 {
			return hint{conds: conds, all: true}
		}
		return hint{conds: conds, all: !e.or}
	default:
		if c, ok := condition(e); ok {
			return hint{conds: []traceentry.Condition{c}, all: true}
		}
	}
	return hint{}
}

var hintOps = map[binOp]traceentry.Op{
	opEq: traceentry.OpEqual, opNeq: traceentry.OpNotEqual, opLt: traceentry.OpLess,
	opLte: traceentry.OpLessEqual, opGt: traceentry.OpGreater, opGte: traceentry.OpGreaterEqual,
	opRe: traceentry.OpRegex, opNre: traceentry.OpNotRegex,
}

// mirrored turns "constant op field" into "field op' constant".
var mirrored = map[binOp]binOp{opEq: opEq, opNeq: opNeq, opLt: opGt, opLte: opGte, opGt: opLt, opGte: opLte}

// condition turns a comparison of a field with a constant into a hint.
func condition(e fieldExpr) (traceentry.Condition, bool) {
	b, ok := e.(*binaryExpr)
	if !ok || !b.op.isComparison() || b.nilCmp {
		return traceentry.Condition{}, false
	}
	op := b.op
	f, fok := asField(b.lhs)
	lit, lok := b.rhs.(*literal)
	if !fok || !lok {
		if op == opRe || op == opNre {
			return traceentry.Condition{}, false
		}
		f, fok = asField(b.rhs)
		lit, lok = b.lhs.(*literal)
		op = mirrored[op]
	}
	if !fok || !lok {
		return traceentry.Condition{}, false
	}
	operand, ok := hintOperand(lit.v, op)
	if !ok {
		return traceentry.Condition{}, false
	}
	return traceentry.Condition{Field: f, Op: hintOps[op], Operand: operand}, true
}

func asField(e fieldExpr) (traceentry.Field, bool) {
	switch e := e.(type) {
	case *attribute:
		return traceentry.Field{Scope: e.scope, Name: e.name}, true
	case *intrinsic:
		return traceentry.Field{Scope: traceentry.ScopeIntrinsic, Intrinsic: e.i}, true
	}
	return traceentry.Field{}, false
}

func hintOperand(v static, op binOp) (traceentry.Value, bool) {
	switch v.t {
	case vString:
		if op == opRe || op == opNre {
			return traceentry.StringValue("^(?:" + v.s + ")$"), true
		}
		return traceentry.StringValue(v.s), true
	case vInt, vDuration, vStatus, vKind:
		return traceentry.IntValue(v.n), true
	case vFloat:
		return traceentry.FloatValue(v.f), true
	case vBool:
		return traceentry.BoolValue(v.n == 1), true
	}
	return traceentry.Value{}, false
}

// scalarHint: max(x) > v (or >=) means some span has x > v; min(x) < v (or
// <=) means some span has x < v.
func scalarHint(st *scalarFilter) hint {
	f, ok := asField(st.arg)
	if !ok {
		return hint{}
	}
	switch {
	case st.agg == aggMax && (st.op == opGt || st.op == opGte),
		st.agg == aggMin && (st.op == opLt || st.op == opLte):
	default:
		return hint{}
	}
	operand, ok := hintOperand(st.value, st.op)
	if !ok {
		return hint{}
	}
	return hint{conds: []traceentry.Condition{{Field: f, Op: hintOps[st.op], Operand: operand}}, all: true}
}
