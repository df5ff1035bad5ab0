package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"golang.org/x/time/rate"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Per-tenant limits (docs/configuration.md#per-tenant-limits): what one
// tenant may send and ask, so that one team cannot starve the others. The
// anonymous tenant (multi-tenancy off) has limits too: the defaults, which
// limit nothing unless configured.

// TenantLimits are one tenant's limits; zero is no limit for every field.
type TenantLimits struct {
	// IngestionRate is samples (floats, histograms) per second, with
	// bursts of IngestionBurstSize (default: one second's worth).
	IngestionRate      float64
	IngestionBurstSize int
	// LogIngestionRateBytes is log line bytes per second, with bursts of
	// LogIngestionBurstSizeBytes (default: one second's worth).
	LogIngestionRateBytes      float64
	LogIngestionBurstSizeBytes int
	// SpanIngestionRate is spans per second, with bursts of
	// SpanIngestionBurstSize (default: one second's worth).
	SpanIngestionRate      float64
	SpanIngestionBurstSize int
	// MaxLabelNamesPerSeries bounds the labels of a series, __name__
	// included.
	MaxLabelNamesPerSeries int
	// MaxSeriesPerQuery bounds the series one selector of a query selects.
	MaxSeriesPerQuery int
	// MaxQueryLength bounds end - start of a range query.
	MaxQueryLength time.Duration
	// MaxConcurrentQueries bounds the tenant's queries in flight.
	MaxConcurrentQueries int
	// MaxActiveSeries bounds the tenant's metric series in the index's
	// recent partitions: a sample of a new series past it is refused.
	MaxActiveSeries int
	// MaxSeriesPerMetric bounds the series of one metric name (Mimir's
	// max_global_series_per_metric), counted as MaxActiveSeries is.
	MaxSeriesPerMetric int
	// MaxLabelNameLength and MaxLabelValueLength bound the bytes of a
	// label name and value of a new metric series or log stream.
	MaxLabelNameLength, MaxLabelValueLength int
	// MaxLineSize bounds the bytes of one log line.
	MaxLineSize int
	// MaxSamplesPerQuery bounds the samples one PromQL query reads
	// (query.Limits.MaxSamplesRead).
	MaxSamplesPerQuery int
}

// LimitsConfig is every tenant's limits: Defaults, and Overrides by tenant
// ID (each a whole TenantLimits: the configuration layer fills the fields an
// override leaves out from Defaults).
type LimitsConfig struct {
	Defaults  TenantLimits
	Overrides map[string]TenantLimits
}

// For returns the limits of tenant id.
func (c *LimitsConfig) For(id string) TenantLimits {
	if l, ok := c.Overrides[id]; ok {
		return l
	}
	return c.Defaults
}

// Limiter enforces per-tenant limits on every ingest path and query API,
// and counts each tenant's usage and rejections. Safe for concurrent use;
// Apply replaces the limits (a reload) without losing the tenants' state.
// A nil *Limiter limits nothing.
type Limiter struct {
	mu      sync.Mutex
	cfg     LimitsConfig
	tenants map[string]*tenantState

	countSeries func(ctx context.Context, ms ...*labels.Matcher) (int, error)

	received  *prometheus.CounterVec
	discarded *prometheus.CounterVec
	inflight  *prometheus.GaugeVec
}

// tenantState is one tenant's buckets and queries in flight.
type tenantState struct {
	samples, logBytes, spans *rate.Limiter
	queries                  int // guarded by Limiter.mu
	// series is the tenant's series count, and metrics the count of each
	// metric name's series while MaxSeriesPerMetric is set (one entry per
	// name the tenant has created a series of since then); guarded by
	// Limiter.mu.
	series  seriesCount
	metrics map[string]*seriesCount
}

// seriesCount is a number of series counted from the index at at and
// incremented by each series admitted since.
type seriesCount struct {
	n  int
	at time.Time
}

// seriesRecount is how long a series count is trusted before it is counted
// again from the index (series also go: retention, deletes).
const seriesRecount = 30 * time.Second

// SetSeriesCounter sets how a tenant's series are counted: count returns
// the metric series of the tenant of ctx that match ms (none: all of them)
// in the index's recent postings. Without one MaxActiveSeries and
// MaxSeriesPerMetric count only the series created since the start. Call
// it before serving.
func (l *Limiter) SetSeriesCounter(count func(ctx context.Context, ms ...*labels.Matcher) (int, error)) {
	if l != nil {
		l.countSeries = count
	}
}

// recount counts c, the series of the tenant or (byName) of its metric name
// metric, again from the index when it is older than seriesRecount. It
// takes l.mu itself and counts outside it (counting reads the index).
func (l *Limiter) recount(ctx context.Context, id string, c *seriesCount, byName bool, metric string) error {
	if l.countSeries == nil {
		return nil
	}
	l.mu.Lock()
	stale := time.Since(c.at) > seriesRecount
	l.mu.Unlock()
	if !stale {
		return nil
	}
	var ms []*labels.Matcher
	if byName {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, metric)}
	}
	n, err := l.countSeries(tenant.With(context.WithoutCancel(ctx), id), ms...)
	if err != nil {
		return fmt.Errorf("count the series of tenant %q: %w", id, err)
	}
	l.mu.Lock()
	c.n, c.at = n, time.Now()
	l.mu.Unlock()
	return nil
}

