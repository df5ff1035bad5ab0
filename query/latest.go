package query

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// LatestSampleEngine wraps engine so that an instant query reads through
// wrap(q) when the engine reads, of each series an instant selector of the
// query selects, only the latest sample at or before the selector's
// evaluation time. weft's server passes storage.LatestSampleQueryable, which
// may then skip reading chunks. That holds for plain selectors; a smoothed
// selector also reads the sample after the evaluation time and an anchored
// one the sample before its range, so a query with either keeps q as it is.
// The decision looks at the statement the engine parsed, so it cannot
// disagree with the engine's parser. Range queries are passed through.
func LatestSampleEngine(engine promql.QueryEngine, wrap func(storage.Queryable) storage.Queryable) promql.QueryEngine {
	return latestSampleEngine{QueryEngine: engine, wrap: wrap}
}

type latestSampleEngine struct {
	promql.QueryEngine
	wrap func(storage.Queryable) storage.Queryable
}

func (e latestSampleEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	sq := &switchQueryable{plain: q, latest: e.wrap(q)}
	qry, err := e.QueryEngine.NewInstantQuery(ctx, sq, opts, qs, ts)
	if err != nil {
		return nil, err
	}
	// Queriers are opened by Exec, which the caller runs after this returns.
	if st, ok := qry.Statement().(*parser.EvalStmt); ok {
		sq.useLatest = plainSelectors(st.Expr)
	}
	return qry, nil
}

// switchQueryable opens its queriers from latest or plain, as decided once
// the query is parsed and before it runs.
type switchQueryable struct {
	plain, latest storage.Queryable
	useLatest     bool // set by NewInstantQuery before Exec
}

func (q *switchQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	if q.useLatest {
		return q.latest.Querier(mint, maxt)
	}
	return q.plain.Querier(mint, maxt)
}

// plainSelectors reports whether none of expr's vector selectors is
// smoothed or anchored.
func plainSelectors(expr parser.Expr) bool {
	plain := true
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && (vs.Smoothed || vs.Anchored) {
			plain = false
		}
		return nil
	})
	return plain
}
