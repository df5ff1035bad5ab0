package logql

import (
	"math"
	"strconv"

	"github.com/grafana/regexp"
)

// Binary operator precedence, as in PromQL (higher binds tighter).
var binPrec = map[string]int{
	"or": 1, "and": 2, "unless": 2,
	"==": 3, "!=": 3, ">": 3, ">=": 3, "<": 3, "<=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5,
	"^": 6,
}

var rangeOps = map[string]bool{
	"count_over_time": true, "rate": true, "bytes_over_time": true, "bytes_rate": true,
	"absent_over_time": true, "sum_over_time": true, "avg_over_time": true, "min_over_time": true,
	"max_over_time": true, "first_over_time": true, "last_over_time": true, "stddev_over_time": true,
	"stdvar_over_time": true, "quantile_over_time": true, "rate_counter": true,
}

var vectorOps = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "stddev": true,
	"stdvar": true, "topk": true, "bottomk": true, "sort": true, "sort_desc": true,
}

func (p *parser) binOp() (string, bool) {
	t := p.peek()
	if t.kind == tOp || t.kind == tIdent {
		if _, ok := binPrec[t.text]; ok {
			if t.kind == tIdent && t.text != "or" && t.text != "and" && t.text != "unless" {
				return "", false
			}
			return t.text, true
		}
	}
	return "", false
}

func (p *parser) parseSampleExpr(minPrec int) (SampleExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParseDepth {
		return nil, p.errAt(p.peek(), "expression nested too deeply")
	}
	lhs, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for chain := 1; ; chain++ {
		op, ok := p.binOp()
		if !ok || binPrec[op] < minPrec {
			return lhs, nil
		}
		if p.depth+chain > maxParseDepth { // each operator of a chain nests its left side
			return nil, p.errAt(p.peek(), "expression nested too deeply")
		}
		opTok := p.next()
		be := &BinOpExpr{Op: op, LHS: lhs}
		if p.isIdent("bool") {
			if binPrec[op] != 3 {
				return nil, p.errAt(p.peek(), "syntax error: bool modifier can only be used on comparison operators")
			}
			p.next()
			be.ReturnBool = true
		}
		if err := p.parseMatching(be); err != nil {
			return nil, err
		}
		next := binPrec[op] + 1
		if op == "^" { // right associative
			next = binPrec[op]
		}
		rhs, err := p.parseSampleExpr(next)
		if err != nil {
			return nil, err
		}
		be.RHS = rhs
		if err := checkBinOp(p, opTok, be); err != nil {
			return nil, err
		}
		lhs = be
	}
}

func checkBinOp(p *parser, t token, be *BinOpExpr) error {
	_, ll := be.LHS.(*LiteralExpr)
	_, rl := be.RHS.(*LiteralExpr)
	switch be.Op {
	case "and", "or", "unless":
		if ll || rl {
			return p.errAt(t, "unexpected literal for right leg of logical/set binary operation (%s): %s", be.Op, "literal")
		}
	}
	if be.Matching != nil && (ll || rl) {
		return p.errAt(t, "vector matching only allowed between vectors")
	}
	if ll && rl && binPrec[be.Op] == 3 && !be.ReturnBool {
		return p.errAt(t, "comparisons between scalars must use BOOL modifier")
	}
	return nil
}

func (p *parser) parseLabelList() ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	out := []string{}
	for !p.isOp(")") {
		n, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp(")") {
			return nil, p.unexpected("\",\" or \")\"")
		}
	}
	p.next()
	return out, nil
}

func (p *parser) parseMatching(be *BinOpExpr) error {
	if p.isIdent("on") || p.isIdent("ignoring") {
		m := &VectorMatching{On: p.peek().text == "on", Ignoring: p.peek().text == "ignoring"}
		p.next()
		ls, err := p.parseLabelList()
		if err != nil {
			return err
		}
		m.Labels = ls
		be.Matching = m
	}
	if p.isIdent("group_left") || p.isIdent("group_right") {
		if be.Matching == nil {
			be.Matching = &VectorMatching{Ignoring: true, Labels: []string{}}
		}
		t := p.next()
		if t.text == "group_left" {
			be.Matching.GroupLeft = true
		} else {
			be.Matching.GroupRight = true
		}
		be.Matching.Include = []string{}
		if p.isOp("(") {
			ls, err := p.parseLabelList()
			if err != nil {
				return err
			}
			be.Matching.Include = ls
		}
		switch be.Op {
		case "and", "or", "unless":
			return p.errAt(t, "no grouping allowed for %s operation", be.Op)
		}
	}
	return nil
}

func (p *parser) parseNumber() (float64, error) {
	neg := false
	for p.isOp("-") || p.isOp("+") {
		if p.next().text == "-" {
			neg = !neg
		}
	}
	t := p.peek()
	if t.kind != tNumber {
		return 0, p.unexpected("number")
	}
	p.next()
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, p.errAt(t, "syntax error: invalid number %s", quote(t.text))
	}
	if neg {
		v = -v
	}
	return v, nil
}

