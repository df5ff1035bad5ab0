package traceql

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weftdb/weft/storage/traceentry"
)

// Query is a parsed and checked TraceQL query. It is immutable and safe for
// concurrent use; evaluation state lives in an Evaluator.
type Query struct {
	pipeline *pipeline
	hints    []queryHint // with(...)

	// Derived by the checker.
	outFields  []outField // fields whose values search results show on each span
	needRoot   bool       // rootName, rootServiceName
	needTree   bool       // structural operators, span:childCount
	mostRecent bool       // with(most_recent=true)
	noop       bool       // can never match (e.g. { false })
}

// queryHint is one `with(name=value)` entry.
type queryHint struct {
	p     pos
	name  string
	value static
}

type pos struct{ line, col int }

func (p pos) errorf(msg string) *ParseError { return &ParseError{Line: p.line, Col: p.col, Msg: msg} }

// ---- pipelines and spansets ----

// stage is one element of a pipeline.
type stage interface {
	write(b *strings.Builder, full bool)
}

// spansetExpr is a stage that selects spans: a filter, an operation between
// spanset expressions, or a parenthesized pipeline.
type spansetExpr interface {
	stage
	isSpanset()
}

type pipeline struct {
	p      pos
	stages []stage
}

type spansetFilter struct {
	p    pos
	expr fieldExpr // nil: every span
}

type spansetOpKind uint8

const (
	ssAnd spansetOpKind = iota
	ssOr
	ssChild      // >
	ssParent     // <
	ssDesc       // >>
	ssAnc        // <<
	ssSibling    // ~
	ssNotChild   // !>
	ssNotParent  // !<
	ssNotDesc    // !>>
	ssNotAnc     // !<<
	ssNotSibling // !~
	ssUChild     // &>
	ssUParent    // &<
	ssUDesc      // &>>
	ssUAnc       // &<<
	ssUSibling   // &~
)

var spansetOpText = [...]string{"&&", "||", ">", "<", ">>", "<<", "~", "!>", "!<", "!>>", "!<<", "!~", "&>", "&<", "&>>", "&<<", "&~"}

type spansetOp struct {
	p        pos
	op       spansetOpKind
	lhs, rhs spansetExpr
}

type aggKind uint8

const (
	aggCount aggKind = iota
	aggAvg
	aggMin
	aggMax
	aggSum
)

var aggText = [...]string{"count", "avg", "min", "max", "sum"}

// scalarFilter is `agg(arg) op value`.
type scalarFilter struct {
	p     pos
	agg   aggKind
	arg   fieldExpr // nil for count()
	op    binOp
	value static
	key   string // the result attribute key, "avg(duration)"
}

type groupBy struct {
	p     pos
	exprs []fieldExpr
	keys  []string // the result attribute keys, "by(<expr>)"
}

type selectStage struct {
	p      pos
	fields []fieldExpr
}

type coalesceStage struct{ p pos }

func (*pipeline) isSpanset()      {}
func (*spansetFilter) isSpanset() {}
func (*spansetOp) isSpanset()     {}

// ---- field expressions ----

// fieldExpr is an expression evaluated on one span.
type fieldExpr interface {
	eval(c *evalCtx) static
	typ() vtype // static type; vAttr when known only at evaluation
	exprPos() pos
	write(b *strings.Builder, parentPrec int, full bool)
}

type binOp uint8

const (
	opEq binOp = iota
	opNeq
	opLt
	opLte
	opGt
	opGte
	opRe
	opNre
	opAdd
	opSub
	opMul
	opDiv
	opMod
	opPow
)

var binOpText = [...]string{"=", "!=", "<", "<=", ">", ">=", "=~", "!~", "+", "-", "*", "/", "%", "^"}

func (o binOp) isComparison() bool { return o <= opNre }

// Precedences of field expressions, loosest first.
const (
	precOr = iota + 1
	precAnd
	precCmp
	precAdd
	precMul
	precPow
	precUnary
	precPrimary
)

