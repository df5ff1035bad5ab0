package query

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"
)

// DefaultMaxQueryDepth bounds how deeply a PromQL query may nest before it
// reaches Prometheus' parser. That parser's time grows with the square of
// the nesting (measured here on v0.316: 1,000 levels of parentheses,
// function calls or a chain of `+` parse in 2–9 ms, 16,000 in 0.1–0.7 s,
// and 100,000 would take about half a minute), and the engine then walks
// the tree recursively. Queries people write or Grafana generates nest a
// few dozen levels; 1,000 leaves them all room and keeps a refused parse
// under 10 ms.
const DefaultMaxQueryDepth = 1000

// ErrQueryTooDeep matches (errors.Is) the parse error of a query that
// nests deeper than the limit.
var ErrQueryTooDeep = errors.New("query is nested too deeply")

// CheckDepth reports, as a parse error, a query whose tree would be more
// than max levels deep. The depth is bounded in one linear pass, without
// parsing: every bracket ( [ { opens a level whose content hangs one
// below it; on each level, the operators (+ - * / % ^, comparisons, and,
// or, unless, atan2, and a postfix [...]) can each put an operand one
// deeper, so a level is at most as deep as its deepest operand plus its
// operators. String literals (with escapes, and raw `...`) and # comments
// are skipped; inside { } only brackets count. A query that does not lex
// is left for the parser to report.
func CheckDepth(q string, max int) error {
	if d := treeDepth(q, max); d > max {
		return &DepthError{parser.ParseErr{
			PositionRange: posrange.PositionRange{Start: 0, End: posrange.Pos(len(q))},
			Err:           fmt.Errorf("%w: its tree would be more than %d levels deep (parentheses, brackets and operators)", ErrQueryTooDeep, max),
			Query:         q,
		}}
	}
	return nil
}

// DepthError is CheckDepth's error: a parse error (printed as Prometheus
// prints them) that matches ErrQueryTooDeep.
type DepthError struct{ parser.ParseErr }

// Unwrap returns the cause, which matches ErrQueryTooDeep.
func (e *DepthError) Unwrap() error { return e.Err }

// treeDepth returns an upper bound of the depth of the tree that
// Prometheus' parser builds from q (see CheckDepth), in time linear in
// len(q). Once the bound is sure to exceed stopAt it returns a value above
// stopAt at once, so that its stack of levels stays within stopAt.
func treeDepth(q string, stopAt int) int {
	type level struct {
		open     byte // the bracket
		deepest  int  // the deepest operand on this level
		ops      int  // operators on this level
		operands bool // an operand came last: a [ that follows is postfix
	}
	levels := []level{{}}
	braces := 0 // open { among levels: matchers, no operators
	// sure is a lower bound of the result: every open level hangs one
	// below its parent, below the parent's operators.
	sumOps := 0 // operators on the open levels
	sure := func() int { return sumOps + len(levels) - 1 }
	leaf := func() {
		l := &levels[len(levels)-1]
		l.deepest = max(l.deepest, 1)
		l.operands = true
	}
	closeLevel := func() {
		n := len(levels)
		h := levels[n-1].deepest + levels[n-1].ops
		if levels[n-1].open == '{' {
			braces--
		}
		sumOps -= levels[n-1].ops
		levels = levels[:n-1]
		p := &levels[n-2]
		p.deepest = max(p.deepest, h+1)
		p.operands = true
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch c {
		case '"', '\'', '`':
			j := i + 1
			for j < len(q) && q[j] != c {
				if q[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			i = j
			leaf()
		case '#':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case '(', '[', '{':
			if c == '[' && braces == 0 && levels[len(levels)-1].operands {
				levels[len(levels)-1].ops++ // subquery or range: a node above the operand
				sumOps++
			}
			levels = append(levels, level{open: c})
			if c == '{' {
				braces++
			}
		case ')', ']', '}':
			if len(levels) > 1 {
				closeLevel()
				if d := levels[len(levels)-1].deepest + sure(); d > stopAt {
					return d
				}
			}
		case ' ', '\t', '\n', '\r', ',', '@', '.':
		default:
			switch op := isOperator(q, &i); {
			case op && braces == 0:
				l := &levels[len(levels)-1]
				l.ops++
				l.operands = false
				sumOps++
			case !op:
				leaf()
			}
		}
		if d := sure(); d > stopAt {
			return d
		}
	}
	for len(levels) > 1 {
		closeLevel()
	}
	return levels[0].deepest + levels[0].ops
}

// isOperator reports whether a binary or unary operator starts at q[*i],
// and moves *i to its last byte: + - * / % ^ < > == != >= <= (one each;
// =~ and !~ only appear in matchers) and the keywords and, or, unless,
// atan2 (case-insensitive, as Prometheus' lexer reads keywords).
// Identifiers are skipped whole.
func isOperator(q string, i *int) bool {
	c := q[*i]
	switch c {
	case '+', '-', '*', '/', '%', '^', '<', '>':
		return true
	case '=', '!':
		if *i+1 < len(q) && q[*i+1] == '=' {
			*i++
			return true
		}
		return false
	}
	if !isIdentStart(c) {
		return false
	}
	j := *i + 1
	for j < len(q) && isIdentByte(q[j]) {
		j++
	}
	w := q[*i:j]
	*i = j - 1
	return isOperatorWord(w)
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// isOperatorWord reports PromQL's keyword operators (case-insensitive, as
// Prometheus' lexer reads keywords).
func isOperatorWord(w string) bool {
	for _, k := range [...]string{"or", "and", "unless", "atan2"} {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// LimitDepth returns p behind CheckDepth: expressions and selectors that
// nest deeper than max are refused before p parses them. Safe for
// concurrent use when p is.
func LimitDepth(p parser.Parser, max int) parser.Parser {
	return depthLimited{Parser: p, max: max}
}

type depthLimited struct {
	parser.Parser
	max int
}

func (p depthLimited) ParseExpr(q string) (parser.Expr, error) {
	if err := CheckDepth(q, p.max); err != nil {
		return nil, err
	}
	return p.Parser.ParseExpr(q)
}

func (p depthLimited) ParseMetricSelector(q string) ([]*labels.Matcher, error) {
	if err := CheckDepth(q, p.max); err != nil {
		return nil, err
	}
	return p.Parser.ParseMetricSelector(q)
}

func (p depthLimited) ParseMetricSelectors(qs []string) ([][]*labels.Matcher, error) {
	for _, q := range qs {
		if err := CheckDepth(q, p.max); err != nil {
			return nil, err
		}
	}
	return p.Parser.ParseMetricSelectors(qs)
}
