package ruler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/parser/posrange"

	"github.com/weftdb/weft/query/logql"
)

// LogQuerier evaluates LogQL queries; *logql.Engine implements it. Safe for
// concurrent use.
type LogQuerier interface {
	Query(ctx context.Context, p logql.QueryParams) (*logql.Result, error)
}

// errLogQLNotMetric: a LogQL rule's expression must produce samples.
var errLogQLNotMetric = errors.New("a LogQL rule expression must be a metric query (count_over_time, rate, sum by, ...), not a log query")

// logqlExpr carries a parsed LogQL metric expression through Prometheus'
// rules manager, which holds every rule's expression as a parser.Expr. The
// manager only prints it (String: rule files, the rules API, Equals on
// reload) and hands that string back to the QueryFunc; it never walks it,
// because the group's RuleDependencyController is a no-op (the default one
// would walk it with parser.Inspect, which panics on a node type it does not
// know). Immutable.
type logqlExpr struct {
	expr logql.SampleExpr
	text string // expr.String(): LogQL's canonical form, parsed back equal
}

func (x *logqlExpr) String() string         { return x.text }
func (x *logqlExpr) Pretty(int) string      { return x.text }
func (x *logqlExpr) Type() parser.ValueType { return parser.ValueTypeVector }
func (x *logqlExpr) PromQLExpr()            {}
func (x *logqlExpr) PositionRange() posrange.PositionRange {
	return posrange.PositionRange{Start: 0, End: posrange.Pos(len(x.text))}
}

// parseLogQLRule parses a LogQL rule expression.
func parseLogQLRule(q string) (*logqlExpr, error) {
	e, err := logql.ParseExpr(q)
	if err != nil {
		return nil, err
	}
	se, ok := e.(logql.SampleExpr)
	if !ok {
		return nil, errLogQLNotMetric
	}
	return &logqlExpr{expr: se, text: se.String()}, nil
}

// logqlParser is the parser.Parser rulefmt validates LogQL rule files with:
// expressions are LogQL, everything else (label names, series notation) is
// Prometheus'.
type logqlParser struct{ parser.Parser }

func (p logqlParser) ParseExpr(q string) (parser.Expr, error) {
	x, err := parseLogQLRule(q)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// isLogQL reports whether expr is a LogQL rule's expression.
func isLogQL(expr parser.Expr) bool {
	_, ok := expr.(*logqlExpr)
	return ok
}

// logqlQueryFunc evaluates a LogQL rule expression as an instant query at t
// and returns its samples at t, as the rules manager wants them. A scalar
// becomes one sample without labels, as rules.EngineQueryFunc does for
// PromQL.
func logqlQueryFunc(logs LogQuerier) func(ctx context.Context, q string, t time.Time) (promql.Vector, error) {
	return func(ctx context.Context, q string, t time.Time) (promql.Vector, error) {
		if logs == nil {
			return nil, errNoLogs
		}
		res, err := logs.Query(ctx, logql.QueryParams{Query: q, End: t.UnixNano(), Instant: true})
		if err != nil {
			return nil, err
		}
		ts := timestamp.FromTime(t)
		switch res.Type {
		case logql.ValueTypeVector:
			v := make(promql.Vector, 0, len(res.Vector))
			for _, s := range res.Vector {
				v = append(v, promql.Sample{Metric: s.Labels, T: ts, F: s.V})
			}
			return v, nil
		case logql.ValueTypeScalar:
			if res.Scalar == nil {
				return promql.Vector{}, nil
			}
			return promql.Vector{{Metric: labels.EmptyLabels(), T: ts, F: res.Scalar.V}}, nil
		default:
			return nil, fmt.Errorf("logql rule result is %s, not a vector or scalar", res.Type)
		}
	}
}