func (o binOp) prec() int {
	switch o {
	case opAdd, opSub:
		return precAdd
	case opMul, opDiv, opMod:
		return precMul
	case opPow:
		return precPow
	}
	return precCmp
}

type literal struct {
	p pos
	v static
}

type attribute struct {
	p     pos
	scope traceentry.Scope
	name  string
}

type intrinsic struct {
	p pos
	i traceentry.Intrinsic
}

type binaryExpr struct {
	p        pos
	op       binOp
	lhs, rhs fieldExpr

	// Set by the checker.
	re      *regexp.Regexp // opRe, opNre
	nilCmp  bool           // one side is the nil literal
	quantEv bool           // reads event fields: true if it holds for any event
	quantLn bool           // reads link fields: true if it holds for any link
}

type logicalExpr struct {
	p     pos
	or    bool // false: and
	terms []fieldExpr
}

type unaryExpr struct {
	p   pos
	neg bool // false: logical not
	x   fieldExpr
}

// anyExpr makes a bare boolean event or link field true when it holds for
// any event or link of the span; the checker inserts it.
type anyExpr struct {
	x        fieldExpr
	ev, link bool
}

func (e *literal) exprPos() pos    { return e.p }
func (e *attribute) exprPos() pos  { return e.p }
func (e *intrinsic) exprPos() pos  { return e.p }
func (e *binaryExpr) exprPos() pos { return e.p }
func (e *logicalExpr) exprPos() pos {
	return e.p
}
func (e *unaryExpr) exprPos() pos { return e.p }
func (e *anyExpr) exprPos() pos   { return e.x.exprPos() }

// ---- printing ----

// String returns the query in TraceQL; parsing it gives the same query.
func (q *Query) String() string {
	var b strings.Builder
	q.write(&b, false)
	return b.String()
}

// dump is String with every operation bracketed, for tests comparing trees.
func (q *Query) dump() string {
	var b strings.Builder
	q.write(&b, true)
	return b.String()
}

func (q *Query) write(b *strings.Builder, full bool) {
	q.pipeline.writeStages(b, full)
	if len(q.hints) > 0 {
		b.WriteString(" with (")
		for i, h := range q.hints {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(h.name)
			b.WriteByte('=')
			h.value.writeLiteral(b)
		}
		b.WriteByte(')')
	}
}

func (s *pipeline) writeStages(b *strings.Builder, full bool) {
	for i, st := range s.stages {
		if i > 0 {
			b.WriteString(" | ")
		}
		st.write(b, full)
	}
}

func (s *pipeline) write(b *strings.Builder, full bool) {
	b.WriteByte('(')
	s.writeStages(b, full)
	b.WriteByte(')')
}

func (s *spansetFilter) write(b *strings.Builder, full bool) {
	if s.expr == nil {
		b.WriteString("{ }")
		return
	}
	b.WriteString("{ ")
	s.expr.write(b, 0, full)
	b.WriteString(" }")
}

func (s *spansetOp) write(b *strings.Builder, full bool) {
	if full {
		b.WriteByte('[')
	}
	s.lhs.write(b, full)
	b.WriteByte(' ')
	b.WriteString(spansetOpText[s.op])
	b.WriteByte(' ')
	s.rhs.write(b, full)
	if full {
		b.WriteByte(']')
	}
}

func (s *scalarFilter) write(b *strings.Builder, full bool) {
	s.writeAgg(b, full)
	b.WriteByte(' ')
	b.WriteString(binOpText[s.op])
	b.WriteByte(' ')
	s.value.writeLiteral(b)
}

func (s *scalarFilter) writeAgg(b *strings.Builder, full bool) {
	b.WriteString(aggText[s.agg])
	b.WriteByte('(')
	if s.arg != nil {
		s.arg.write(b, 0, full)
	}
	b.WriteByte(')')
}

