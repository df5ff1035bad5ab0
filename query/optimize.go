package query

import (
	"github.com/prometheus/prometheus/promql"

	"github.com/weftdb/weft/storage"
)

// An Optimization wraps a PromQL engine so that it answers some queries
// faster, with the engine's results bit for bit; the rest it passes to the
// engine it wraps. weft's engine is Prometheus' engine with a list of them
// applied (EngineOptions.Optimizations), so the server and the conformance
// tests run exactly the same composition.
type Optimization struct {
	// Name says what the optimization does, for logs and test names.
	Name string
	wrap func(promql.QueryEngine) promql.QueryEngine
}

// LatestSampleSelects lets an instant query read, of each series a plain
// selector returns, only the latest sample where weft's head knows it
// (LatestSampleEngine over storage.LatestSampleQueryable).
func LatestSampleSelects() Optimization {
	return Optimization{Name: "latest_sample_selects", wrap: func(e promql.QueryEngine) promql.QueryEngine {
		return LatestSampleEngine(e, storage.LatestSampleQueryable)
	}}
}

// PushdownAggregations evaluates aggregations over a selector next to the
// storage (AggregationPushdown with opts).
func PushdownAggregations(opts PushdownOptions) Optimization {
	return Optimization{Name: "aggregation_pushdown", wrap: func(e promql.QueryEngine) promql.QueryEngine {
		return AggregationPushdown(e, opts)
	}}
}

// DefaultOptimizations is what the server runs with engine options opts:
// the per-query limits of a query's context next to Prometheus' engine,
// latest-sample selects, then aggregation pushdown over them (pushed-down
// instant aggregations read latest samples too), bounded by opts.Timeout.
func DefaultOptimizations(opts EngineOptions) []Optimization {
	return []Optimization{QueryLimits(), LatestSampleSelects(), PushdownAggregations(PushdownOptions{
		Timeout: opts.Timeout, DelayedNameRemoval: opts.DelayedNameRemoval, StartTimestamps: opts.StartTimestamps,
	})}
}

// Optimize applies opts to engine in order, the first innermost.
func Optimize(engine promql.QueryEngine, opts ...Optimization) promql.QueryEngine {
	for _, o := range opts {
		engine = o.wrap(engine)
	}
	return engine
}
