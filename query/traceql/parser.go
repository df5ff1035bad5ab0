package traceql

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/weftdb/weft/storage/traceentry"
)

// ParseOptions bound the work a query may cost before evaluation.
type ParseOptions struct {
	// MaxLength is the longest query accepted, in bytes.
	MaxLength int
	// MaxDepth bounds the nesting of the query (parentheses, operator
	// chains, unary operators), so that parsing, checking and evaluation
	// recurse a bounded number of levels.
	MaxDepth int
}

// DefaultParseOptions returns the defaults: queries up to 64 KiB (a Grafana
// query is well under 1 KiB; URLs of more than 64 KiB are refused by most
// proxies anyway) and 200 levels of nesting (far beyond any hand-written or
// generated query, far below what could exhaust a stack).
func DefaultParseOptions() ParseOptions {
	return ParseOptions{MaxLength: 64 << 10, MaxDepth: 200}
}

// Parse parses and checks a TraceQL query with DefaultParseOptions.
// Errors match ErrParse (and ErrUnsupported for TraceQL weft does not
// implement) and are *ParseError values with the position.
func Parse(q string) (*Query, error) { return ParseWithOptions(q, DefaultParseOptions()) }

// ParseWithOptions parses and checks a TraceQL query. It never panics and
// takes time linear in the length of the query.
func ParseWithOptions(q string, opts ParseOptions) (*Query, error) {
	if opts.MaxLength > 0 && len(q) > opts.MaxLength {
		return nil, &ParseError{Line: 1, Col: 1, Msg: fmt.Sprintf("query is %d bytes long; the limit is %d", len(q), opts.MaxLength)}
	}
	if !utf8.ValidString(q) {
		line, col := 1, 1
		for i, r := range q {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(q[i:]); n == 1 {
					break
				}
			}
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return nil, &ParseError{Line: line, Col: col, Msg: "the query is not valid UTF-8"}
	}
	p := &parser{lx: newLexer(q), maxDepth: opts.MaxDepth}
	if p.maxDepth <= 0 {
		p.maxDepth = DefaultParseOptions().MaxDepth
	}
	query, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	if err := check(query); err != nil {
		return nil, err
	}
	return query, nil
}

type parser struct {
	lx       *lexer
	tok      token
	depth    int
	maxDepth int
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) here() pos { return pos{p.tok.line, p.tok.col} }

func (p *parser) unexpected(want string) *ParseError {
	msg := "unexpected " + p.tok.describe()
	if want != "" {
		msg += ", expected " + want
	}
	return p.here().errorf(msg)
}

func (p *parser) expect(k tokKind, want string) error {
	if p.tok.kind != k {
		return p.unexpected(want)
	}
	return p.advance()
}

// enter counts one level of nesting and fails past the limit.
func (p *parser) enter() error {
	p.depth++
	if p.depth > p.maxDepth {
		return p.here().errorf(fmt.Sprintf("query is nested more than %d levels deep", p.maxDepth))
	}
	return nil
}

func (p *parser) leave(n int) { p.depth -= n }

// open counts one level of nesting and moves past the token that opens it.
func (p *parser) open() error {
	if err := p.enter(); err != nil {
		return err
	}
	return p.advance()
}

func (p *parser) parseQuery() (*Query, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	pl, err := p.parsePipeline()
	if err != nil {
		return nil, err
	}
	q := &Query{pipeline: pl}
	if p.tok.kind == tokIdent && p.tok.text == "with" {
		if q.hints, err = p.parseWith(); err != nil {
			return nil, err
		}
	}
	if p.tok.kind != tokEOF {
		return nil, p.unexpected("| or the end of the query")
	}
	return q, nil
}

