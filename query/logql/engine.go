package logql

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// Defaults of EngineOptions, the ones a default Loki server uses.
const (
	// DefaultMaxEntriesLimit is Loki's max_entries_limit_per_query.
	DefaultMaxEntriesLimit = 5000
	// DefaultQueryTimeout is Loki's query_timeout.
	DefaultQueryTimeout = time.Minute
	// DefaultMaxSeries bounds the series one metric query may produce
	// (Loki's max_query_series).
	DefaultMaxSeries = 500
	// DefaultMaxQueryMemory bounds the memory one query holds (weft's own
	// limit; Loki has none that bounds a querier's memory). 1 GiB holds
	// Loki's own worst legal log query, 5,000 entries of 256 KiB lines
	// with their labels, or 60 million samples.
	DefaultMaxQueryMemory = 1 << 30
	// DefaultMaxTemplateBytes bounds what one line_format or label_format
	// template builds for one entry: 16 times Loki's max_line_size, so any
	// stored line passes through several template functions.
	DefaultMaxTemplateBytes = 4 << 20
)

// EngineOptions configures an Engine.
type EngineOptions struct {
	// Logger receives the engine's own log lines; nil means none.
	Logger *slog.Logger
	// MaxLookback bounds how far before now a query may read (Loki's
	// max_query_lookback): data older than now-MaxLookback is not selected.
	// 0 (the default) means no bound.
	MaxLookback time.Duration
	// Now returns the current time for MaxLookback; nil means time.Now.
	Now func() time.Time
	// MaxEntriesLimit bounds the Limit of a log query; default DefaultMaxEntriesLimit.
	MaxEntriesLimit int
	// Timeout bounds one query; default DefaultQueryTimeout.
	Timeout time.Duration
	// MaxSeries bounds the series of one metric query result (Loki's
	// max_query_series); 0 means no bound.
	MaxSeries int
	// MaxQueryBytesRead bounds the bytes of log lines one query may read
	// (Loki's max_query_bytes_read); the query fails once it has read more.
	// 0 (the default, as in Loki) means no bound.
	MaxQueryBytesRead int64
	// MaxQueryMemory bounds the estimated bytes one query holds at once:
	// the entries a log query keeps (lines and labels), and the series,
	// label sets, samples and per-step values a metric query builds.
	// Default DefaultMaxQueryMemory; negative means no bound.
	MaxQueryMemory int64
	// MaxTemplateBytes bounds what one line_format or label_format
	// template may build for one entry: its output and every string its
	// functions build on the way. Default DefaultMaxTemplateBytes; there
	// is no unbounded setting.
	MaxTemplateBytes int64
}

// DefaultEngineOptions returns the options of a default Loki server.
func DefaultEngineOptions() EngineOptions {
	return EngineOptions{
		MaxEntriesLimit:  DefaultMaxEntriesLimit,
		Timeout:          DefaultQueryTimeout,
		MaxSeries:        DefaultMaxSeries,
		MaxQueryMemory:   DefaultMaxQueryMemory,
		MaxTemplateBytes: DefaultMaxTemplateBytes,
	}
}

// ValueType is the type of a query result, as Loki's HTTP API names it.
type ValueType string

// Result types.
const (
	ValueTypeStreams ValueType = "streams"
	ValueTypeVector  ValueType = "vector"
	ValueTypeMatrix  ValueType = "matrix"
	ValueTypeScalar  ValueType = "scalar"
)

// QueryParams are the parameters of one query.
type QueryParams struct {
	Query      string
	Start, End int64         // unix ns; an instant query evaluates at End
	Step       time.Duration // metric range queries; 0 picks a default
	Interval   time.Duration // log range queries: return at most one entry per interval (0 = all)
	Direction  Direction
	Limit      int // log queries: max entries; 0 means MaxEntriesLimit
	Instant    bool
}

// Point is one value at a time (unix ns).
type Point struct {
	T int64
	V float64
}

// Sample is one element of an instant vector.
type Sample struct {
	Labels labels.Labels
	T      int64
	V      float64
}

// Series is one element of a range vector (matrix).
type Series struct {
	Labels labels.Labels
	Points []Point
}

