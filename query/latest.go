package query

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// LatestSampleEngine wraps engine so that an instant query gets its
// queryable through wrap when the engine reads, of each series an instant
// selector of the query selects, only the latest sample at or before the
// selector's evaluation time. weft's server passes
// storage.LatestSampleQueryable, which may then skip reading chunks. That
// holds for plain selectors; a smoothed selector also reads the sample after
// the evaluation time and an anchored one the sample before its range, so a
// query with either, or one p cannot parse, keeps q as it is. Range queries
// are passed through. p must parse like the engine's parser.
func LatestSampleEngine(engine promql.QueryEngine, p parser.Parser, wrap func(storage.Queryable) storage.Queryable) promql.QueryEngine {
	return latestSampleEngine{QueryEngine: engine, p: p, wrap: wrap}
}

type latestSampleEngine struct {
	promql.QueryEngine
	p    parser.Parser
	wrap func(storage.Queryable) storage.Queryable
}

func (e latestSampleEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	if plainSelectors(e.p, qs) {
		q = e.wrap(q)
	}
	return e.QueryEngine.NewInstantQuery(ctx, q, opts, qs, ts)
}

// plainSelectors reports whether qs parses and none of its vector selectors
// is smoothed or anchored.
func plainSelectors(p parser.Parser, qs string) bool {
	expr, err := p.ParseExpr(qs)
	if err != nil || expr == nil {
		return false
	}
	plain := true
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && (vs.Smoothed || vs.Anchored) {
			plain = false
		}
		return nil
	})
	return plain
}
