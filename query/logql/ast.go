package logql

import (
	"strconv"
	"strings"
	"time"

	"github.com/grafana/regexp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// Expr is a parsed LogQL expression. String returns its canonical form,
// which parses back to an equal expression.
type Expr interface {
	String() string
	isExpr()
}

// SampleExpr is a metric expression (its value is a vector or a scalar).
type SampleExpr interface {
	Expr
	isSample()
}

// LogSelectorExpr is a stream selector followed by a log pipeline.
type LogSelectorExpr struct {
	Matchers []*labels.Matcher
	Stages   []Stage
}

// Stage is one stage of a log pipeline.
type Stage interface {
	String() string
	isStage()
}

// LineFilterStage is `|= "a" or "b"` and friends (|= != |~ !~ |> !>).
type LineFilterStage struct {
	Op     string
	Values []string
	res    []*regexp.Regexp // |~ !~
	pats   []*pattern       // |> !>
}

// ParserStage is json, logfmt, regexp, pattern or unpack.
type ParserStage struct {
	Kind      string // "json", "logfmt", "regexp", "pattern", "unpack"
	Param     string // regexp or pattern text
	Exprs     []LabelExtraction
	Strict    bool // logfmt --strict
	KeepEmpty bool // logfmt --keep-empty
	re        *regexp.Regexp
	names     []string // sanitized names of re's groups
	pat       *pattern
	paths     [][]jsonPathElem
	// need, when set by the engine for one query, lists the only labels
	// the rest of the query reads, so that the parser skips the others.
	need map[string]bool
}

// LabelExtraction is `name="expression"` of json and logfmt.
type LabelExtraction struct {
	Name, Expr string
	Short      bool // written as a bare identifier
}

// LabelFilterStage is `| <label filter expression>`.
type LabelFilterStage struct{ Filter LabelFilter }

// LineFormatStage is `| line_format "template"`.
type LineFormatStage struct {
	Template string
	tmpl     *tmplHolder
}

// LabelFormatStage is `| label_format dst=src, dst="template"`.
type LabelFormatStage struct{ Ops []LabelFormatOp }

// LabelFormatOp renames Src to Dst, or sets Dst from a template.
type LabelFormatOp struct {
	Dst, Src string
	IsTmpl   bool
	tmpl     *tmplHolder
}

// DropStage is `| drop a, b="v"`; KeepStage is `| keep a, b="v"`.
type DropStage struct{ Labels []NamedMatcher }

// KeepStage keeps only the named labels.
type KeepStage struct{ Labels []NamedMatcher }

// NamedMatcher is a bare label name (Matcher nil) or a name with a value condition.
type NamedMatcher struct {
	Name    string
	Matcher *labels.Matcher
}

// DecolorizeStage strips ANSI color sequences from the line.
type DecolorizeStage struct{}

// LabelFilter is a boolean expression over labels.
type LabelFilter interface {
	String() string
	isLabelFilter()
}

// BinaryLabelFilter is `a and b` (also `a, b`) or `a or b`.
type BinaryLabelFilter struct {
	And         bool
	Left, Right LabelFilter
}

// StringLabelFilter compares a label with a string (= != =~ !~).
type StringLabelFilter struct{ Matcher *labels.Matcher }

// NumericLabelFilter compares a label with a number, duration or bytes literal.
type NumericLabelFilter struct {
	Name  string
	Op    string // == != > >= < <=
	Kind  string // "number", "duration", "bytes"
	Raw   string // literal as written
	Value float64
}

// UnwrapExpr is `| unwrap x`, `| unwrap duration(x)`, `| unwrap bytes(x)`.
type UnwrapExpr struct {
	Label   string
	Conv    string // "", "duration", "duration_seconds", "bytes"
	Filters []LabelFilter
}

// LogRangeExpr is a log selector over a range: `{...} | ... [5m] offset 1h`.
type LogRangeExpr struct {
	Left   *LogSelectorExpr
	Unwrap *UnwrapExpr
	Range  time.Duration
	Offset time.Duration
}

// Grouping is `by (...)` or `without (...)`.
type Grouping struct {
	Without bool
	Labels  []string
}

// RangeAggExpr is count_over_time(...), rate(...), quantile_over_time(q, ...) ...
type RangeAggExpr struct {
	Op       string
	Param    float64 // quantile_over_time
	Left     *LogRangeExpr
	Grouping *Grouping
}

// VectorAggExpr is sum/avg/min/max/count/stddev/stdvar/topk/bottomk/sort/sort_desc.
type VectorAggExpr struct {
	Op       string
	Param    float64 // topk, bottomk
	Grouping *Grouping
	Expr     SampleExpr
}

// VectorMatching is on/ignoring and group_left/group_right of a binary operation.
type VectorMatching struct {
	On         bool
	Ignoring   bool
	Labels     []string
	GroupLeft  bool
	GroupRight bool
	Include    []string
}

// BinOpExpr is a binary operation between two metric expressions.
type BinOpExpr struct {
	Op         string
	LHS, RHS   SampleExpr
	ReturnBool bool
	Matching   *VectorMatching
}

// LiteralExpr is a number.
type LiteralExpr struct{ Val float64 }

// VectorExpr is vector(x).
type VectorExpr struct{ Val float64 }

// LabelReplaceExpr is label_replace(v, dst, replacement, src, regex).
type LabelReplaceExpr struct {
	Left                  SampleExpr
	Dst, Repl, Src, Regex string
	re                    *regexp.Regexp
}

func (*LogSelectorExpr) isExpr()  {}
func (*RangeAggExpr) isExpr()     {}
func (*VectorAggExpr) isExpr()    {}
func (*BinOpExpr) isExpr()        {}
func (*LiteralExpr) isExpr()      {}
func (*VectorExpr) isExpr()       {}
func (*LabelReplaceExpr) isExpr() {}

func (*RangeAggExpr) isSample()     {}
func (*VectorAggExpr) isSample()    {}
func (*BinOpExpr) isSample()        {}
func (*LiteralExpr) isSample()      {}
func (*VectorExpr) isSample()       {}
func (*LabelReplaceExpr) isSample() {}

func (*LineFilterStage) isStage()  {}
func (*ParserStage) isStage()      {}
func (*LabelFilterStage) isStage() {}
func (*LineFormatStage) isStage()  {}
func (*LabelFormatStage) isStage() {}
func (*DropStage) isStage()        {}
func (*KeepStage) isStage()        {}
func (*DecolorizeStage) isStage()  {}

func (*BinaryLabelFilter) isLabelFilter()  {}
func (*StringLabelFilter) isLabelFilter()  {}
func (*NumericLabelFilter) isLabelFilter() {}

func quote(s string) string { return strconv.Quote(s) }

func matcherString(m *labels.Matcher) string {
	return m.Name + m.Type.String() + quote(m.Value)
}

func (e *LogSelectorExpr) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range e.Matchers {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(matcherString(m))
	}
	b.WriteByte('}')
	for _, s := range e.Stages {
		b.WriteByte(' ')
		b.WriteString(s.String())
	}
	return b.String()
}

