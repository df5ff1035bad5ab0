package logql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// maxParseDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxParseDepth = 200

// maxExprHeight bounds the height of a parsed query's tree: binary
// operators, aggregations and label filter and/or chains, which the parser
// builds in loops, so that a chain of 100,000 `+` cannot make evaluation
// and String (quadratic in the height) take minutes. It is half of
// maxParseDepth: String parenthesizes every nested operator, and the
// result must parse again.
const maxExprHeight = maxParseDepth / 2

// ParseExpr parses a LogQL query. Errors are *ParseError.
func ParseExpr(q string) (Expr, error) {
	toks, perr := lex(q)
	if perr != nil {
		return nil, perr
	}
	p := &parser{src: q, toks: toks}
	e, err := p.parseTop()
	if err != nil {
		return nil, err
	}
	if h := exprHeight(e); h > maxExprHeight {
		return nil, &ParseError{Msg: fmt.Sprintf("expression nested too deeply: %d levels of operators, aggregations and label filters, at most %d", h, maxExprHeight)}
	}
	return e, nil
}

// exprHeight is the height of e's tree of operators, aggregations and
// label filters.
func exprHeight(e Expr) int {
	switch e := e.(type) {
	case *LogSelectorExpr:
		return stagesHeight(e.Stages)
	case *RangeAggExpr:
		h := stagesHeight(e.Left.Left.Stages)
		if u := e.Left.Unwrap; u != nil {
			for _, f := range u.Filters {
				h = max(h, filterHeight(f))
			}
		}
		return 1 + h
	case *VectorAggExpr:
		return 1 + exprHeight(e.Expr)
	case *BinOpExpr:
		return 1 + max(exprHeight(e.LHS), exprHeight(e.RHS))
	case *LabelReplaceExpr:
		return 1 + exprHeight(e.Left)
	}
	return 1
}

func stagesHeight(stages []Stage) int {
	h := 0
	for _, st := range stages {
		if f, ok := st.(*LabelFilterStage); ok {
			h = max(h, filterHeight(f.Filter))
		}
	}
	return h
}

func filterHeight(f LabelFilter) int {
	if b, ok := f.(*BinaryLabelFilter); ok {
		return 1 + max(filterHeight(b.Left), filterHeight(b.Right))
	}
	return 1
}

// ParseSampleExpr parses a metric query.
func ParseSampleExpr(q string) (SampleExpr, error) {
	e, err := ParseExpr(q)
	if err != nil {
		return nil, err
	}
	se, ok := e.(SampleExpr)
	if !ok {
		return nil, &ParseError{Msg: "not a metric query"}
	}
	return se, nil
}