// ResultEntry is one log line of a log query result.
type ResultEntry struct {
	Timestamp          int64
	Line               string
	StructuredMetadata labels.Labels // the entry's structured metadata (after the pipeline)
	Parsed             labels.Labels // labels the pipeline added (parsers, label_format, __error__)
}

// StreamResult is one stream of a log query result, grouped as Loki groups
// its classic response: by Labels, all labels of the entries (stream labels,
// structured metadata and parsed labels). StreamLabels are the stream labels
// alone (what the categorize-labels form groups by); Entries carry their own
// structured metadata and parsed labels.
type StreamResult struct {
	Labels       labels.Labels
	StreamLabels labels.Labels
	Entries      []ResultEntry
}

// Stats are the counters of one query.
type Stats struct {
	EntriesScanned int64 // entries read from the Source
	BytesScanned   int64 // bytes of their lines
	ExecTime       time.Duration
}

// Result is the answer to one query. Exactly one of Streams, Vector, Matrix
// and Scalar is set, according to Type.
type Result struct {
	Type    ValueType
	Streams []StreamResult
	Vector  []Sample
	Matrix  []Series
	Scalar  *Point
	Stats   Stats
}

// Errors of query evaluation; inspect with errors.Is. Parse errors are *ParseError.
var (
	// ErrLimitExceeded: a log query asked for more entries than MaxEntriesLimit.
	ErrLimitExceeded = errors.New("max entries limit per query exceeded")
	// ErrTooManySeries: a metric query produced more than MaxSeries series.
	ErrTooManySeries = errors.New("maximum number of series reached for a single query")
	// ErrBytesReadLimit: a query read more than MaxQueryBytesRead.
	ErrBytesReadLimit = errors.New("the query would read too many bytes")
	// ErrQueryMemory: a query would hold more than MaxQueryMemory.
	ErrQueryMemory = errors.New("query memory limit exceeded")
	// ErrTemplateLimit: a template built more than MaxTemplateBytes for one
	// entry, or ran too many range iterations.
	ErrTemplateLimit = errors.New("template limit exceeded")
	// ErrPipeline: a metric query's samples carry an __error__ label.
	ErrPipeline = errors.New("pipeline error")
	// ErrExecution: the query is valid but cannot be evaluated over this data
	// (many-to-many matching, duplicate label sets); a client error.
	ErrExecution = errors.New("execution error")
	// ErrInvalidParams: bad start/end/step.
	ErrInvalidParams = errors.New("invalid query parameters")
)

// Engine evaluates LogQL queries over a Source. Safe for concurrent use.
type Engine struct {
	src  Source
	opts EngineOptions
	log  *slog.Logger
}

// NewEngine returns an engine over src. Zero options take their defaults.
func NewEngine(src Source, opts EngineOptions) *Engine {
	d := DefaultEngineOptions()
	if opts.MaxEntriesLimit <= 0 {
		opts.MaxEntriesLimit = d.MaxEntriesLimit
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	if opts.MaxQueryMemory == 0 {
		opts.MaxQueryMemory = d.MaxQueryMemory
	}
	if opts.MaxTemplateBytes <= 0 {
		opts.MaxTemplateBytes = d.MaxTemplateBytes
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	return &Engine{src: src, opts: opts, log: lg}
}

// Query parses and evaluates one query.
func (e *Engine) Query(ctx context.Context, p QueryParams) (*Result, error) {
	start := time.Now()
	expr, err := ParseExpr(p.Query)
	if err != nil {
		return nil, err
	}
	if e.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.Timeout)
		defer cancel()
	}
	if p.Instant {
		p.Start = p.End
	}
	if p.End < p.Start {
		return nil, fmt.Errorf("%w: end timestamp must not be before start time", ErrInvalidParams)
	}
	setTemplateLimits(expr, e.opts.MaxTemplateBytes)
	ev := &evaluator{src: e.src, opts: &e.opts, params: p, mem: memBudget{limit: e.opts.MaxQueryMemory}}
	if e.opts.MaxLookback > 0 {
		now := time.Now
		if e.opts.Now != nil {
			now = e.opts.Now
		}
		ev.minTime = now().Add(-e.opts.MaxLookback).UnixNano()
	}
	res, err := ev.eval(ctx, expr)
	if err != nil {
		return nil, err
	}
	res.Stats = ev.stats
	res.Stats.ExecTime = time.Since(start)
	return res, nil
}