func (p *parser) parseUnary() (SampleExpr, error) {
	t := p.peek()
	switch {
	case t.kind == tOp && (t.text == "-" || t.text == "+"):
		if nt := p.peekN(1); nt.kind == tNumber || (nt.kind == tOp && (nt.text == "-" || nt.text == "+")) {
			v, err := p.parseNumber()
			if err != nil {
				return nil, err
			}
			return &LiteralExpr{Val: v}, nil
		}
		return nil, p.unexpected("number")
	case t.kind == tNumber:
		v, err := p.parseNumber()
		if err != nil {
			return nil, err
		}
		return &LiteralExpr{Val: v}, nil
	case t.kind == tOp && t.text == "(":
		p.next()
		e, err := p.parseSampleExpr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return e, nil
	case t.kind == tOp && t.text == "{":
		return nil, p.errAt(t, "syntax error: a log selector is not allowed here; use a range aggregation such as count_over_time")
	case t.kind == tIdent:
		switch {
		case rangeOps[t.text]:
			return p.parseRangeAgg()
		case vectorOps[t.text]:
			return p.parseVectorAgg()
		case t.text == "vector":
			p.next()
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			v, err := p.parseNumber()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return &VectorExpr{Val: v}, nil
		case t.text == "label_replace":
			return p.parseLabelReplace()
		}
		return nil, p.errAt(t, "syntax error: unexpected identifier %s", quote(t.text))
	}
	return nil, p.unexpected("expression")
}

func (p *parser) parseGroupingOpt() (*Grouping, error) {
	if !p.isIdent("by") && !p.isIdent("without") {
		return nil, nil
	}
	g := &Grouping{Without: p.next().text == "without"}
	ls, err := p.parseLabelList()
	if err != nil {
		return nil, err
	}
	g.Labels = ls
	return g, nil
}

func (p *parser) parseRangeAgg() (SampleExpr, error) {
	opTok := p.next()
	e := &RangeAggExpr{Op: opTok.text}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if e.Op == "quantile_over_time" {
		v, err := p.parseNumber()
		if err != nil {
			return nil, err
		}
		e.Param = v
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
	r, err := p.parseLogRange()
	if err != nil {
		return nil, err
	}
	e.Left = r
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if e.Grouping, err = p.parseGroupingOpt(); err != nil {
		return nil, err
	}
	return e, validateRangeAgg(p, opTok, e)
}

func validateRangeAgg(p *parser, t token, e *RangeAggExpr) error {
	switch e.Op {
	case "count_over_time", "bytes_over_time", "bytes_rate", "absent_over_time":
		if e.Left.Unwrap != nil {
			return p.errAt(t, "invalid aggregation %s with unwrap", e.Op)
		}
	case "rate":
	default:
		if e.Left.Unwrap == nil {
			return p.errAt(t, "invalid aggregation %s without unwrap", e.Op)
		}
	}
	if e.Grouping != nil {
		switch e.Op {
		case "count_over_time", "bytes_over_time", "bytes_rate", "absent_over_time", "rate", "rate_counter", "sum_over_time":
			return p.errAt(t, "grouping not allowed for %s aggregation", e.Op)
		}
	}
	return nil
}

func (p *parser) parseVectorAgg() (SampleExpr, error) {
	opTok := p.next()
	e := &VectorAggExpr{Op: opTok.text}
	var err error
	if e.Grouping, err = p.parseGroupingOpt(); err != nil {
		return nil, err
	}
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	if e.Op == "topk" || e.Op == "bottomk" {
		pt := p.peek()
		v, err := p.parseNumber()
		if err != nil {
			return nil, err
		}
		if v != math.Trunc(v) || v <= 0 {
			return nil, p.errAt(pt, "invalid parameter for %s: must be a positive integer", e.Op)
		}
		e.Param = v
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
	inner, err := p.parseSampleExpr(0)
	if err != nil {
		return nil, err
	}
	e.Expr = inner
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if e.Grouping == nil {
		if e.Grouping, err = p.parseGroupingOpt(); err != nil {
			return nil, err
		}
	}
	if (e.Op == "sort" || e.Op == "sort_desc") && e.Grouping != nil {
		return nil, p.errAt(opTok, "grouping not allowed for %s aggregation", e.Op)
	}
	if _, ok := inner.(*LiteralExpr); ok {
		return nil, p.errAt(opTok, "syntax error: %s needs a vector, got a number", e.Op)
	}
	return e, nil
}

func (p *parser) parseLabelReplace() (SampleExpr, error) {
	p.next()
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	inner, err := p.parseSampleExpr(0)
	if err != nil {
		return nil, err
	}
	e := &LabelReplaceExpr{Left: inner}
	args := []*string{&e.Dst, &e.Repl, &e.Src, &e.Regex}
	var reTok token
	for _, a := range args {
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		reTok = p.peek()
		s, err := p.expectString()
		if err != nil {
			return nil, err
		}
		*a = s
	}
	if err := p.expectOp(")"); err != nil {
		return nil, err
	}
	re, rerr := regexp.Compile("^(?s:" + e.Regex + ")$")
	if rerr != nil {
		return nil, p.errAt(reTok, "invalid regular expression in label_replace(): %s", e.Regex)
	}
	e.re = re
	return e, nil
}