// AdmitSeries is storage.Options.AdmitSeries: it refuses a new series ls of
// a tenant at its MaxActiveSeries or at the MaxSeriesPerMetric of its
// metric name (400, as Mimir's per-user and per-metric series limits: the
// rest of the request is written, and retrying would not help).
func (l *Limiter) AdmitSeries(ctx context.Context, tid string, ls labels.Labels) error {
	if l == nil {
		return nil
	}
	id := tid
	if id == "" {
		id = tenant.Anonymous
	}
	l.mu.Lock()
	t, st := l.stateLocked(id)
	if t.MaxActiveSeries <= 0 && t.MaxSeriesPerMetric <= 0 {
		l.mu.Unlock()
		return nil
	}
	var (
		name   string
		metric *seriesCount
	)
	if t.MaxSeriesPerMetric > 0 {
		name = ls.Get(labels.MetricName)
		if st.metrics == nil {
			st.metrics = map[string]*seriesCount{}
		}
		if metric = st.metrics[name]; metric == nil {
			metric = &seriesCount{}
			st.metrics[name] = metric
		}
	}
	l.mu.Unlock()
	if t.MaxActiveSeries > 0 {
		if err := l.recount(ctx, id, &st.series, false, ""); err != nil {
			return err
		}
	}
	if metric != nil {
		if err := l.recount(ctx, id, metric, true, name); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.MaxActiveSeries > 0 && st.series.n >= t.MaxActiveSeries {
		l.discarded.WithLabelValues(id, "samples", "max_active_series").Inc()
		le := limitErr(http.StatusBadRequest, id, "max_active_series", fmt.Sprintf("the sample of a new series has been rejected because tenant %q has reached its series limit (limit: %d series)", id, t.MaxActiveSeries))
		return fmt.Errorf("%w: %w", storage.ErrInvalidLabels, le)
	}
	if metric != nil && metric.n >= t.MaxSeriesPerMetric {
		l.discarded.WithLabelValues(id, "samples", "max_series_per_metric").Inc()
		le := limitErr(http.StatusBadRequest, id, "max_series_per_metric", fmt.Sprintf("the sample of a new series has been rejected: per-metric series limit of %d exceeded for metric %q (tenant %q)", t.MaxSeriesPerMetric, name, id))
		return fmt.Errorf("%w: %w", storage.ErrInvalidLabels, le)
	}
	if t.MaxActiveSeries > 0 {
		st.series.n++
	}
	if metric != nil {
		metric.n++
	}
	return nil
}

// NewLimiter returns a limiter with cfg, registering its metrics with reg
// (nil: not registered).
func NewLimiter(cfg LimitsConfig, reg prometheus.Registerer) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Limiter{
		cfg:     cfg,
		tenants: map[string]*tenantState{},
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tenant_received_total",
			Help: "What each tenant sent and weft accepted: samples, log line bytes, spans.",
		}, []string{"tenant", "type"}),
		discarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_tenant_discarded_total",
			Help: "What each tenant sent or asked that a per-tenant limit refused, by limit.",
		}, []string{"tenant", "type", "limit"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "weft_tenant_queries_inflight",
			Help: "Queries of each tenant in flight.",
		}, []string{"tenant"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.received, l.discarded, l.inflight} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register tenant metrics: %w", err)
			}
		}
	}
	return l, nil
}