func (s *LineFilterStage) String() string {
	parts := make([]string, len(s.Values))
	for i, v := range s.Values {
		parts[i] = quote(v)
	}
	return s.Op + " " + strings.Join(parts, " or ")
}

func (s *ParserStage) String() string {
	var b strings.Builder
	b.WriteString("| ")
	b.WriteString(s.Kind)
	if s.Strict {
		b.WriteString(" --strict")
	}
	if s.KeepEmpty {
		b.WriteString(" --keep-empty")
	}
	if s.Kind == "regexp" || s.Kind == "pattern" {
		b.WriteByte(' ')
		b.WriteString(quote(s.Param))
	}
	for i, e := range s.Exprs {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
		if e.Short {
			b.WriteString(e.Name)
		} else {
			b.WriteString(e.Name + "=" + quote(e.Expr))
		}
	}
	return b.String()
}

func (s *LabelFilterStage) String() string { return "| " + s.Filter.String() }
func (s *LineFormatStage) String() string  { return "| line_format " + quote(s.Template) }

func (s *LabelFormatStage) String() string {
	parts := make([]string, len(s.Ops))
	for i, op := range s.Ops {
		if op.IsTmpl {
			parts[i] = op.Dst + "=" + quote(op.Src)
		} else {
			parts[i] = op.Dst + "=" + op.Src
		}
	}
	return "| label_format " + strings.Join(parts, ", ")
}

