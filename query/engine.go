package query

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// Defaults are the ones a Prometheus 3 server starts with, so that a PromQL
// query answers the same on weft as on Prometheus.
const (
	// DefaultLookbackDelta is how far back an instant selector looks for the
	// latest sample (Prometheus' --query.lookback-delta).
	DefaultLookbackDelta = 5 * time.Minute
	// DefaultTimeout bounds one query's evaluation (Prometheus' --query.timeout).
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxSamples bounds the samples one query may hold in memory at
	// once (Prometheus' --query.max-samples).
	DefaultMaxSamples = 50_000_000
	// DefaultSubqueryStep is the step of a subquery written without one
	// ("rate(x[5m])[1h:]"). Prometheus uses the global evaluation_interval,
	// whose default is one minute.
	DefaultSubqueryStep = time.Minute
	// DefaultMaxConcurrency is how many queries a Prometheus server runs at
	// once (--query.max-concurrency); further queries wait for a slot until
	// their timeout. Callers build the tracker that enforces it.
	DefaultMaxConcurrency = 20
)

// EngineOptions configures the PromQL engine.
type EngineOptions struct {
	// Logger receives the engine's own log lines; nil means none.
	Logger *slog.Logger
	// Registerer receives the engine's metrics (prometheus_engine_*); nil
	// means they are not registered.
	Registerer prometheus.Registerer
	// Timeout bounds one query; default DefaultTimeout.
	Timeout time.Duration
	// MaxSamples bounds the samples one query may load; default
	// DefaultMaxSamples.
	MaxSamples int
	// LookbackDelta is the instant-selector lookback; default
	// DefaultLookbackDelta.
	LookbackDelta time.Duration
	// SubqueryStep is the step of subqueries written without one; default
	// DefaultSubqueryStep.
	SubqueryStep time.Duration
	// ActiveQueryTracker bounds concurrent queries and records running ones
	// (promql.NewActiveQueryTracker); nil means unbounded. The caller owns
	// it and closes it after the last query.
	ActiveQueryTracker promql.QueryTracker
	// DelayedNameRemoval and StartTimestamps are Prometheus' feature flags
	// promql-delayed-name-removal and the use of start timestamps by
	// rate(), increase() and irate(); both off by default, as in a
	// Prometheus 3 server. The optimizations follow them.
	DelayedNameRemoval, StartTimestamps bool
	// Optimizations are applied to Prometheus' engine in order (the first
	// innermost); nil means DefaultOptimizations(opts), an empty non-nil
	// slice the plain engine.
	Optimizations []Optimization
}

// DefaultEngineOptions returns the options of a default Prometheus server.
func DefaultEngineOptions() EngineOptions {
	return EngineOptions{
		Timeout:       DefaultTimeout,
		MaxSamples:    DefaultMaxSamples,
		LookbackDelta: DefaultLookbackDelta,
		SubqueryStep:  DefaultSubqueryStep,
	}
}

// NewEngine returns weft's PromQL engine: Prometheus' engine configured like
// a Prometheus server (@ modifier and negative offsets enabled, lookback,
// timeout and sample limit from opts; zero fields take the defaults) with
// opts.Optimizations applied. The server and the conformance tests build
// their engines from the same list. The engine is safe for concurrent use
// and holds no resources that need closing.
func NewEngine(opts EngineOptions) promql.QueryEngine {
	opt := opts.Optimizations
	if opt == nil {
		opt = DefaultOptimizations(opts)
	}
	return Optimize(NewPrometheusEngine(opts), opt...)
}

// NewPrometheusEngine returns Prometheus' engine configured as NewEngine
// configures it, without weft's optimizations.
func NewPrometheusEngine(opts EngineOptions) *promql.Engine {
	def := DefaultEngineOptions()
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = def.MaxSamples
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = def.LookbackDelta
	}
	if opts.SubqueryStep <= 0 {
		opts.SubqueryStep = def.SubqueryStep
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	step := opts.SubqueryStep.Milliseconds()
	return promql.NewEngine(promql.EngineOpts{
		Logger:                   logger,
		Reg:                      opts.Registerer,
		MaxSamples:               opts.MaxSamples,
		Timeout:                  opts.Timeout,
		ActiveQueryTracker:       opts.ActiveQueryTracker,
		LookbackDelta:            opts.LookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return step },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		EnableDelayedNameRemoval: opts.DelayedNameRemoval,
		UseStartTimestamps:       opts.StartTimestamps,
		Parser:                   NewParser(),
		// The query-cost budget, with no server-wide ceilings, enforces
		// the per-query limits a query's context carries (QueryLimits).
		EnableQueryCost: true,
	})
}

// NewParser returns the PromQL parser weft uses everywhere (engine and HTTP
// API), with Prometheus' default options, behind LimitDepth with
// DefaultMaxQueryDepth.
func NewParser() parser.Parser {
	return LimitDepth(parser.NewParser(parser.Options{}), DefaultMaxQueryDepth)
}