// Validate checks every limit (none negative, valid tenant IDs).
func (c *LimitsConfig) Validate() error {
	check := func(who string, t TenantLimits) error {
		for name, v := range map[string]float64{
			"ingestion_rate": t.IngestionRate, "ingestion_burst_size": float64(t.IngestionBurstSize),
			"log_ingestion_rate_bytes": t.LogIngestionRateBytes, "log_ingestion_burst_size_bytes": float64(t.LogIngestionBurstSizeBytes),
			"span_ingestion_rate": t.SpanIngestionRate, "span_ingestion_burst_size": float64(t.SpanIngestionBurstSize),
			"max_label_names_per_series": float64(t.MaxLabelNamesPerSeries), "max_series_per_query": float64(t.MaxSeriesPerQuery),
			"max_query_length": float64(t.MaxQueryLength), "max_concurrent_queries": float64(t.MaxConcurrentQueries),
			"max_active_series": float64(t.MaxActiveSeries), "max_series_per_metric": float64(t.MaxSeriesPerMetric),
			"max_label_name_length": float64(t.MaxLabelNameLength), "max_label_value_length": float64(t.MaxLabelValueLength),
			"max_line_size": float64(t.MaxLineSize), "max_samples_per_query": float64(t.MaxSamplesPerQuery),
		} {
			if v < 0 {
				return fmt.Errorf("limits of %s: %s is negative", who, name)
			}
		}
		return nil
	}
	if err := check("the defaults", c.Defaults); err != nil {
		return err
	}
	for id, t := range c.Overrides {
		if err := tenant.ValidateID(id); err != nil {
			return fmt.Errorf("limits override: %w", err)
		}
		if err := check("tenant "+id, t); err != nil {
			return err
		}
	}
	return nil
}

// Apply replaces the limits (a configuration reload). Buckets keep their
// tokens; rates and bursts change at once.
func (l *Limiter) Apply(cfg LimitsConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg
	for id, st := range l.tenants {
		t := cfg.For(id)
		setRate(st.samples, t.IngestionRate, t.IngestionBurstSize)
		setRate(st.logBytes, t.LogIngestionRateBytes, t.LogIngestionBurstSizeBytes)
		setRate(st.spans, t.SpanIngestionRate, t.SpanIngestionBurstSize)
		if t.MaxSeriesPerMetric <= 0 {
			st.metrics = nil // the counts are not kept without the limit
		}
	}
	return nil
}

// Received is weft_tenant_received_total{tenant, type}.
func (l *Limiter) Received() *prometheus.CounterVec { return l.received }

// Discarded is weft_tenant_discarded_total{tenant, type, limit}.
func (l *Limiter) Discarded() *prometheus.CounterVec { return l.discarded }