func namedMatchersString(ms []NamedMatcher) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		if m.Matcher == nil {
			parts[i] = m.Name
		} else {
			parts[i] = matcherString(m.Matcher)
		}
	}
	return strings.Join(parts, ", ")
}

func (s *DropStage) String() string       { return "| drop " + namedMatchersString(s.Labels) }
func (s *KeepStage) String() string       { return "| keep " + namedMatchersString(s.Labels) }
func (s *DecolorizeStage) String() string { return "| decolorize" }

func (f *BinaryLabelFilter) String() string {
	op := " or "
	if f.And {
		op = " and "
	}
	return labelFilterOperand(f.Left) + op + labelFilterOperand(f.Right)
}

func labelFilterOperand(f LabelFilter) string {
	if _, ok := f.(*BinaryLabelFilter); ok {
		return "(" + f.String() + ")"
	}
	return f.String()
}

func (f *StringLabelFilter) String() string  { return matcherString(f.Matcher) }
func (f *NumericLabelFilter) String() string { return f.Name + f.Op + f.Raw }

func (u *UnwrapExpr) String() string {
	s := "| unwrap "
	if u.Conv != "" {
		s += u.Conv + "(" + u.Label + ")"
	} else {
		s += u.Label
	}
	for _, f := range u.Filters {
		s += " | " + f.String()
	}
	return s
}

func formatDuration(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return model.Duration(d).String()
	}
	return d.String()
}

func (r *LogRangeExpr) String() string {
	s := r.Left.String()
	if r.Unwrap != nil {
		s += " " + r.Unwrap.String()
	}
	s += " [" + formatDuration(r.Range) + "]"
	if r.Offset != 0 {
		s += " offset " + formatDuration(r.Offset)
	}
	return s
}

func (g *Grouping) String() string {
	kw := "by"
	if g.Without {
		kw = "without"
	}
	return kw + " (" + strings.Join(g.Labels, ", ") + ")"
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (e *RangeAggExpr) String() string {
	s := e.Op + "("
	if e.Op == "quantile_over_time" {
		s += formatFloat(e.Param) + ", "
	}
	s += e.Left.String() + ")"
	if e.Grouping != nil {
		s += " " + e.Grouping.String()
	}
	return s
}

func (e *VectorAggExpr) String() string {
	s := e.Op
	if e.Grouping != nil {
		s += " " + e.Grouping.String() + " "
	}
	s += "("
	if e.Op == "topk" || e.Op == "bottomk" {
		s += formatFloat(e.Param) + ", "
	}
	return s + e.Expr.String() + ")"
}

func (e *BinOpExpr) String() string {
	s := binOperand(e.LHS) + " " + e.Op
	if e.ReturnBool {
		s += " bool"
	}
	if m := e.Matching; m != nil {
		if m.On {
			s += " on (" + strings.Join(m.Labels, ", ") + ")"
		} else if m.Ignoring {
			s += " ignoring (" + strings.Join(m.Labels, ", ") + ")"
		}
		if m.GroupLeft {
			s += " group_left (" + strings.Join(m.Include, ", ") + ")"
		} else if m.GroupRight {
			s += " group_right (" + strings.Join(m.Include, ", ") + ")"
		}
	}
	return s + " " + binOperand(e.RHS)
}

func binOperand(e SampleExpr) string {
	if _, ok := e.(*BinOpExpr); ok {
		return "(" + e.String() + ")"
	}
	return e.String()
}

func (e *LiteralExpr) String() string { return formatFloat(e.Val) }
func (e *VectorExpr) String() string  { return "vector(" + formatFloat(e.Val) + ")" }

func (e *LabelReplaceExpr) String() string {
	return "label_replace(" + e.Left.String() + ", " + quote(e.Dst) + ", " + quote(e.Repl) + ", " + quote(e.Src) + ", " + quote(e.Regex) + ")"
}
