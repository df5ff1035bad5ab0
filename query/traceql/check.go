package traceql

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/weftdb/weft/storage/traceentry"
)

// outField is a field whose value search results show on each span.
type outField struct {
	scope traceentry.Scope
	name  string
	intr  traceentry.Intrinsic
}

// key is the attribute key Tempo uses in results: the attribute name
// without its scope, or the intrinsic's name.
func (f outField) key() string {
	if f.scope == traceentry.ScopeIntrinsic {
		return f.intr.String()
	}
	return f.name
}

type checkState struct {
	q    *Query
	seen map[outField]bool
}

// check types the query, compiles its regular expressions, folds constant
// arithmetic and records what evaluation and results need. Type rules
// (docs/traceql.md): a comparison whose operand types are both known when
// parsing must be of compatible types; attributes are typed at evaluation.
func check(q *Query) error {
	st := &checkState{q: q, seen: map[outField]bool{}}
	if err := st.pipeline(q.pipeline); err != nil {
		return err
	}
	for _, h := range q.hints {
		if h.name == "most_recent" {
			if h.value.t != vBool {
				return h.p.errorf("with(most_recent=...) takes true or false")
			}
			q.mostRecent = h.value.isTrue()
		}
	}
	if f, ok := q.pipeline.stages[0].(*spansetFilter); ok {
		if lit, ok := f.expr.(*literal); ok && lit.v.t == vBool && !lit.v.isTrue() {
			q.noop = true
		}
	}
	return nil
}

func (st *checkState) pipeline(pl *pipeline) error {
	for _, s := range pl.stages {
		if err := st.stage(s); err != nil {
			return err
		}
	}
	return nil
}

func (st *checkState) stage(s stage) error {
	switch s := s.(type) {
	case *pipeline:
		return st.pipeline(s)
	case *spansetFilter:
		if s.expr == nil {
			return nil
		}
		e, err := st.boolExpr(s.expr, "a spanset filter")
		s.expr = e
		return err
	case *spansetOp:
		if s.op != ssAnd && s.op != ssOr {
			st.q.needTree = true
		}
		if err := st.stage(s.lhs); err != nil {
			return err
		}
		return st.stage(s.rhs)
	case *scalarFilter:
		defer func() {
			var b strings.Builder
			s.writeAgg(&b, false)
			s.key = b.String()
		}()
		if s.arg == nil {
			return nil
		}
		e, err := checkExpr(s.arg, st)
		if err != nil {
			return err
		}
		s.arg = e
		if t := e.typ(); !t.numeric() && t != vAttr && t != vNum {
			return e.exprPos().errorf(aggText[s.agg] + "() needs a number, a duration or an attribute, got " + t.String())
		}
		if !readsSpan(e) {
			return e.exprPos().errorf(aggText[s.agg] + "() must read an attribute or an intrinsic of the span")
		}
		return nil
	case *groupBy:
		for i, e := range s.exprs {
			e, err := checkExpr(e, st)
			if err != nil {
				return err
			}
			if !readsSpan(e) {
				return e.exprPos().errorf("by() must read an attribute or an intrinsic of the span")
			}
			s.exprs[i] = e
			s.keys = append(s.keys, "by("+exprString(e)+")")
		}
		return nil
	case *selectStage:
		for i, e := range s.fields {
			e, err := checkExpr(e, st)
			if err != nil {
				return err
			}
			switch e.(type) {
			case *attribute, *intrinsic:
			default:
				return e.exprPos().errorf("select() takes attributes and intrinsics only")
			}
			s.fields[i] = e
		}
		return nil
	}
	return nil
}

// boolExpr checks an expression in a boolean position.
func (st *checkState) boolExpr(e fieldExpr, what string) (fieldExpr, error) {
	e, err := checkExpr(e, st)
	if err != nil {
		return nil, err
	}
	if t := e.typ(); t != vBool && t != vAttr {
		return nil, e.exprPos().errorf(what + " must be a boolean expression, got " + t.String())
	}
	return quantifyLeaf(e), nil
}

// quantifyLeaf wraps a bare event or link attribute used as a boolean so
// that it holds when it holds for any event or link.
func quantifyLeaf(e fieldExpr) fieldExpr {
	if a, ok := e.(*attribute); ok {
		ev, ln := a.scope == traceentry.ScopeEvent, a.scope == traceentry.ScopeLink
		if ev || ln {
			return &anyExpr{x: a, ev: ev, link: ln}
		}
	}
	return e
}

func readsSpan(e fieldExpr) bool {
	switch e := e.(type) {
	case *attribute, *intrinsic:
		return true
	case *binaryExpr:
		return readsSpan(e.lhs) || readsSpan(e.rhs)
	case *unaryExpr:
		return readsSpan(e.x)
	case *logicalExpr:
		for _, t := range e.terms {
			if readsSpan(t) {
				return true
			}
		}
	case *anyExpr:
		return true
	}
	return false
}