// Limits returns the limits in force (for the effective configuration).
func (l *Limiter) Limits() LimitsConfig {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// newRate returns a full bucket.
func newRate(r float64, burst int) *rate.Limiter {
	if r <= 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	if burst <= 0 {
		burst = max(int(r), 1)
	}
	return rate.NewLimiter(rate.Limit(r), burst)
}

func setRate(lim *rate.Limiter, r float64, burst int) {
	if r <= 0 {
		lim.SetLimit(rate.Inf)
		return
	}
	if burst <= 0 {
		burst = max(int(r), 1)
	}
	lim.SetLimit(rate.Limit(r))
	lim.SetBurst(burst)
}

// state returns the tenant's limits and state; the caller holds l.mu.
func (l *Limiter) stateLocked(id string) (TenantLimits, *tenantState) {
	t := l.cfg.For(id)
	st := l.tenants[id]
	if st == nil {
		st = &tenantState{
			samples:  newRate(t.IngestionRate, t.IngestionBurstSize),
			logBytes: newRate(t.LogIngestionRateBytes, t.LogIngestionBurstSizeBytes),
			spans:    newRate(t.SpanIngestionRate, t.SpanIngestionBurstSize),
		}
		l.tenants[id] = st
	}
	return t, st
}

// tenantOf is the tenant a request's limits are looked up under.
func tenantOf(ctx context.Context) string {
	s, ok := tenant.FromContext(ctx)
	if !ok {
		return tenant.Anonymous
	}
	return strings.Join(s.IDs(), tenant.Separator)
}

// LimitError is a request refused by a per-tenant limit. Code is 429 for
// a rate (retry later) and 400 or 422 for a request that will never fit.
type LimitError struct {
	Code   int
	Limit  string // the configuration key, as in the message
	Tenant string
	msg    string
}

func (e *LimitError) Error() string { return e.msg }

// limitErr builds a LimitError whose message names the limit, its value and
// how to raise it, as Mimir's do.
func limitErr(code int, id, key, what string) *LimitError {
	where := "limits.tenants.defaults." + key
	if id != tenant.Anonymous {
		where = "limits.tenants.overrides." + id + "." + key
	}
	return &LimitError{Code: code, Limit: key, Tenant: id,
		msg: fmt.Sprintf("%s (err-weft-%s); to adjust the limit, set %s in the configuration file and reload (SIGHUP or POST /-/reload)", what, strings.ReplaceAll(key, "_", "-"), where)}
}

// asLimit reports whether err is a per-tenant limit refusal.
func asLimit(err error) (*LimitError, bool) {
	var le *LimitError
	return le, errors.As(err, &le)
}

// take spends n of a bucket or refuses with the limit's error.
func (l *Limiter) take(ctx context.Context, typ string, n int) error {
	if l == nil || n <= 0 {
		return nil
	}
	id := tenantOf(ctx)
	l.mu.Lock()
	t, st := l.stateLocked(id)
	l.mu.Unlock()
	var (
		b         *rate.Limiter
		key, unit string
		r         float64
		burst     int
	)
	switch typ {
	case "samples":
		b, key, unit, r, burst = st.samples, "ingestion_rate", "samples/s", t.IngestionRate, t.IngestionBurstSize
	case "log_bytes":
		b, key, unit, r, burst = st.logBytes, "log_ingestion_rate_bytes", "bytes/s", t.LogIngestionRateBytes, t.LogIngestionBurstSizeBytes
	default:
		b, key, unit, r, burst = st.spans, "span_ingestion_rate", "spans/s", t.SpanIngestionRate, t.SpanIngestionBurstSize
	}
	if b.AllowN(time.Now(), n) {
		l.received.WithLabelValues(id, typ).Add(float64(n))
		return nil
	}
	l.discarded.WithLabelValues(id, typ, key).Add(float64(n))
	if burst <= 0 {
		burst = max(int(r), 1)
	}
	return limitErr(http.StatusTooManyRequests, id, key, fmt.Sprintf(
		"the request has been rejected because tenant %q exceeded its ingestion rate limit, set to %g %s with a maximum allowed burst of %d; the request holds %d", id, r, unit, burst, n))
}

// Appendable returns app behind the limits on samples and series labels.
func (l *Limiter) Appendable(app promstorage.AppendableV2) promstorage.AppendableV2 {
	if l == nil || app == nil {
		return app
	}
	return limitedAppendable{app: app, l: l}
}

type limitedAppendable struct {
	app promstorage.AppendableV2
	l   *Limiter
}

func (a limitedAppendable) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	id := tenantOf(ctx)
	a.l.mu.Lock()
	t, _ := a.l.stateLocked(id)
	a.l.mu.Unlock()
	return &limitedAppender{AppenderV2: a.app.AppenderV2(ctx), l: a.l, ctx: ctx, id: id, t: t}
}

// limitedAppender counts the samples of a commit and refuses it whole when
// they do not fit the tenant's rate, as a distributor refuses a request.
type limitedAppender struct {
	promstorage.AppenderV2
	l   *Limiter
	ctx context.Context
	id  string
	t   TenantLimits // the tenant's limits when the appender was made
	n   int
}

func (ap *limitedAppender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	if ref == 0 {
		if le := checkSeriesLabels(ap.id, ap.t, ls); le != nil {
			ap.l.discarded.WithLabelValues(ap.id, "samples", le.Limit).Inc()
			return 0, fmt.Errorf("%w: %w", storage.ErrInvalidLabels, le)
		}
	}
	ref, err := ap.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
	if err == nil {
		ap.n++ // only what the store took counts against the rate
	}
	return ref, err
}

