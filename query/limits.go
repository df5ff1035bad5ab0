package query

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
)

// Limits are one query's limits, carried by its context (WithLimits): the
// caller that knows whose query it is (the HTTP API, per tenant) sets them
// per request, and the engine built by NewEngine enforces them. The zero
// value limits nothing.
type Limits struct {
	// MaxSamplesRead bounds the samples the query reads from storage, all
	// its selectors together (Prometheus' query-cost max_samples_read);
	// past it the query fails with promql.ErrTooManySamplesRead, which the
	// Prometheus HTTP API answers 422, errorType "execution". 0: no bound.
	MaxSamplesRead int
	// Refused, when set, replaces the error of a query refused by
	// MaxSamplesRead (Prometheus' names no limit), so that the caller can
	// name the limit, its value and how to raise it, and count it.
	Refused func(err error) error
}

// limitsKey carries the Limits of WithLimits.
type limitsKey struct{}

// WithLimits returns ctx carrying l for the queries created with it.
func WithLimits(ctx context.Context, l Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, l)
}

func limitsOf(ctx context.Context) Limits {
	l, _ := ctx.Value(limitsKey{}).(Limits)
	return l
}

// bounded reports whether l limits anything.
func (l Limits) bounded() bool { return l.MaxSamplesRead > 0 }

// QueryLimits enforces the Limits of a query's context (WithLimits) on
// Prometheus' engine, with its query-cost budget (NewPrometheusEngine turns
// the feature on, with no server-wide ceilings). It must be the
// optimization next to Prometheus' engine: the engine's budget counts what
// the engine reads, so the optimizations that read for it (aggregation
// pushdown) step aside for a bounded query.
func QueryLimits() Optimization {
	return Optimization{Name: "query_limits", wrap: func(e promql.QueryEngine) promql.QueryEngine {
		return limitsEngine{QueryEngine: e}
	}}
}

type limitsEngine struct {
	promql.QueryEngine
}

func (e limitsEngine) NewInstantQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, ts time.Time) (promql.Query, error) {
	l := limitsOf(ctx)
	if !l.bounded() {
		return e.QueryEngine.NewInstantQuery(ctx, q, opts, qs, ts)
	}
	qry, err := e.QueryEngine.NewInstantQuery(ctx, q, l.queryOpts(opts), qs, ts)
	if err != nil {
		return nil, err
	}
	return limitedQuery{Query: qry, refused: l.Refused}, nil
}

func (e limitsEngine) NewRangeQuery(ctx context.Context, q storage.Queryable, opts promql.QueryOpts, qs string, start, end time.Time, interval time.Duration) (promql.Query, error) {
	l := limitsOf(ctx)
	if !l.bounded() {
		return e.QueryEngine.NewRangeQuery(ctx, q, opts, qs, start, end, interval)
	}
	qry, err := e.QueryEngine.NewRangeQuery(ctx, q, l.queryOpts(opts), qs, start, end, interval)
	if err != nil {
		return nil, err
	}
	return limitedQuery{Query: qry, refused: l.Refused}, nil
}

// queryOpts returns opts (nil: the defaults) with l's limits, the lower
// where opts has its own.
func (l Limits) queryOpts(opts promql.QueryOpts) promql.QueryOpts {
	var (
		stepStats bool
		lookback  time.Duration
		startTS   *bool
		maxSeries uint64
		duration  time.Duration
	)
	samples := uint64(l.MaxSamplesRead)
	if opts != nil {
		stepStats, lookback, startTS = opts.EnablePerStepStats(), opts.LookbackDelta(), opts.UseStartTimestamps()
	}
	if c, ok := opts.(promql.QueryCostOpts); ok {
		maxSeries, duration = c.MaxSeries(), c.MaxQueryDuration()
		if s := c.MaxSamplesRead(); s > 0 {
			samples = min(samples, s)
		}
	}
	return promql.NewPrometheusQueryOptsWithLimits(stepStats, lookback, maxSeries, samples, duration, startTS)
}

// limitedQuery is a query under Limits: Exec replaces the error of a
// refusal with Limits.Refused's.
type limitedQuery struct {
	promql.Query
	refused func(error) error
}

func (q limitedQuery) Exec(ctx context.Context) *promql.Result {
	res := q.Query.Exec(ctx)
	var tooMany promql.ErrTooManySamplesRead
	if res.Err != nil && q.refused != nil && errors.As(res.Err, &tooMany) {
		res.Err = q.refused(res.Err)
	}
	return res
}