// eventLinkRefs reports whether e reads event or link fields outside nested
// comparisons (which quantify by themselves).
func eventLinkRefs(e fieldExpr) (ev, ln bool) {
	switch e := e.(type) {
	case *attribute:
		return e.scope == traceentry.ScopeEvent, e.scope == traceentry.ScopeLink
	case *intrinsic:
		switch e.i {
		case traceentry.IntrinsicEventName, traceentry.IntrinsicEventTimeSinceStart:
			return true, false
		case traceentry.IntrinsicLinkSpanID, traceentry.IntrinsicLinkTraceID:
			return false, true
		}
	case *binaryExpr:
		if e.op.isComparison() {
			return false, false
		}
		a, b := eventLinkRefs(e.lhs)
		c, d := eventLinkRefs(e.rhs)
		return a || c, b || d
	case *unaryExpr:
		return eventLinkRefs(e.x)
	}
	return false, false
}

func (st *checkState) record(f outField) {
	if st.seen == nil || st.seen[f] {
		return
	}
	st.seen[f] = true
	switch f.scope {
	case traceentry.ScopeEvent, traceentry.ScopeLink:
		return
	case traceentry.ScopeIntrinsic:
		switch f.intr {
		case traceentry.IntrinsicName, traceentry.IntrinsicDuration, traceentry.IntrinsicSpanID,
			traceentry.IntrinsicEventName, traceentry.IntrinsicEventTimeSinceStart,
			traceentry.IntrinsicLinkSpanID, traceentry.IntrinsicLinkTraceID:
			return
		}
		if f.intr.TraceLevel() {
			return
		}
	}
	st.q.outFields = append(st.q.outFields, f)
}

func intrinsicType(i traceentry.Intrinsic) vtype {
	switch i {
	case traceentry.IntrinsicStatus:
		return vStatus
	case traceentry.IntrinsicKind:
		return vKind
	case traceentry.IntrinsicDuration, traceentry.IntrinsicTraceDuration, traceentry.IntrinsicEventTimeSinceStart:
		return vDuration
	case traceentry.IntrinsicSpanID, traceentry.IntrinsicParentID, traceentry.IntrinsicTraceID,
		traceentry.IntrinsicLinkSpanID, traceentry.IntrinsicLinkTraceID:
		return vID
	case traceentry.IntrinsicChildCount:
		return vInt
	}
	return vString
}

func (e *literal) typ() vtype   { return e.v.t }
func (e *attribute) typ() vtype { return vAttr }
func (e *intrinsic) typ() vtype { return intrinsicType(e.i) }
func (e *logicalExpr) typ() vtype {
	return vBool
}
func (e *anyExpr) typ() vtype { return e.x.typ() }

func (e *unaryExpr) typ() vtype {
	if !e.neg {
		return vBool
	}
	if t := e.x.typ(); t.numeric() {
		return t
	}
	return vNum
}

func (e *binaryExpr) typ() vtype {
	if e.op.isComparison() {
		return vBool
	}
	l, r := e.lhs.typ(), e.rhs.typ()
	if !l.numeric() || !r.numeric() {
		return vNum
	}
	switch {
	case l == vFloat || r == vFloat || e.op == opDiv || e.op == opPow:
		return vFloat
	case l == vDuration || r == vDuration:
		return vDuration
	}
	return vInt
}

func isNumberLike(t vtype) bool { return t.numeric() || t == vNum || t == vAttr }

// checkExpr checks one field expression and returns it, rewritten where
// constants fold.
func checkExpr(e fieldExpr, st *checkState) (fieldExpr, error) {
	switch e := e.(type) {
	case *attribute:
		st.record(outField{scope: e.scope, name: e.name})
		return e, nil
	case *intrinsic:
		st.record(outField{scope: traceentry.ScopeIntrinsic, intr: e.i})
		switch e.i {
		case traceentry.IntrinsicTraceRootName, traceentry.IntrinsicTraceRootService:
			if st.q != nil {
				st.q.needRoot = true
			}
		case traceentry.IntrinsicChildCount:
			if st.q != nil {
				st.q.needTree = true
			}
		}
		return e, nil
	case *literal:
		return e, nil
	case *logicalExpr:
		for i, t := range e.terms {
			what := "an operand of &&"
			if e.or {
				what = "an operand of ||"
			}
			t, err := st.boolExpr(t, what)
			if err != nil {
				return nil, err
			}
			e.terms[i] = t
		}
		return e, nil
	case *unaryExpr:
		x, err := checkExpr(e.x, st)
		if err != nil {
			return nil, err
		}
		t := x.typ()
		if e.neg {
			if !isNumberLike(t) {
				return nil, e.p.errorf("- needs a number or a duration, got " + t.String())
			}
		} else {
			if t != vBool && t != vAttr {
				return nil, e.p.errorf("! needs a boolean, got " + t.String())
			}
			x = quantifyLeaf(x)
		}
		e.x = x
		return e, nil
	case *binaryExpr:
		return checkBinary(e, st)
	}
	return e, nil
}