// checkSeriesLabels refuses ls, a new metric series or log stream, with
// more labels than MaxLabelNamesPerSeries or a label name or value longer
// than MaxLabelNameLength or MaxLabelValueLength: 400, in Mimir's words.
// The caller counts the refusal.
func checkSeriesLabels(id string, t TenantLimits, ls labels.Labels) *LimitError {
	if t.MaxLabelNamesPerSeries > 0 && ls.Len() > t.MaxLabelNamesPerSeries {
		return limitErr(http.StatusBadRequest, id, "max_label_names_per_series", fmt.Sprintf(
			"received a series whose number of labels exceeds the limit (actual: %d, limit: %d) series: '%.200s'", ls.Len(), t.MaxLabelNamesPerSeries, ls))
	}
	if t.MaxLabelNameLength <= 0 && t.MaxLabelValueLength <= 0 {
		return nil
	}
	var le *LimitError
	ls.Range(func(lb labels.Label) {
		switch {
		case le != nil:
		case t.MaxLabelNameLength > 0 && len(lb.Name) > t.MaxLabelNameLength:
			le = limitErr(http.StatusBadRequest, id, "max_label_name_length", fmt.Sprintf(
				"received a series whose label name length exceeds the limit (actual: %d, limit: %d), label: '%.200s' series: '%.200s'", len(lb.Name), t.MaxLabelNameLength, lb.Name, ls))
		case t.MaxLabelValueLength > 0 && len(lb.Value) > t.MaxLabelValueLength:
			le = limitErr(http.StatusBadRequest, id, "max_label_value_length", fmt.Sprintf(
				"received a series whose label value length exceeds the limit (actual: %d, limit: %d), label: '%.200s' value: '%.200s' (truncated) series: '%.200s'", len(lb.Value), t.MaxLabelValueLength, lb.Name, lb.Value, ls))
		}
	})
	return le
}

// CopiesLabels: the appender keeps nothing of the labels it is given (an
// error message formats a copy), so it copies when what it wraps does.
func (ap *limitedAppender) CopiesLabels() bool { return ingest.CopiesLabels(ap.AppenderV2) }