func (p *parser) parsePipeline() (*pipeline, error) {
	pl := &pipeline{p: p.here()}
	for {
		st, err := p.parseStage(len(pl.stages) == 0)
		if err != nil {
			return nil, err
		}
		pl.stages = append(pl.stages, st)
		if p.tok.kind != tokPipe {
			return pl, nil
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}

var aggregates = map[string]aggKind{"count": aggCount, "avg": aggAvg, "min": aggMin, "max": aggMax, "sum": aggSum}

// metricsFunctions are TraceQL metrics stages (for /api/metrics/*), which weft
// does not implement.
var metricsFunctions = map[string]bool{
	"rate": true, "count_over_time": true, "min_over_time": true, "max_over_time": true,
	"avg_over_time": true, "sum_over_time": true, "quantile_over_time": true,
	"histogram_over_time": true, "compare": true, "topk": true, "bottomk": true,
}

func (p *parser) parseStage(first bool) (stage, error) {
	switch p.tok.kind {
	case tokLBrace, tokLParen:
		return p.parseSpansetExpr(precSpansetOr)
	case tokIdent:
		name := p.tok.text
		switch {
		case name == "by":
			exprs, at, err := p.parseCall("by", false)
			if err != nil {
				return nil, err
			}
			return &groupBy{p: at, exprs: exprs}, nil
		case name == "select":
			exprs, at, err := p.parseCall("select", false)
			if err != nil {
				return nil, err
			}
			return &selectStage{p: at, fields: exprs}, nil
		case name == "coalesce":
			at := p.here()
			if first {
				return nil, at.errorf("a pipeline cannot start with coalesce()")
			}
			if _, _, err := p.parseCall("coalesce", true); err != nil {
				return nil, err
			}
			return &coalesceStage{p: at}, nil
		case metricsFunctions[name]:
			return nil, &ParseError{Line: p.tok.line, Col: p.tok.col, Unsupported: true,
				Msg: name + "(): TraceQL metrics functions are not supported"}
		}
		if agg, ok := aggregates[name]; ok {
			return p.parseScalarFilter(agg)
		}
	}
	return nil, p.unexpected("a spanset filter { ... }, an aggregate such as count() > 1, by(...), select(...) or coalesce()")
}

// parseCall parses name(expr, ...) and returns the expressions; empty
// asks for name() with no arguments.
func (p *parser) parseCall(name string, empty bool) ([]fieldExpr, pos, error) {
	at := p.here()
	if err := p.advance(); err != nil {
		return nil, at, err
	}
	if err := p.expect(tokLParen, "( after "+name); err != nil {
		return nil, at, err
	}
	if empty {
		return nil, at, p.expect(tokRParen, ") after "+name+"(")
	}
	if p.tok.kind == tokRParen {
		return nil, at, p.here().errorf(name + "() needs at least one argument")
	}
	var exprs []fieldExpr
	for {
		e, err := p.parseFieldOr()
		if err != nil {
			return nil, at, err
		}
		exprs = append(exprs, e)
		if p.tok.kind != tokComma {
			break
		}
		if err := p.advance(); err != nil {
			return nil, at, err
		}
	}
	return exprs, at, p.expect(tokRParen, ", or ) in "+name+"(...)")
}

func (p *parser) parseScalarFilter(agg aggKind) (stage, error) {
	at := p.here()
	name := p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect(tokLParen, "( after "+name); err != nil {
		return nil, err
	}
	sf := &scalarFilter{p: at, agg: agg}
	if agg == aggCount {
		if err := p.expect(tokRParen, ") after count("); err != nil {
			return nil, err
		}
	} else {
		if p.tok.kind == tokRParen {
			return nil, p.here().errorf(name + "() needs an argument, as in " + name + "(duration)")
		}
		arg, err := p.parseFieldOr()
		if err != nil {
			return nil, err
		}
		sf.arg = arg
		if err := p.expect(tokRParen, ") after the argument of "+name+"()"); err != nil {
			return nil, err
		}
	}
	switch p.tok.kind {
	case tokEq, tokNeq, tokLt, tokLte, tokGt, tokGte:
		sf.op = cmpOps[p.tok.kind]
	case tokPlus, tokMinus, tokMul, tokDiv, tokMod, tokPow:
		return nil, &ParseError{Line: p.tok.line, Col: p.tok.col, Unsupported: true, Msg: "arithmetic on aggregates is not supported"}
	default:
		return nil, p.unexpected("a comparison after " + name + "(...), as in " + name + "(...) > 2")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	valPos := p.here()
	rhs, err := p.parseFieldAdd()
	if err != nil {
		return nil, err
	}
	rhs, err = checkExpr(rhs, &checkState{})
	if err != nil {
		return nil, err
	}
	lit, ok := rhs.(*literal)
	if !ok || !lit.v.t.numeric() {
		return nil, valPos.errorf(name + "(...) must be compared with a number or a duration")
	}
	sf.value = lit.v
	return sf, nil
}

func (p *parser) parseWith() ([]queryHint, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect(tokLParen, "( after with"); err != nil {
		return nil, err
	}
	var hints []queryHint
	for {
		if p.tok.kind != tokIdent {
			return nil, p.unexpected("a hint name, as in with(most_recent=true)")
		}
		h := queryHint{name: p.tok.text}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expect(tokEq, "= after the hint name"); err != nil {
			return nil, err
		}
		at := p.here()
		e, err := p.parseFieldUnary()
		if err != nil {
			return nil, err
		}
		lit, ok := e.(*literal)
		if !ok {
			return nil, at.errorf("a hint value must be a constant")
		}
		h.value, h.p = lit.v, at
		hints = append(hints, h)
		if p.tok.kind != tokComma {
			break
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	return hints, p.expect(tokRParen, ", or ) in with(...)")
}

// Spanset operator precedences: || loosest, then &&, then the structural
// operators, all left-associative.
const (
	precSpansetOr = iota + 1
	precSpansetAnd
	precSpansetStruct
)

var spansetOps = map[tokKind]spansetOpKind{
	tokOr: ssOr, tokAnd: ssAnd, tokGt: ssChild, tokLt: ssParent, tokDesc: ssDesc, tokAnc: ssAnc,
	tokSibling: ssSibling, tokNotChild: ssNotChild, tokNotPar: ssNotParent, tokNotDesc: ssNotDesc,
	tokNotAnc: ssNotAnc, tokNre: ssNotSibling, tokUChild: ssUChild, tokUPar: ssUParent,
	tokUDesc: ssUDesc, tokUAnc: ssUAnc, tokUSib: ssUSibling,
}

func spansetPrec(op spansetOpKind) int {
	switch op {
	case ssOr:
		return precSpansetOr
	case ssAnd:
		return precSpansetAnd
	}
	return precSpansetStruct
}

func (p *parser) parseSpansetExpr(minPrec int) (spansetExpr, error) {
	lhs, err := p.parseSpansetPrimary()
	if err != nil {
		return nil, err
	}
	chain := 0
	defer func() { p.leave(chain) }()
	for {
		op, ok := spansetOps[p.tok.kind]
		if !ok || spansetPrec(op) < minPrec {
			return lhs, nil
		}
		at := p.here()
		chain++
		if err := p.open(); err != nil {
			return nil, err
		}
		rhs, err := p.parseSpansetExpr(spansetPrec(op) + 1)
		if err != nil {
			return nil, err
		}
		lhs = &spansetOp{p: at, op: op, lhs: lhs, rhs: rhs}
	}
}

func (p *parser) parseSpansetPrimary() (spansetExpr, error) {
	at := p.here()
	switch p.tok.kind {
	case tokLBrace:
		if err := p.advance(); err != nil {
			return nil, err
		}
		f := &spansetFilter{p: at}
		if p.tok.kind == tokRBrace {
			return f, p.advance()
		}
		e, err := p.parseFieldOr()
		if err != nil {
			return nil, err
		}
		f.expr = e
		return f, p.expect(tokRBrace, "} or an operator")
	case tokLParen:
		if err := p.open(); err != nil {
			return nil, err
		}
		defer p.leave(1)
		pl, err := p.parsePipeline()
		if err != nil {
			return nil, err
		}
		pl.p = at
		return pl, p.expect(tokRParen, ") or |")
	}
	return nil, p.unexpected("a spanset filter { ... }")
}

// ---- field expressions ----

var cmpOps = map[tokKind]binOp{
	tokEq: opEq, tokNeq: opNeq, tokLt: opLt, tokLte: opLte, tokGt: opGt, tokGte: opGte, tokRe: opRe, tokNre: opNre,
}

func (p *parser) parseFieldOr() (fieldExpr, error) { return p.parseLogical(true) }

func (p *parser) parseLogical(or bool) (fieldExpr, error) {
	sep, sub := tokOr, func() (fieldExpr, error) { return p.parseLogical(false) }
	if !or {
		sep, sub = tokAnd, p.parseFieldCmp
	}
	at := p.here()
	first, err := sub()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != sep {
		return first, nil
	}
	l := &logicalExpr{p: at, or: or}
	l.add(first)
	for p.tok.kind == sep {
		if err := p.advance(); err != nil {
			return nil, err
		}
		t, err := sub()
		if err != nil {
			return nil, err
		}
		l.add(t)
	}
	return l, nil
}

// add appends a term, flattening a nested operation of the same kind.
func (l *logicalExpr) add(t fieldExpr) {
	if n, ok := t.(*logicalExpr); ok && n.or == l.or {
		l.terms = append(l.terms, n.terms...)
		return
	}
	l.terms = append(l.terms, t)
}

// parseBinaryChain parses left-associative chains of the operators in ops.
func (p *parser) parseBinaryChain(ops map[tokKind]binOp, sub func() (fieldExpr, error)) (fieldExpr, error) {
	lhs, err := sub()
	if err != nil {
		return nil, err
	}
	chain := 0
	defer func() { p.leave(chain) }()
	for {
		op, ok := ops[p.tok.kind]
		if !ok {
			return lhs, nil
		}
		at := p.here()
		chain++
		if err := p.open(); err != nil {
			return nil, err
		}
		rhs, err := sub()
		if err != nil {
			return nil, err
		}
		lhs = &binaryExpr{p: at, op: op, lhs: lhs, rhs: rhs}
	}
}

var (
	addOps = map[tokKind]binOp{tokPlus: opAdd, tokMinus: opSub}
	mulOps = map[tokKind]binOp{tokMul: opMul, tokDiv: opDiv, tokMod: opMod}
)

func (p *parser) parseFieldCmp() (fieldExpr, error) {
	return p.parseBinaryChain(cmpOps, p.parseFieldAdd)
}
func (p *parser) parseFieldAdd() (fieldExpr, error) {
	return p.parseBinaryChain(addOps, p.parseFieldMul)
}
func (p *parser) parseFieldMul() (fieldExpr, error) {
	return p.parseBinaryChain(mulOps, p.parseFieldPow)
}

func (p *parser) parseFieldPow() (fieldExpr, error) {
	base, err := p.parseFieldUnary()
	if err != nil || p.tok.kind != tokPow {
		return base, err
	}
	at := p.here()
	if err := p.open(); err != nil {
		return nil, err
	}
	defer p.leave(1)
	exp, err := p.parseFieldPow()
	if err != nil {
		return nil, err
	}
	return &binaryExpr{p: at, op: opPow, lhs: base, rhs: exp}, nil
}

func (p *parser) parseFieldUnary() (fieldExpr, error) {
	if p.tok.kind != tokNot && p.tok.kind != tokMinus {
		return p.parseFieldPrimary()
	}
	at := p.here()
	neg := p.tok.kind == tokMinus
	if err := p.open(); err != nil {
		return nil, err
	}
	defer p.leave(1)
	x, err := p.parseFieldUnary()
	if err != nil {
		return nil, err
	}
	if lit, ok := x.(*literal); ok && neg {
		switch {
		case lit.v.t == vInt && lit.v.n != math.MinInt64, lit.v.t == vDuration:
			return &literal{p: at, v: static{t: lit.v.t, n: -lit.v.n}}, nil
		case lit.v.t == vFloat:
			return &literal{p: at, v: floatValue(-lit.v.f)}, nil
		}
	}
	return &unaryExpr{p: at, neg: neg, x: x}, nil
}

// legacyIntrinsics are the unscoped intrinsic names.
var legacyIntrinsics = map[string]traceentry.Intrinsic{
	"name": traceentry.IntrinsicName, "status": traceentry.IntrinsicStatus,
	"statusMessage": traceentry.IntrinsicStatusMessage, "kind": traceentry.IntrinsicKind,
	"duration": traceentry.IntrinsicDuration, "rootName": traceentry.IntrinsicTraceRootName,
	"rootServiceName": traceentry.IntrinsicTraceRootService, "traceDuration": traceentry.IntrinsicTraceDuration,
}

// scopedIntrinsics are the scope:name intrinsics.
var scopedIntrinsics = map[string]traceentry.Intrinsic{
	"span:name": traceentry.IntrinsicName, "span:status": traceentry.IntrinsicStatus,
	"span:statusMessage": traceentry.IntrinsicStatusMessage, "span:kind": traceentry.IntrinsicKind,
	"span:duration": traceentry.IntrinsicDuration, "span:id": traceentry.IntrinsicSpanID,
	"span:parentID": traceentry.IntrinsicParentID, "span:childCount": traceentry.IntrinsicChildCount,
	"trace:id": traceentry.IntrinsicTraceID, "trace:rootName": traceentry.IntrinsicTraceRootName,
	"trace:rootService": traceentry.IntrinsicTraceRootService, "trace:duration": traceentry.IntrinsicTraceDuration,
	"event:name": traceentry.IntrinsicEventName, "event:timeSinceStart": traceentry.IntrinsicEventTimeSinceStart,
	"link:traceID": traceentry.IntrinsicLinkTraceID, "link:spanID": traceentry.IntrinsicLinkSpanID,
	"instrumentation:name":    traceentry.IntrinsicInstrumentationName,
	"instrumentation:version": traceentry.IntrinsicInstrumentationVersion,
}

var keywordValues = map[string]static{
	"true": trueValue, "false": falseValue, "nil": nilValue,
	"minInt": intValue(math.MinInt64), "maxInt": intValue(math.MaxInt64),
	"unset":       {t: vStatus, n: int64(traceentry.StatusUnset)},
	"ok":          {t: vStatus, n: int64(traceentry.StatusOK)},
	"error":       {t: vStatus, n: int64(traceentry.StatusError)},
	"unspecified": {t: vKind, n: int64(traceentry.SpanKindUnspecified)},
	"internal":    {t: vKind, n: int64(traceentry.SpanKindInternal)},
	"server":      {t: vKind, n: int64(traceentry.SpanKindServer)},
	"client":      {t: vKind, n: int64(traceentry.SpanKindClient)},
	"producer":    {t: vKind, n: int64(traceentry.SpanKindProducer)},
	"consumer":    {t: vKind, n: int64(traceentry.SpanKindConsumer)},
}

// unsupportedIntrinsics are valid in Tempo but not implemented here.
var unsupportedIntrinsics = map[string]bool{
	"parent": true, "nestedSetLeft": true, "nestedSetRight": true, "nestedSetParent": true,
	"traceStartTime": true, "spanStartTime": true,
}

func (p *parser) parseFieldPrimary() (fieldExpr, error) {
	t := p.tok
	at := p.here()
	switch t.kind {
	case tokLParen:
		if err := p.open(); err != nil {
			return nil, err
		}
		defer p.leave(1)
		e, err := p.parseFieldOr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(tokRParen, ") or an operator")
	case tokString:
		return &literal{p: at, v: stringValue(t.text)}, p.advance()
	case tokInt:
		return &literal{p: at, v: intValue(t.num)}, p.advance()
	case tokFloat:
		return &literal{p: at, v: floatValue(t.fnum)}, p.advance()
	case tokDuration:
		return &literal{p: at, v: durationValue(t.num)}, p.advance()
	case tokAttr:
		if t.parent {
			return nil, &ParseError{Line: t.line, Col: t.col, Unsupported: true, Msg: "the parent. scope is not supported"}
		}
		return &attribute{p: at, scope: t.scope, name: t.text}, p.advance()
	case tokIntrinsic:
		i, ok := scopedIntrinsics[t.text]
		if !ok {
			return nil, at.errorf("unknown intrinsic " + t.text)
		}
		return &intrinsic{p: at, i: i}, p.advance()
	case tokIdent:
		if v, ok := keywordValues[t.text]; ok {
			return &literal{p: at, v: v}, p.advance()
		}
		if i, ok := legacyIntrinsics[t.text]; ok {
			return &intrinsic{p: at, i: i}, p.advance()
		}
		if unsupportedIntrinsics[t.text] {
			return nil, &ParseError{Line: t.line, Col: t.col, Unsupported: true, Msg: "intrinsic " + t.text + " is not supported"}
		}
		if _, ok := aggregates[t.text]; ok {
			return nil, &ParseError{Line: t.line, Col: t.col, Unsupported: true, Msg: t.text + "(): aggregates are only supported as a pipeline stage compared with a constant"}
		}
		return nil, at.errorf("unknown identifier " + strconv.Quote(t.text) + "; attributes need a scope, as in ." + t.text + " or span." + t.text)
	}
	return nil, p.unexpected("a value, an attribute or an intrinsic")
}