// ParseMatchers parses a stream selector alone (`{app="a", env=~"p.*"}`),
// as the series and label endpoints take it. Errors are *ParseError.
func ParseMatchers(q string) ([]*labels.Matcher, error) {
	toks, perr := lex(q)
	if perr != nil {
		return nil, perr
	}
	p := &parser{src: q, toks: toks}
	ms, err := p.parseMatchers()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tEOF {
		return nil, p.unexpected("end of input")
	}
	return ms, nil
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekN(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) isOp(s string) bool { t := p.peek(); return t.kind == tOp && t.text == s }
func (p *parser) isIdent(s string) bool {
	t := p.peek()
	return t.kind == tIdent && t.text == s
}

func (p *parser) errAt(t token, format string, args ...any) *ParseError {
	return posErr(p.src, t.pos, fmt.Sprintf(format, args...))
}

func (p *parser) unexpected(what string) *ParseError {
	t := p.peek()
	desc := quote(t.text)
	switch t.kind {
	case tEOF:
		desc = "end of input"
	case tString:
		desc = "string " + quote(t.text)
	}
	return p.errAt(t, "syntax error: unexpected %s, expecting %s", desc, what)
}

func (p *parser) expectOp(s string) *ParseError {
	if !p.isOp(s) {
		return p.unexpected(quote(s))
	}
	p.next()
	return nil
}

func (p *parser) expectIdent() (string, *ParseError) {
	t := p.peek()
	if t.kind != tIdent {
		return "", p.unexpected("identifier")
	}
	p.next()
	return t.text, nil
}

func (p *parser) expectString() (string, *ParseError) {
	t := p.peek()
	if t.kind != tString {
		return "", p.unexpected("string")
	}
	p.next()
	return t.text, nil
}

func (p *parser) parseTop() (Expr, error) {
	if p.peek().kind == tEOF {
		return nil, &ParseError{Msg: "syntax error: empty query"}
	}
	var e Expr
	if p.isOp("{") {
		sel, err := p.parseLogSelector()
		if err != nil {
			return nil, err
		}
		if p.isOp("[") {
			return nil, p.errAt(p.peek(), "syntax error: a range vector needs a range aggregation, e.g. count_over_time")
		}
		e = sel
	} else {
		se, err := p.parseSampleExpr(0)
		if err != nil {
			return nil, err
		}
		e = se
	}
	if p.peek().kind != tEOF {
		return nil, p.unexpected("end of input")
	}
	return e, nil
}

// ---- stream selector and pipeline ----

// matchType maps a label matcher operator to its type.
func matchType(op string) (labels.MatchType, bool) {
	switch op {
	case "=":
		return labels.MatchEqual, true
	case "!=":
		return labels.MatchNotEqual, true
	case "=~":
		return labels.MatchRegexp, true
	case "!~":
		return labels.MatchNotRegexp, true
	}
	return 0, false
}

func (p *parser) parseMatchers() ([]*labels.Matcher, error) {
	open := p.peek()
	if err := p.expectOp("{"); err != nil {
		return nil, err
	}
	var ms []*labels.Matcher
	for !p.isOp("}") {
		name, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		opTok := p.next()
		mt, ok := matchType(opTok.text)
		if !ok {
			p.i--
			return nil, p.unexpected("=, !=, =~ or !~")
		}
		valTok := p.peek()
		val, err := p.expectString()
		if err != nil {
			return nil, err
		}
		m, merr := labels.NewMatcher(mt, name, val)
		if merr != nil {
			return nil, p.errAt(valTok, "invalid regular expression %s: %v", quote(val), merr)
		}
		ms = append(ms, m)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp("}") {
			return nil, p.unexpected("\",\" or \"}\"")
		}
	}
	p.next()
	if len(ms) == 0 {
		return nil, p.errAt(open, "syntax error: unexpected }, expecting IDENTIFIER")
	}
	ok := false
	for _, m := range ms {
		if !m.Matches("") {
			ok = true
			break
		}
	}
	if !ok {
		return nil, p.errAt(open, "queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~\".*\" does not meet this requirement, but app=~\".+\" will")
	}
	return ms, nil
}

func (p *parser) parseLogSelector() (*LogSelectorExpr, error) {
	ms, err := p.parseMatchers()
	if err != nil {
		return nil, err
	}
	sel := &LogSelectorExpr{Matchers: ms}
	if err := p.parsePipeline(sel, nil); err != nil {
		return nil, err
	}
	return sel, nil
}

// parsePipeline appends stages to sel. If unwrap is non-nil, `| unwrap` is
// accepted and stored there (metric context).
func (p *parser) parsePipeline(sel *LogSelectorExpr, unwrap **UnwrapExpr) error {
	for {
		t := p.peek()
		if t.kind != tOp {
			return nil
		}
		switch t.text {
		case "|=", "!=", "|~", "!~", "|>", "!>":
			if unwrap != nil && *unwrap != nil {
				return p.errAt(t, "syntax error: line filters are not allowed after unwrap")
			}
			st, err := p.parseLineFilter()
			if err != nil {
				return err
			}
			sel.Stages = append(sel.Stages, st)
		case "|":
			p.next()
			if unwrap != nil && *unwrap != nil {
				f, err := p.parseLabelFilter()
				if err != nil {
					return err
				}
				(*unwrap).Filters = append((*unwrap).Filters, f)
				continue
			}
			if p.isIdent("unwrap") {
				if unwrap == nil {
					return p.errAt(p.peek(), "syntax error: unwrap is only allowed in a range aggregation")
				}
				u, err := p.parseUnwrap()
				if err != nil {
					return err
				}
				*unwrap = u
				continue
			}
			st, err := p.parseStage()
			if err != nil {
				return err
			}
			sel.Stages = append(sel.Stages, st)
		default:
			return nil
		}
	}
}

func (p *parser) parseLineFilter() (*LineFilterStage, error) {
	op := p.next().text
	st := &LineFilterStage{Op: op}
	for {
		vt := p.peek()
		v, err := p.expectString()
		if err != nil {
			return nil, err
		}
		switch op {
		case "|~", "!~":
			re, rerr := regexp.Compile(v)
			if rerr != nil {
				return nil, p.errAt(vt, "invalid regular expression %s: %v", quote(v), rerr)
			}
			st.res = append(st.res, re)
		case "|>", "!>":
			pt, perr := parsePattern(v)
			if perr != nil {
				return nil, p.errAt(vt, "%v", perr)
			}
			st.pats = append(st.pats, pt)
		}
		st.Values = append(st.Values, v)
		if p.isIdent("or") && p.peekN(1).kind == tString {
			p.next()
			continue
		}
		return st, nil
	}
}

func (p *parser) parseStage() (Stage, error) {
	t := p.peek()
	if t.kind == tIdent {
		nt := p.peekN(1)
		isCmp := nt.kind == tOp && strings.Contains("= != =~ !~ == > >= < <=", nt.text) && nt.text != ""
		if !isCmp {
			switch t.text {
			case "json", "logfmt", "regexp", "pattern", "unpack":
				return p.parseParser()
			case "line_format":
				p.next()
				tt := p.peek()
				s, err := p.expectString()
				if err != nil {
					return nil, err
				}
				h, terr := newTmpl(s)
				if terr != nil {
					return nil, p.errAt(tt, "invalid line template: %v", terr)
				}
				return &LineFormatStage{Template: s, tmpl: h}, nil
			case "label_format":
				p.next()
				return p.parseLabelFormat()
			case "drop", "keep":
				p.next()
				nms, err := p.parseNamedMatchers()
				if err != nil {
					return nil, err
				}
				if t.text == "drop" {
					return &DropStage{Labels: nms}, nil
				}
				return &KeepStage{Labels: nms}, nil
			case "decolorize":
				p.next()
				return &DecolorizeStage{}, nil
			}
		}
	}
	f, err := p.parseLabelFilter()
	if err != nil {
		return nil, err
	}
	return &LabelFilterStage{Filter: f}, nil
}

func (p *parser) parseParser() (Stage, error) {
	kind := p.next().text
	st := &ParserStage{Kind: kind}
	switch kind {
	case "regexp", "pattern":
		vt := p.peek()
		v, err := p.expectString()
		if err != nil {
			return nil, err
		}
		st.Param = v
		if kind == "regexp" {
			re, rerr := regexp.Compile(v)
			if rerr != nil {
				return nil, p.errAt(vt, "invalid regular expression %s: %v", quote(v), rerr)
			}
			st.re = re
			n := 0
			st.names = make([]string, len(re.SubexpNames()))
			for i, name := range re.SubexpNames() {
				if name != "" {
					st.names[i] = sanitizeLabelName(name)
					n++
				}
			}
			if n == 0 {
				return nil, p.errAt(vt, "at least one named capture must be supplied")
			}
		} else {
			pt, perr := parsePattern(v)
			if perr == nil && len(pt.names) == 0 {
				perr = fmt.Errorf("at least one capture is required")
			}
			if perr != nil {
				return nil, p.errAt(vt, "invalid pattern: %v", perr)
			}
			st.pat = pt
		}
		return st, nil
	case "logfmt":
		for p.isOp("-") && p.peekN(1).kind == tOp && p.peekN(1).text == "-" {
			ft := p.peek()
			p.next()
			p.next()
			fl, err := p.expectIdent()
			if err != nil {
				return nil, err
			}
			switch fl {
			case "strict":
				st.Strict = true
			case "keep":
				if err := p.expectOp("-"); err != nil {
					return nil, err
				}
				if !p.isIdent("empty") {
					return nil, p.unexpected("empty")
				}
				p.next()
				st.KeepEmpty = true
			default:
				return nil, p.errAt(ft, "syntax error: unknown logfmt flag --%s", fl)
			}
		}
	}
	if kind == "json" || kind == "logfmt" {
		for p.peek().kind == tIdent && !isPipelineEnd(p) {
			name := p.next().text
			le := LabelExtraction{Name: name}
			if p.isOp("=") {
				p.next()
				v, err := p.expectString()
				if err != nil {
					return nil, err
				}
				le.Expr = v
			} else {
				le.Expr, le.Short = name, true
			}
			if kind == "json" {
				path, jerr := parseJSONPath(le.Expr)
				if jerr != nil {
					return nil, p.errAt(p.peek(), "invalid json expression %s: %v", quote(le.Expr), jerr)
				}
				st.paths = append(st.paths, path)
			}
			st.Exprs = append(st.Exprs, le)
			if !p.isOp(",") {
				break
			}
			p.next()
		}
	}
	return st, nil
}

// isPipelineEnd reports whether the identifier at the cursor ends an
// expression instead of continuing it (keywords after a range).
func isPipelineEnd(p *parser) bool {
	switch p.peek().text {
	case "or", "and", "unless", "by", "without", "offset", "bool", "on", "ignoring":
		nt := p.peekN(1)
		return !(nt.kind == tOp && (nt.text == "=" || nt.text == ","))
	}
	return false
}

func (p *parser) parseLabelFormat() (Stage, error) {
	st := &LabelFormatStage{}
	seen := map[string]bool{}
	for {
		dt := p.peek()
		dst, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		if seen[dst] {
			return nil, p.errAt(dt, "multiple label name '%s' in label_format", dst)
		}
		seen[dst] = true
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		op := LabelFormatOp{Dst: dst}
		t := p.peek()
		switch t.kind {
		case tIdent:
			op.Src = p.next().text
		case tString:
			p.next()
			op.Src, op.IsTmpl = t.text, true
			h, terr := newTmpl(t.text)
			if terr != nil {
				return nil, p.errAt(t, "invalid label template: %v", terr)
			}
			op.tmpl = h
		default:
			return nil, p.unexpected("identifier or string")
		}
		st.Ops = append(st.Ops, op)
		if !p.isOp(",") {
			return st, nil
		}
		p.next()
	}
}

func (p *parser) parseNamedMatchers() ([]NamedMatcher, error) {
	var out []NamedMatcher
	for {
		name, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		nm := NamedMatcher{Name: name}
		t := p.peek()
		if t.kind == tOp {
			if mt, ok := matchType(t.text); ok && p.peekN(1).kind == tString {
				p.next()
				vt := p.next()
				m, merr := labels.NewMatcher(mt, name, vt.text)
				if merr != nil {
					return nil, p.errAt(vt, "invalid regular expression %s: %v", quote(vt.text), merr)
				}
				nm.Matcher = m
			}
		}
		out = append(out, nm)
		if !p.isOp(",") {
			return out, nil
		}
		p.next()
	}
}

// ---- label filters ----

func (p *parser) parseLabelFilter() (LabelFilter, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxParseDepth {
		return nil, p.errAt(p.peek(), "expression nested too deeply")
	}
	left, err := p.parseLabelFilterAnd()
	if err != nil {
		return nil, err
	}
	for chain := 1; p.isIdent("or"); chain++ {
		if p.depth+chain > maxParseDepth { // each operator of a chain nests its left side
			return nil, p.errAt(p.peek(), "expression nested too deeply")
		}
		p.next()
		right, err := p.parseLabelFilterAnd()
		if err != nil {
			return nil, err
		}
		left = &BinaryLabelFilter{Left: left, Right: right}
	}
	return left, nil
}

func (p *parser) parseLabelFilterAnd() (LabelFilter, error) {
	left, err := p.parseLabelFilterPrimary()
	if err != nil {
		return nil, err
	}
	for chain := 1; p.isIdent("and") || (p.isOp(",") && p.peekN(1).kind == tIdent); chain++ {
		if p.depth+chain > maxParseDepth {
			return nil, p.errAt(p.peek(), "expression nested too deeply")
		}
		p.next()
		right, err := p.parseLabelFilterPrimary()
		if err != nil {
			return nil, err
		}
		left = &BinaryLabelFilter{And: true, Left: left, Right: right}
	}
	return left, nil
}

func (p *parser) parseLabelFilterPrimary() (LabelFilter, error) {
	if p.isOp("(") {
		p.next()
		f, err := p.parseLabelFilter()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return f, nil
	}
	name, err := p.expectIdent()
	if err != nil {
		return nil, err
	}
	opTok := p.next()
	if opTok.kind != tOp {
		p.i--
		return nil, p.unexpected("comparison operator")
	}
	op := opTok.text
	vt := p.peek()
	if vt.kind == tString {
		p.next()
		if op == "==" {
			op = "=" // a string comparison: == is =
		}
		mt, ok := matchType(op)
		if !ok {
			return nil, p.errAt(opTok, "syntax error: operator %s needs a number, duration or bytes value", op)
		}
		m, merr := labels.NewMatcher(mt, name, vt.text)
		if merr != nil {
			return nil, p.errAt(vt, "invalid regular expression %s: %v", quote(vt.text), merr)
		}
		return &StringLabelFilter{Matcher: m}, nil
	}
	switch op {
	case "=", "==", "!=", ">", ">=", "<", "<=":
	default:
		p.i--
		return nil, p.unexpected("comparison operator")
	}
	if op == "=" {
		op = "=="
	}
	neg := ""
	if p.isOp("-") {
		p.next()
		neg = "-"
	}
	nt := p.peek()
	if nt.kind != tNumber {
		return nil, p.unexpected("string, number, duration or bytes")
	}
	p.next()
	raw := neg + nt.text
	f := &NumericLabelFilter{Name: name, Op: op, Raw: raw}
	if v, err := strconv.ParseFloat(raw, 64); err == nil && !math.IsInf(v, 0) {
		f.Kind, f.Value = "number", v
	} else if d, err := parseDuration(raw); err == nil {
		f.Kind, f.Value = "duration", d.Seconds()
	} else if b, err := parseBytes(raw); err == nil {
		f.Kind, f.Value = "bytes", float64(b)
	} else {
		return nil, p.errAt(nt, "syntax error: invalid number, duration or bytes %s", quote(raw))
	}
	return f, nil
}

func parseDuration(s string) (time.Duration, error) {
	neg := strings.HasPrefix(s, "-")
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	d, err := model.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil {
		return 0, err
	}
	if neg {
		return -time.Duration(d), nil
	}
	return time.Duration(d), nil
}

// ---- unwrap and ranges ----

func (p *parser) parseUnwrap() (*UnwrapExpr, error) {
	p.next() // unwrap
	name, err := p.expectIdent()
	if err != nil {
		return nil, err
	}
	u := &UnwrapExpr{Label: name}
	if p.isOp("(") {
		switch name {
		case "duration", "duration_seconds", "bytes":
		default:
			return nil, p.errAt(p.peek(), "syntax error: unknown unwrap conversion %s", name)
		}
		p.next()
		l, err := p.expectIdent()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		u.Conv, u.Label = name, l
	}
	return u, nil
}

func (p *parser) parseRangeDuration() (time.Duration, error) {
	if err := p.expectOp("["); err != nil {
		return 0, err
	}
	t := p.peek()
	if t.kind != tNumber {
		return 0, p.unexpected("duration")
	}
	p.next()
	d, err := parseDuration(t.text)
	if err != nil || d <= 0 {
		return 0, p.errAt(t, "syntax error: invalid range duration %s", quote(t.text))
	}
	if err := p.expectOp("]"); err != nil {
		return 0, err
	}
	return d, nil
}

func (p *parser) parseOffset(r *LogRangeExpr) error {
	if !p.isIdent("offset") {
		return nil
	}
	p.next()
	neg := false
	if p.isOp("-") {
		p.next()
		neg = true
	}
	t := p.peek()
	if t.kind != tNumber {
		return p.unexpected("duration")
	}
	p.next()
	d, err := parseDuration(t.text)
	if err != nil {
		return p.errAt(t, "syntax error: invalid offset %s", quote(t.text))
	}
	if neg {
		d = -d
	}
	r.Offset = d
	return nil
}

// parseLogRange parses the argument of a range aggregation.
func (p *parser) parseLogRange() (*LogRangeExpr, error) {
	r := &LogRangeExpr{}
	if p.isOp("(") {
		p.depth++
		if p.depth > maxParseDepth {
			return nil, p.errAt(p.peek(), "expression nested too deeply")
		}
		p.next()
		inner, err := p.parseLogRange0(true)
		p.depth--
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		r = inner
		if r.Range == 0 {
			d, err := p.parseRangeDuration()
			if err != nil {
				return nil, err
			}
			r.Range = d
			if err := p.parseOffset(r); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	return p.parseLogRange0(false)
}

func (p *parser) parseLogRange0(inParens bool) (*LogRangeExpr, error) {
	if p.isOp("(") {
		return p.parseLogRange()
	}
	ms, err := p.parseMatchers()
	if err != nil {
		return nil, err
	}
	r := &LogRangeExpr{Left: &LogSelectorExpr{Matchers: ms}}
	if p.isOp("[") {
		if r.Range, err = p.parseRangeDuration(); err != nil {
			return nil, err
		}
		if err := p.parseOffset(r); err != nil {
			return nil, err
		}
	}
	if err := p.parsePipeline(r.Left, &r.Unwrap); err != nil {
		return nil, err
	}
	if r.Range == 0 && p.isOp("[") {
		if r.Range, err = p.parseRangeDuration(); err != nil {
			return nil, err
		}
		if err := p.parseOffset(r); err != nil {
			return nil, err
		}
	}
	if r.Range == 0 && !inParens {
		return nil, p.unexpected("range")
	}
	return r, nil
}