func (ap *limitedAppender) AppendExemplars(ref promstorage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (promstorage.SeriesRef, error) {
	if x, ok := ap.AppenderV2.(interface {
		AppendExemplars(promstorage.SeriesRef, labels.Labels, []exemplar.Exemplar) (promstorage.SeriesRef, error)
	}); ok {
		return x.AppendExemplars(ref, ls, es)
	}
	return ref, nil
}

func (ap *limitedAppender) Commit() error {
	if err := ap.l.take(ap.ctx, "samples", ap.n); err != nil {
		return errors.Join(err, ap.AppenderV2.Rollback())
	}
	return ap.AppenderV2.Commit()
}

// LogPusher returns p behind the limit on log bytes.
func (l *Limiter) LogPusher(p loki.Pusher) loki.Pusher {
	if l == nil {
		return p
	}
	return limitedLogPusher{p: p, l: l}
}

type limitedLogPusher struct {
	p loki.Pusher
	l *Limiter
}

// Push refuses the streams whose label names or values are longer than the
// tenant's limits and the lines longer than its MaxLineSize, and pushes the rest when the
// tenant's log byte rate has room for them; it then returns a
// *loki.ValidationError of what it refused (400, the rest is written, as
// Loki's distributor answers).
func (lp limitedLogPusher) Push(ctx context.Context, streams []logstore.PushStream) error {
	id := tenantOf(ctx)
	lp.l.mu.Lock()
	t, _ := lp.l.stateLocked(id)
	lp.l.mu.Unlock()
	// max_label_names_per_series is the metric series' (limits.logs has
	// the log streams' count, which does not count service_name).
	t.MaxLabelNamesPerSeries = 0
	var verr *loki.ValidationError
	if t.MaxLabelNameLength > 0 || t.MaxLabelValueLength > 0 || t.MaxLineSize > 0 {
		streams, verr = lp.l.checkStreams(id, t, streams)
	}
	n := 0
	for _, s := range streams {
		for _, e := range s.Entries {
			n += len(e.Line)
		}
	}
	if err := lp.l.take(ctx, "log_bytes", n); err != nil {
		return err
	}
	if len(streams) > 0 {
		if err := lp.p.Push(ctx, streams); err != nil {
			return err
		}
	}
	if verr != nil {
		return verr
	}
	return nil
}

// streamReasons are the Loki discard reasons of the limits checkStreams
// enforces.
var streamReasons = map[string]loki.Reason{
	"max_label_name_length":  loki.ReasonLabelNameTooLong,
	"max_label_value_length": loki.ReasonLabelValueTooLong,
	"max_line_size":          loki.ReasonLineTooLong,
}

// checkStreams returns the streams and lines that fit t's label and line
// limits and, when some did not, what it refused; refusals are counted in
// log bytes.
func (l *Limiter) checkStreams(id string, t TenantLimits, streams []logstore.PushStream) ([]logstore.PushStream, *loki.ValidationError) {
	var verr *loki.ValidationError
	refuse := func(le *LimitError, entries, bytes int) {
		if verr == nil {
			verr = &loki.ValidationError{}
		}
		verr.Add(streamReasons[le.Limit], entries, le)
		l.discarded.WithLabelValues(id, "log_bytes", le.Limit).Add(float64(bytes))
	}
	kept := make([]logstore.PushStream, 0, len(streams))
	for _, s := range streams {
		if le := checkSeriesLabels(id, t, s.Labels); le != nil {
			n := 0
			for _, e := range s.Entries {
				n += len(e.Line)
			}
			refuse(le, len(s.Entries), n)
			continue
		}
		if t.MaxLineSize > 0 {
			var out []logentry.Entry // nil while every line fits
			for j, e := range s.Entries {
				if len(e.Line) <= t.MaxLineSize {
					if out != nil {
						out = append(out, e)
					}
					continue
				}
				if out == nil {
					out = append(make([]logentry.Entry, 0, len(s.Entries)), s.Entries[:j]...)
				}
				refuse(limitErr(http.StatusBadRequest, id, "max_line_size", fmt.Sprintf(
					"max entry size '%d' bytes exceeded for stream '%.200s' while adding an entry with length '%d' bytes", t.MaxLineSize, s.Labels, len(e.Line))), 1, len(e.Line))
			}
			if out != nil {
				s.Entries = out
			}
		}
		if len(s.Entries) > 0 {
			kept = append(kept, s)
		}
	}
	return kept, verr
}

// LogSource returns src behind the tenant's MaxSeriesPerQuery on the
// streams one LogQL selector reads (Loki's max_query_series, here per
// selector): past it the select fails with 400, as Loki answers its
// per-query limits.
func (l *Limiter) LogSource(src logql.Source) logql.Source {
	if l == nil || src == nil {
		return src
	}
	return limitedLogSource{src: src, l: l}
}

type limitedLogSource struct {
	src logql.Source
	l   *Limiter
}

func (s limitedLogSource) Select(ctx context.Context, p logql.SelectParams) (logql.EntryIterator, error) {
	id := tenantOf(ctx)
	s.l.mu.Lock()
	t, _ := s.l.stateLocked(id)
	s.l.mu.Unlock()
	it, err := s.src.Select(ctx, p)
	if err != nil || t.MaxSeriesPerQuery <= 0 {
		return it, err
	}
	return &limitedEntries{EntryIterator: it, l: s.l, id: id, max: t.MaxSeriesPerQuery}, nil
}

// limitedEntries counts the streams of a select as they come (one after
// another, logentry.Iterator) and stops with the limit's error past max.
type limitedEntries struct {
	logql.EntryIterator
	l        *Limiter
	id       string
	max, got int
	prev     labels.Labels // the current stream's labels, copied
	err      error
}

func (it *limitedEntries) Next() bool {
	if it.err != nil || !it.EntryIterator.Next() {
		return false
	}
	ls, _ := it.EntryIterator.At()
	if it.got == 0 || !labels.Equal(ls, it.prev) {
		if it.got++; it.got > it.max {
			it.l.discarded.WithLabelValues(it.id, "queries", "max_series_per_query").Inc()
			it.err = limitErr(http.StatusBadRequest, it.id, "max_series_per_query", fmt.Sprintf(
				"maximum number of series (%d) reached for a single query: a stream selector reads more streams", it.max))
			return false
		}
		it.prev = ls.Copy()
	}
	return true
}

func (it *limitedEntries) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.EntryIterator.Err()
}

// TracePusher returns p behind the limit on spans.
func (l *Limiter) TracePusher(p otlptraces.Pusher) otlptraces.Pusher {
	if l == nil || p == nil {
		return p
	}
	return limitedTracePusher{p: p, l: l}
}

type limitedTracePusher struct {
	p otlptraces.Pusher
	l *Limiter
}

func (tp limitedTracePusher) Push(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	n := 0
	for _, rs := range batch {
		n += len(rs.Spans)
	}
	if err := tp.l.take(ctx, "spans", n); err != nil {
		return tracestore.PushResult{}, err
	}
	return tp.p.Push(ctx, batch)
}