func checkBinary(e *binaryExpr, st *checkState) (fieldExpr, error) {
	l, err := checkExpr(e.lhs, st)
	if err != nil {
		return nil, err
	}
	r, err := checkExpr(e.rhs, st)
	if err != nil {
		return nil, err
	}
	e.lhs, e.rhs = l, r
	lt, rt := l.typ(), r.typ()
	opText := binOpText[e.op]
	if !e.op.isComparison() {
		if !isNumberLike(lt) || !isNumberLike(rt) {
			return nil, e.p.errorf("operator " + opText + " needs numbers or durations, got " + lt.String() + " and " + rt.String())
		}
		return fold(e), nil
	}
	e.quantEv, e.quantLn = eventLinkRefs(l)
	if ev, ln := eventLinkRefs(r); ev || ln {
		e.quantEv, e.quantLn = e.quantEv || ev, e.quantLn || ln
	}
	if isNilLiteral(l) || isNilLiteral(r) {
		if e.op != opEq && e.op != opNeq {
			return nil, e.p.errorf("nil can only be compared with = or !=")
		}
		other := rt
		if !isNilLiteral(l) {
			other = lt
		}
		switch other {
		case vStatus, vKind, vBool, vInt, vFloat, vDuration, vString, vNum:
			if _, isIntr := pick(l, r).(*intrinsic); !isIntr || other == vStatus || other == vKind {
				return nil, e.p.errorf("cannot compare " + other.String() + " with nil")
			}
		}
		e.nilCmp = true
		return e, nil
	}
	if e.op == opRe || e.op == opNre {
		lit, ok := r.(*literal)
		if !ok || lit.v.t != vString {
			return nil, r.exprPos().errorf("the right side of " + opText + " must be a string (a regular expression)")
		}
		if lt != vString && lt != vAttr {
			return nil, e.p.errorf("operator " + opText + " needs a string on the left, got " + lt.String())
		}
		if _, err := regexp.Compile(lit.v.s); err != nil {
			return nil, lit.p.errorf("invalid regular expression " + strconv.Quote(lit.v.s) + ": " + strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		re, err := regexp.Compile("^(?:" + lit.v.s + ")$") // fully anchored, as in Tempo
		if err != nil {
			return nil, lit.p.errorf("invalid regular expression " + strconv.Quote(lit.v.s))
		}
		e.re = re
		return e, nil
	}
	if !comparable(e.op, lt, rt) {
		return nil, e.p.errorf("cannot compare " + lt.String() + " with " + rt.String() + " using " + opText)
	}
	// IDs compare ignoring case and leading zeros: normalize literals once.
	if lt == vID || rt == vID {
		for _, side := range []fieldExpr{l, r} {
			if lit, ok := side.(*literal); ok && lit.v.t == vString {
				lit.v.s = normalizeHexID(lit.v.s)
			}
		}
	}
	return e, nil
}

// pick returns the operand that is not the nil literal.
func pick(l, r fieldExpr) fieldExpr {
	if isNilLiteral(l) {
		return r
	}
	return l
}

func isNilLiteral(e fieldExpr) bool {
	lit, ok := e.(*literal)
	return ok && lit.v.t == vNil
}

func isOrdering(op binOp) bool { return op == opLt || op == opLte || op == opGt || op == opGte }

// comparable reports whether a comparison of the two static types can be
// true at all (else the query is rejected, as Tempo's validation does).
func comparable(op binOp, a, b vtype) bool {
	if a == vAttr || b == vAttr {
		other := b
		if b == vAttr {
			other = a
		}
		switch other {
		case vBool, vStatus, vKind, vID:
			return !isOrdering(op)
		}
		return true
	}
	num := func(t vtype) bool { return t.numeric() || t == vNum }
	switch {
	case num(a) && num(b), a == vString && b == vString:
		return true
	case a == vID && (b == vString || b == vID), b == vID && a == vString:
		return op == opEq || op == opNeq
	case a == b && (a == vBool || a == vStatus || a == vKind):
		return op == opEq || op == opNeq
	}
	return false
}

// fold replaces arithmetic on two constants by its result, unless the
// result could not be written back as a literal.
func fold(e *binaryExpr) fieldExpr {
	l, ok1 := e.lhs.(*literal)
	r, ok2 := e.rhs.(*literal)
	if !ok1 || !ok2 {
		return e
	}
	v := arith(e.op, l.v, r.v)
	switch {
	case v.t == vNil:
		return e
	case v.t == vFloat && (v.f != v.f || v.f > maxFloat || v.f < -maxFloat):
		return e
	case v.t == vDuration && v.n == minInt64:
		return e
	}
	return &literal{p: l.p, v: v}
}

const (
	maxFloat = 1.7976931348623157e308
	minInt64 = -1 << 63
)