func writeList(b *strings.Builder, name string, es []fieldExpr, full bool) {
	b.WriteString(name)
	b.WriteByte('(')
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		e.write(b, 0, full)
	}
	b.WriteByte(')')
}

func (s *groupBy) write(b *strings.Builder, full bool)     { writeList(b, "by", s.exprs, full) }
func (s *selectStage) write(b *strings.Builder, full bool) { writeList(b, "select", s.fields, full) }
func (s *coalesceStage) write(b *strings.Builder, _ bool)  { b.WriteString("coalesce()") }

func exprString(e fieldExpr) string {
	var b strings.Builder
	e.write(&b, 0, false)
	return b.String()
}

func (e *literal) write(b *strings.Builder, _ int, _ bool) { e.v.writeLiteral(b) }

func (e *attribute) write(b *strings.Builder, _ int, _ bool) {
	if e.scope != traceentry.ScopeUnscoped {
		b.WriteString(e.scope.String())
	}
	b.WriteByte('.')
	writeAttrName(b, e.name)
}

func writeAttrName(b *strings.Builder, name string) {
	plain := name != ""
	for _, r := range name {
		if !isAttributeRune(r) || r == utf8.RuneError {
			plain = false
			break
		}
	}
	if plain {
		b.WriteString(name)
		return
	}
	b.WriteByte('"')
	for _, r := range name {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
}

func (e *intrinsic) write(b *strings.Builder, _ int, _ bool) { b.WriteString(e.i.String()) }

func (e *binaryExpr) write(b *strings.Builder, parent int, full bool) {
	p := e.op.prec()
	paren := full || p < parent
	if paren {
		b.WriteByte('(')
	}
	lp, rp := p, p+1 // left-associative
	if e.op == opPow {
		lp, rp = p+1, p // right-associative
	}
	e.lhs.write(b, lp, full)
	b.WriteByte(' ')
	b.WriteString(binOpText[e.op])
	b.WriteByte(' ')
	e.rhs.write(b, rp, full)
	if paren {
		b.WriteByte(')')
	}
}

func (e *logicalExpr) write(b *strings.Builder, parent int, full bool) {
	p, sep := precAnd, " && "
	if e.or {
		p, sep = precOr, " || "
	}
	paren := full || p < parent
	if paren {
		b.WriteByte('(')
	}
	for i, t := range e.terms {
		if i > 0 {
			b.WriteString(sep)
		}
		t.write(b, p+1, full)
	}
	if paren {
		b.WriteByte(')')
	}
}

func (e *unaryExpr) write(b *strings.Builder, _ int, full bool) {
	if full {
		b.WriteByte('(')
	}
	if e.neg {
		b.WriteByte('-')
	} else {
		b.WriteByte('!')
	}
	e.x.write(b, precUnary, full)
	if full {
		b.WriteByte(')')
	}
}

func (e *anyExpr) write(b *strings.Builder, parent int, full bool) { e.x.write(b, parent, full) }

// writeLiteral writes a constant so that the lexer reads it back unchanged.
func (v static) writeLiteral(b *strings.Builder) {
	switch v.t {
	case vNil:
		b.WriteString("nil")
	case vBool:
		b.WriteString(strconv.FormatBool(v.n == 1))
	case vInt:
		switch v.n {
		case math.MinInt64:
			b.WriteString("minInt")
		default:
			b.WriteString(strconv.FormatInt(v.n, 10))
		}
	case vFloat:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEIN") {
			s += ".0"
		}
		b.WriteString(s)
	case vDuration: // never math.MinInt64: the lexer cannot read it back, so folding avoids it
		b.WriteString(time.Duration(v.n).String())
	case vString:
		b.WriteString(strconv.Quote(v.s))
	case vStatus:
		b.WriteString(traceentry.StatusCode(v.n).String())
	case vKind:
		b.WriteString(traceentry.SpanKind(v.n).String())
	default:
		b.WriteString(v.String())
	}
}