// queryPath reports whether a request is a query the query limits apply
// to, and whether it has a range (start and end).
func queryPath(r *http.Request) (query, ranged bool) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/query_range"), p == "/api/search", p == "/api/v2/search":
		return true, true
	case strings.HasSuffix(p, "/query"), strings.HasSuffix(p, "/query_exemplars"), strings.HasSuffix(p, "/series"),
		strings.HasPrefix(p, "/api/traces/"), strings.HasPrefix(p, "/api/v2/traces/"), strings.HasPrefix(p, "/weft/api/v1/"):
		return true, false
	}
	return false, false
}

// wrapHTTP wraps a query: it refuses a range longer than the tenant's
// MaxQueryLength (400), more concurrent queries than MaxConcurrentQueries
// (429), and runs h with the series and samples limits in the context
// (storage.WithMaxSeries, query.WithLimits: 422).
func (l *Limiter) wrapHTTP(h http.Handler) http.Handler {
	if l == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isQuery, ranged := queryPath(r)
		if !isQuery {
			h.ServeHTTP(w, r)
			return
		}
		id := tenantOf(r.Context())
		l.mu.Lock()
		t, st := l.stateLocked(id)
		if t.MaxConcurrentQueries > 0 && st.queries >= t.MaxConcurrentQueries {
			l.mu.Unlock()
			l.discarded.WithLabelValues(id, "queries", "max_concurrent_queries").Inc()
			le := limitErr(http.StatusTooManyRequests, id, "max_concurrent_queries", fmt.Sprintf("too many outstanding queries: tenant %q has %d in flight, the limit is %d", id, t.MaxConcurrentQueries, t.MaxConcurrentQueries))
			w.Header().Set("Retry-After", "1")
			http.Error(w, le.Error(), le.Code)
			return
		}
		st.queries++
		l.mu.Unlock()
		l.inflight.WithLabelValues(id).Inc()
		defer func() {
			l.mu.Lock()
			st.queries--
			l.mu.Unlock()
			l.inflight.WithLabelValues(id).Dec()
		}()
		if ranged && t.MaxQueryLength > 0 {
			if length, ok := requestRange(r); ok && length > t.MaxQueryLength {
				l.discarded.WithLabelValues(id, "queries", "max_query_length").Inc()
				le := limitErr(http.StatusBadRequest, id, "max_query_length", fmt.Sprintf("the query time range exceeds the limit (query length: %s, limit: %s)", length, t.MaxQueryLength))
				http.Error(w, le.Error(), le.Code)
				return
			}
		}
		if n := t.MaxSeriesPerQuery; n > 0 {
			var counted sync.Once // a refused Select may be tried again: one query, one refusal
			ctx := storage.WithMaxSeries(r.Context(), n, func(got int) error {
				counted.Do(l.discarded.WithLabelValues(id, "queries", "max_series_per_query").Inc)
				return limitErr(http.StatusUnprocessableEntity, id, "max_series_per_query", fmt.Sprintf("the query exceeded the maximum number of series: its selectors fetch %d, the limit is %d", got, n))
			})
			r = r.WithContext(ctx)
		}
		if n := t.MaxSamplesPerQuery; n > 0 {
			ctx := query.WithLimits(r.Context(), query.Limits{MaxSamplesRead: n, Refused: func(err error) error {
				l.discarded.WithLabelValues(id, "queries", "max_samples_per_query").Inc()
				// Not wrapping err: the Prometheus API answers this 422,
				// errorType execution, as Prometheus its max-samples limit.
				return limitErr(http.StatusUnprocessableEntity, id, "max_samples_per_query", fmt.Sprintf("the query exceeded the maximum number of samples it may read (limit: %d samples): %s", n, err))
			}})
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// requestRange is end - start of a query's form (unix seconds, RFC 3339 or
// unix nanoseconds as Loki takes them).
func requestRange(r *http.Request) (time.Duration, bool) {
	start, ok1 := formTime(r.FormValue("start"))
	end, ok2 := formTime(r.FormValue("end"))
	if !ok1 || !ok2 || end.Before(start) {
		return 0, false
	}
	return end.Sub(start), true
}

func formTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > 1e15 { // Loki's and Tempo's nanoseconds
			return time.Unix(0, int64(f)), true
		}
		return time.Unix(0, int64(f*1e9)), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
