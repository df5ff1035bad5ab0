package investigate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// Index is the shared label index as investigate reads it
// (*index.Index). Times are unix milliseconds.
type Index interface {
	Postings(ctx context.Context, kind index.Kind, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error)
	Labels(id index.ID, b *labels.ScratchBuilder) (labels.Labels, bool)
	StreamKind(id index.ID) (index.Kind, bool)
}

// Logs is the log store as investigate reads it (*logstore.Store). Times
// are unix nanoseconds, [start, end).
type Logs interface {
	EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error
	Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error)
}

// LogWriter keeps incidents as log lines (*logstore.Store).
type LogWriter interface {
	Push(ctx context.Context, streams []logstore.PushStream) error
}

// Options configure an Investigator. Index is required; without Metrics
// no series is read (Investigate, Spread answer errors), without Logs no
// log volume or pattern is read.
type Options struct {
	Index   Index
	Metrics promstorage.Queryable
	// Engine evaluates a symptom given as a PromQL expression over
	// Metrics; nil: only selectors are accepted as symptoms.
	Engine promql.QueryEngine
	Logs   Logs
	// Incidents is where investigations and alerts are kept; nil keeps
	// none.
	Incidents LogWriter
	// Workload resolves aliases in selectors (ai_run_id → run_id); nil:
	// workload.MustDefault().
	Workload *workload.Mapping
	Logger   *slog.Logger

	// MaxSeries bounds the series one call reads (candidates of an
	// investigation, a spread). Default 50,000.
	MaxSeries int
	// Baseline is the window before a symptom's onset a series is
	// compared with. Default 20 minutes.
	Baseline time.Duration
	// Lead is how long before the symptom's onset a cause may begin.
	// Default 10 minutes.
	Lead time.Duration
	// Step is the resolution series are read at. Default 15 s.
	Step time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// DefaultOptions are the defaults of every field but the sources.
func DefaultOptions() Options {
	return Options{MaxSeries: 50_000, Baseline: 20 * time.Minute, Lead: 10 * time.Minute, Step: 15 * time.Second, Now: time.Now}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxSeries <= 0 {
		o.MaxSeries = d.MaxSeries
	}
	if o.Baseline <= 0 {
		o.Baseline = d.Baseline
	}
	if o.Lead <= 0 {
		o.Lead = d.Lead
	}
	if o.Step <= 0 {
		o.Step = d.Step
	}
	if o.Now == nil {
		o.Now = d.Now
	}
	if o.Workload == nil {
		o.Workload = workload.MustDefault()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Investigator answers the package's questions. Safe for concurrent use.
type Investigator struct {
	// opts' Index and Logs hide weft's own streams (ownHidingIndex); rawLogs is
	// the log store as given, where the incidents are read.
	opts    Options
	rawLogs Logs
}

// Errors. ErrInvalid wraps every error caused by the caller's input (the
// API answers 400 with it).
var (
	ErrInvalid     = errors.New("invalid request")
	ErrUnavailable = errors.New("not available")
	ErrTooMany     = errors.New("too many series")
)

// New returns an Investigator over opts' sources.
func New(opts Options) (*Investigator, error) {
	if opts.Index == nil {
		return nil, fmt.Errorf("investigate: %w: no index", ErrUnavailable)
	}
	opts = opts.withDefaults()
	iv := &Investigator{opts: opts, rawLogs: opts.Logs}
	iv.opts.Index = ownHidingIndex{opts.Index}
	if opts.Logs != nil {
		iv.opts.Logs = ownHidingLogs{opts.Logs}
	}
	return iv, nil
}

// notOwn selects the streams without a KindLabel: the workload's, not
// weft's own records (incidents). It matches the empty value, so the index
// applies it by subtracting the few streams that carry the label.
var notOwn = labels.MustNewMatcher(labels.MatchEqual, KindLabel, "")

// ownHidingIndex and ownHidingLogs add notOwn to every selector, so that
// contexts, pivots and investigations never read incidents as the
// workload's log streams or their lines as its log patterns.
type ownHidingIndex struct{ Index }

func (x ownHidingIndex) Postings(ctx context.Context, kind index.Kind, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error) {
	return x.Index.Postings(ctx, kind, mint, maxt, append(slices.Clip(ms), notOwn)...)
}

type ownHidingLogs struct{ Logs }

func (x ownHidingLogs) EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error {
	return x.Logs.EachStreamTotal(ctx, start, end, append(slices.Clip(ms), notOwn), f)
}

func (x ownHidingLogs) Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error) {
	p.Matchers = append(slices.Clip(p.Matchers), notOwn)
	return x.Logs.Select(ctx, p)
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}
