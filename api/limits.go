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
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage"
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

	countSeries func(ctx context.Context) (int, error)

	received  *prometheus.CounterVec
	discarded *prometheus.CounterVec
	inflight  *prometheus.GaugeVec
}

// tenantState is one tenant's buckets and queries in flight.
type tenantState struct {
	samples, logBytes, spans *rate.Limiter
	queries                  int // guarded by Limiter.mu
	// series is the tenant's series count, counted from the index at
	// seriesAt and incremented by each admitted series; guarded by
	// Limiter.mu.
	series   int
	seriesAt time.Time
}

// seriesRecount is how long a tenant's series count is trusted before it
// is counted again from the index (series also go: retention, deletes).
const seriesRecount = 30 * time.Second

// SetSeriesCounter sets how a tenant's series are counted (the index's
// postings of the tenant); without one MaxActiveSeries counts only the
// series created since the start. Call it before serving.
func (l *Limiter) SetSeriesCounter(count func(ctx context.Context) (int, error)) {
	if l != nil {
		l.countSeries = count
	}
}

// AdmitSeries is storage.Options.AdmitSeries: it refuses a new series of a
// tenant at its MaxActiveSeries (400, Mimir's per-tenant series limit).
func (l *Limiter) AdmitSeries(ctx context.Context, tid string) error {
	if l == nil {
		return nil
	}
	id := tid
	if id == "" {
		id = tenant.Anonymous
	}
	l.mu.Lock()
	t, st := l.stateLocked(id)
	if t.MaxActiveSeries <= 0 {
		l.mu.Unlock()
		return nil
	}
	stale := l.countSeries != nil && time.Since(st.seriesAt) > seriesRecount
	l.mu.Unlock()
	if stale { // outside the lock: counting reads the index
		n, err := l.countSeries(tenant.With(context.WithoutCancel(ctx), id))
		if err != nil {
			return fmt.Errorf("count the series of tenant %q: %w", id, err)
		}
		l.mu.Lock()
		st.series, st.seriesAt = n, time.Now()
		l.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st.series >= t.MaxActiveSeries {
		l.discarded.WithLabelValues(id, "samples", "max_active_series").Inc()
		le := limitErr(http.StatusBadRequest, id, "max_active_series", fmt.Sprintf("the sample of a new series has been rejected because tenant %q has reached its series limit (limit: %d series)", id, t.MaxActiveSeries))
		return fmt.Errorf("%w: %w", storage.ErrInvalidLabels, le)
	}
	st.series++
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
			"max_active_series": float64(t.MaxActiveSeries),
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
	return &limitedAppender{AppenderV2: a.app.AppenderV2(ctx), l: a.l, ctx: ctx, id: id, maxNames: t.MaxLabelNamesPerSeries}
}

// limitedAppender counts the samples of a commit and refuses it whole when
// they do not fit the tenant's rate, as a distributor refuses a request.
type limitedAppender struct {
	promstorage.AppenderV2
	l        *Limiter
	ctx      context.Context
	id       string
	maxNames int
	n        int
}

func (ap *limitedAppender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	if ap.maxNames > 0 && ref == 0 && ls.Len() > ap.maxNames {
		ap.l.discarded.WithLabelValues(ap.id, "samples", "max_label_names_per_series").Inc()
		le := limitErr(http.StatusBadRequest, ap.id, "max_label_names_per_series", fmt.Sprintf(
			"received a series whose number of labels exceeds the limit (actual: %d, limit: %d) series: '%s'", ls.Len(), ap.maxNames, ls))
		return 0, fmt.Errorf("%w: %w", storage.ErrInvalidLabels, le)
	}
	ap.n++
	return ap.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}

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

func (lp limitedLogPusher) Push(ctx context.Context, streams []logstore.PushStream) error {
	n := 0
	for _, s := range streams {
		for _, e := range s.Entries {
			n += len(e.Line)
		}
	}
	if err := lp.l.take(ctx, "log_bytes", n); err != nil {
		return err
	}
	return lp.p.Push(ctx, streams)
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

// queryLimits wraps a query: it refuses a range longer than the tenant's
// MaxQueryLength (400), more concurrent queries than MaxConcurrentQueries
// (429), and runs h with the series limit in the context.
func (l *Limiter) wrapHTTP(h http.Handler) http.Handler {
	if l == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query, ranged := queryPath(r)
		if !query {
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
			ctx := storage.WithMaxSeries(r.Context(), n, func(got int) error {
				l.discarded.WithLabelValues(id, "queries", "max_series_per_query").Inc()
				return limitErr(http.StatusUnprocessableEntity, id, "max_series_per_query", fmt.Sprintf("the query exceeded the maximum number of series: a selector selects %d, the limit is %d", got, n))
			})
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
