package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/weftdb/weft/ingest/redact"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/query/logpattern"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logstore"
)

// LokiOptions configure the Loki HTTP API. Zero fields take the defaults of
// DefaultLokiOptions.
type LokiOptions struct {
	// Ingest configures push validation (limits, service_name, levels).
	Ingest loki.Options
	// MaxPushBodySize bounds a push body after decompression. Default 64 MiB.
	MaxPushBodySize int64
	// DefaultLimit is the entry limit of log queries without limit. Default
	// 100 (Loki's).
	DefaultLimit int
	// DefaultLookback is the range of queries without start. Default 1h.
	DefaultLookback time.Duration
	// Broadcaster hands what the push handlers store to the open tail
	// connections. Share one between this handler and the OTLP logs
	// receiver (OTLPLogsOptions.Broadcaster) so that tail sees every line;
	// nil makes a private one that sees Loki pushes only.
	Broadcaster *LogBroadcaster
	// Tailer, when set, is where tail connections' live entries come
	// from instead of this process's pushes: a scale-out querier, which
	// stores nothing, tails its ingesters. The Broadcaster still ends the
	// connections at shutdown.
	Tailer LogTailer
	// TailMaxQueued bounds the entries waiting for one tail connection
	// (being written, or held by delay_for); entries beyond are dropped and
	// reported in dropped_entries instead of slowing ingest. Default 10000.
	TailMaxQueued int
	// TailMaxDropped bounds the dropped entries one tail message reports
	// (labels and timestamp each); more are dropped silently. Default 1000.
	TailMaxDropped int
	// PatternMaxLines bounds the lines one patterns request reads.
	// Default 100000.
	PatternMaxLines int
	// Patterns configures the pattern miner (per level); its MaxClusters
	// also bounds the patterns of one answer. See logpattern.DefaultOptions.
	Patterns logpattern.Options
	// EnableDelete serves Loki's delete API (/loki/api/v1/delete);
	// without it the API answers 403. Deletion is destructive: cmd/weft
	// sets it with -enable-admin-api. Default false.
	EnableDelete bool
	// BuildInfo is reported by status/buildinfo (the server's version,
	// revision, ...; the same as the Prometheus API's: api.New passes its
	// own when this one is the default). Empty fields answer "unknown",
	// GoVersion the running Go version.
	BuildInfo BuildInfo
	// Logger receives request errors; nil is a no-op logger.
	Logger *slog.Logger
	// Registerer receives the weft_ingest_* counters (path loki_push); nil
	// registers none.
	Registerer prometheus.Registerer
	// Now returns the current time; nil is time.Now. For tests.
	Now func() time.Time

	// admission is the server's shared ingest budget (set by the route
	// table); nil builds one of DefaultIngestMaxInFlightBytes.
	admission *admission
	// redact is the server's redaction at ingest (set by the route
	// table; nil redacts nothing).
	redact *redact.Redactor
	// limits are the per-tenant limits (set by the route table; nil
	// limits nothing).
	limits *Limiter
	// usage counts the accepted log bytes (set by the route table; nil
	// counts nothing).
	usage *usage.Accountant
}

// DefaultLokiOptions returns the defaults documented on LokiOptions.
func DefaultLokiOptions() LokiOptions {
	return LokiOptions{
		Ingest:          loki.DefaultOptions(),
		MaxPushBodySize: 64 << 20,
		DefaultLimit:    100,
		DefaultLookback: time.Hour,
		TailMaxQueued:   10000,
		TailMaxDropped:  1000,
		PatternMaxLines: 100000,
		Patterns:        logpattern.DefaultOptions(),
		BuildInfo:       defaultBuildInfo(),
	}
}

// lokiAPI serves the Loki HTTP API over the log store and the LogQL engine.
type lokiAPI struct {
	store  LogStore
	engine *logql.Engine
	ing    *loki.Ingester
	adm    *admission
	opts   LokiOptions
	log    *slog.Logger
	now    func() time.Time
	// counters count pushed lines stored and refused.
	counters *ingestCounters
}

// The log store is the LogQL engine's Source.
var _ logql.Source = (*logstore.Store)(nil)

// NewLokiHandler returns the Loki HTTP API: push, query, query_range,
// labels, label values, series, index stats and volume, detected fields and
// labels, patterns, tail (WebSocket), format_query, status/buildinfo under
// /loki/api/v1/, and /ready. Mount it on "/loki/" and "/ready". Safe for
// concurrent use; it owns no goroutines beyond those of open tail
// connections, which end when their request context ends. Lines it stores
// are published to opts.Broadcaster after they are durable.
func NewLokiHandler(store LogStore, engine *logql.Engine, opts LokiOptions) http.Handler {
	mux := http.NewServeMux()
	for _, r := range newLokiAPI(store, engine, opts).routes() {
		mux.Handle(r.pattern, r.h)
	}
	return mux
}

// newLokiAPI applies the defaults of opts and builds the Loki API.
func newLokiAPI(store LogStore, engine *logql.Engine, opts LokiOptions) *lokiAPI {
	d := DefaultLokiOptions()
	if opts.MaxPushBodySize <= 0 {
		opts.MaxPushBodySize = d.MaxPushBodySize
	}
	if opts.DefaultLimit <= 0 {
		opts.DefaultLimit = d.DefaultLimit
	}
	if opts.DefaultLookback <= 0 {
		opts.DefaultLookback = d.DefaultLookback
	}
	if opts.Broadcaster == nil {
		opts.Broadcaster = NewLogBroadcaster()
	}
	if opts.TailMaxQueued <= 0 {
		opts.TailMaxQueued = d.TailMaxQueued
	}
	if opts.TailMaxDropped <= 0 {
		opts.TailMaxDropped = d.TailMaxDropped
	}
	if opts.PatternMaxLines <= 0 {
		opts.PatternMaxLines = d.PatternMaxLines
	}
	if opts.Patterns.MaxClusters <= 0 {
		opts.Patterns.MaxClusters = d.Patterns.MaxClusters
	}
	opts.BuildInfo = opts.BuildInfo.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Ingest.Now == nil {
		opts.Ingest.Now = opts.Now
	}
	if opts.admission == nil {
		opts.admission = newAdmission(0, 0, nil)
	}
	return &lokiAPI{store: store, engine: engine, ing: loki.NewIngester(opts.limits.LogPusher(opts.redact.LogPusher(opts.Broadcaster.Pusher(opts.usage.LogPusher(store)))), opts.Ingest), adm: opts.admission, opts: opts, log: opts.Logger, now: opts.Now,
		counters: newIngestCounters(opts.Registerer)}
}

// routes are the Loki API's entries in the route table, each with its own
// handler label.
func (a *lokiAPI) routes() []route {
	const p = "/loki/api/v1/"
	rs := []route{{pattern: "POST " + p + "push", name: p + "push", h: http.HandlerFunc(a.push)}}
	for _, e := range []struct {
		path string
		h    http.HandlerFunc
	}{
		{"query", a.query},
		{"query_range", a.queryRange},
		{"labels", a.labelNames},
		{"label", a.labelNames},
		{"label/{name}/values", a.labelValues},
		{"series", a.series},
		{"index/stats", a.indexStats},
		{"index/volume", a.volume},
		{"index/volume_range", a.volumeRange},
		{"detected_fields", a.detectedFields},
		{"detected_field/{name}/values", a.detectedFieldValues},
		{"detected_labels", a.detectedLabels},
		{"patterns", a.patterns},
		{"format_query", a.formatQuery},
		{"status/buildinfo", a.buildInfo},
	} {
		h := LimitLokiForm(e.h, DefaultMaxFormBytes) // a form over 10 MiB answers 413
		rs = append(rs,
			route{pattern: "GET " + p + e.path, name: p + e.path, h: h},
			route{pattern: "POST " + p + e.path, name: p + e.path, h: h})
	}
	rs = append(rs, a.deleteRoutes()...) // log deletion (lokidelete.go)
	return append(rs,
		route{pattern: "GET " + p + "tail", name: p + "tail", h: http.HandlerFunc(a.tail)},
		route{pattern: "GET /ready", name: "/ready", h: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ready\n"))
		})})
}

// Errors: Loki answers with a plain-text body and the status code.

func lokiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

func (a *lokiAPI) badRequest(w http.ResponseWriter, err error) {
	lokiError(w, http.StatusBadRequest, err.Error())
}

// queryError maps an engine or store error to Loki's status codes.
func (a *lokiAPI) queryError(w http.ResponseWriter, r *http.Request, err error) {
	if le, ok := asLimit(err); ok { // a per-tenant limit (limits.go)
		lokiError(w, le.Code, err.Error())
		return
	}
	switch {
	case errors.Is(err, logql.ErrParse), errors.Is(err, logql.ErrLimitExceeded),
		errors.Is(err, logql.ErrInvalidParams), errors.Is(err, logql.ErrTooManySeries),
		errors.Is(err, logql.ErrPipeline), errors.Is(err, logql.ErrExecution), errors.Is(err, errBadParam),
		// Query limits: Loki answers 400 for every per-query limit.
		errors.Is(err, logql.ErrQueryMemory), errors.Is(err, logql.ErrBytesReadLimit),
		errors.Is(err, logql.ErrTemplateLimit):
		lokiError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, context.Canceled) || r.Context().Err() != nil:
		lokiError(w, 499, "context canceled")
	case errors.Is(err, context.DeadlineExceeded):
		lokiError(w, http.StatusGatewayTimeout, err.Error())
	default:
		a.log.Error("loki_query_failed", "path", r.URL.Path, "err", err)
		lokiError(w, http.StatusInternalServerError, err.Error())
	}
}

var errBadParam = errors.New("bad request parameter")

// Parameters.

// lokiTime parses a Loki time parameter: unix nanoseconds (integers of more
// than 10 digits), unix seconds (shorter integers or floats) or RFC3339.
func lokiTime(v string, def int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	if !strings.ContainsAny(v, ".eE") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if len(strings.TrimLeft(v, "-+")) <= 10 {
				return n * 1e9, nil
			}
			return n, nil
		}
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/1e9 {
			return 0, fmt.Errorf("%w: invalid time %q", errBadParam, v)
		}
		sec, frac := math.Modf(f)
		return int64(sec)*1e9 + int64(math.Round(frac*1e9)), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixNano(), nil
	}
	return 0, fmt.Errorf("%w: cannot parse %q to a valid timestamp", errBadParam, v)
}

// lokiDuration parses a duration (Prometheus syntax) or float seconds.
func lokiDuration(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		d := f * float64(time.Second)
		if math.IsNaN(d) || d > math.MaxInt64 || d < math.MinInt64 {
			return 0, fmt.Errorf("%w: invalid duration %q", errBadParam, v)
		}
		return time.Duration(d), nil
	}
	if d, err := model.ParseDuration(v); err == nil {
		return time.Duration(d), nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("%w: cannot parse %q to a valid duration", errBadParam, v)
}

// rangeParams are start and end of a range request (ns).
// rangeAndSelector parses the time range (lookback when start is missing)
// and the optional stream selector in "query" that the label, series and
// stats endpoints share. It answers a bad parameter itself and returns ok
// false.
func (a *lokiAPI) rangeAndSelector(w http.ResponseWriter, r *http.Request, lookback time.Duration) (start, end int64, ms []*labels.Matcher, ok bool) {
	start, end, err := a.rangeParams(r, lookback)
	if err != nil {
		a.badRequest(w, err)
		return 0, 0, nil, false
	}
	if ms, err = selectorMatchers(r.FormValue("query")); err != nil {
		a.queryError(w, r, err)
		return 0, 0, nil, false
	}
	return start, end, ms, true
}

func (a *lokiAPI) rangeParams(r *http.Request, lookback time.Duration) (start, end int64, err error) {
	now := a.now().UnixNano()
	if end, err = lokiTime(r.FormValue("end"), now); err != nil {
		return 0, 0, err
	}
	def := end - int64(lookback)
	if since := r.FormValue("since"); since != "" {
		d, err := lokiDuration(since)
		if err != nil {
			return 0, 0, err
		}
		def = end - int64(d)
	}
	if start, err = lokiTime(r.FormValue("start"), def); err != nil {
		return 0, 0, err
	}
	if end < start {
		return 0, 0, fmt.Errorf("%w: end timestamp must not be before or equal to start time", errBadParam)
	}
	return start, end, nil
}

func (a *lokiAPI) limitParam(r *http.Request, def int) (int, error) {
	v := r.FormValue("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: limit must be a positive value", errBadParam)
	}
	return n, nil
}

func directionParam(r *http.Request) (logql.Direction, error) {
	switch strings.ToLower(r.FormValue("direction")) {
	case "", "backward":
		return logql.Backward, nil
	case "forward":
		return logql.Forward, nil
	}
	return 0, fmt.Errorf("%w: invalid direction %q", errBadParam, r.FormValue("direction"))
}

// selectorMatchers parses a stream selector (a log query whose pipeline is
// ignored); empty means all streams.
func selectorMatchers(q string) ([]*labels.Matcher, error) {
	if strings.TrimSpace(q) == "" {
		return nil, nil
	}
	e, err := logql.ParseExpr(q)
	if err != nil {
		return nil, err
	}
	sel, ok := e.(*logql.LogSelectorExpr)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a stream selector", errBadParam, q)
	}
	return sel.Matchers, nil
}

// Query endpoints.

func (a *lokiAPI) query(w http.ResponseWriter, r *http.Request) {
	t, err := lokiTime(r.FormValue("time"), a.now().UnixNano())
	if err != nil {
		a.badRequest(w, err)
		return
	}
	p, err := a.commonQueryParams(r)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	p.Start, p.End, p.Instant = t, t, true
	// Loki 3 answers instant log queries with 400 (Grafana never sends them).
	if e, err := logql.ParseExpr(p.Query); err == nil {
		if _, ok := e.(*logql.LogSelectorExpr); ok {
			a.badRequest(w, errors.New("log queries are not supported as an instant query type, please change your query to a range query type"))
			return
		}
	}
	a.runQuery(w, r, p)
}

func (a *lokiAPI) queryRange(w http.ResponseWriter, r *http.Request) {
	p, err := a.commonQueryParams(r)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	if p.Start, p.End, err = a.rangeParams(r, a.opts.DefaultLookback); err != nil {
		a.badRequest(w, err)
		return
	}
	if v := r.FormValue("step"); v != "" {
		if p.Step, err = lokiDuration(v); err != nil {
			a.badRequest(w, err)
			return
		}
		if p.Step <= 0 {
			a.badRequest(w, fmt.Errorf("%w: zero or negative query resolution step widths are not accepted. Try a positive integer", errBadParam))
			return
		}
	} else {
		p.Step = defaultStep(p.Start, p.End)
	}
	if (p.End-p.Start)/int64(p.Step) > 11000 {
		a.badRequest(w, fmt.Errorf("%w: exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)", errBadParam))
		return
	}
	if v := r.FormValue("interval"); v != "" {
		if p.Interval, err = lokiDuration(v); err != nil {
			a.badRequest(w, err)
			return
		}
	}
	a.runQuery(w, r, p)
}

// defaultStep is Loki's: the range over 250 points, at least one second.
func defaultStep(start, end int64) time.Duration {
	s := math.Ceil(float64(end-start) / float64(time.Second) / 250)
	return time.Duration(max(s, 1)) * time.Second
}

func (a *lokiAPI) commonQueryParams(r *http.Request) (logql.QueryParams, error) {
	var p logql.QueryParams
	p.Query = r.FormValue("query")
	if p.Query == "" {
		return p, fmt.Errorf("%w: query must not be empty", errBadParam)
	}
	var err error
	if p.Limit, err = a.limitParam(r, a.opts.DefaultLimit); err != nil {
		return p, err
	}
	if p.Direction, err = directionParam(r); err != nil {
		return p, err
	}
	return p, nil
}

func (a *lokiAPI) runQuery(w http.ResponseWriter, r *http.Request, p logql.QueryParams) {
	res, err := a.engine.Query(r.Context(), p)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	categorize := false
	for _, v := range r.Header.Values("X-Loki-Response-Encoding-Flags") {
		for _, f := range strings.Split(v, ",") {
			if strings.TrimSpace(f) == "categorize-labels" {
				categorize = true
			}
		}
	}
	writeJSON(w, appendQueryResponse(nil, res, p.Direction, categorize))
}

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// Push.

// lokiRetryAfter is the Retry-After (seconds) of a push the write path could
// not take for now: a produce that failed is usually a broker moving.
const lokiRetryAfter = "1"

func (a *lokiAPI) push(w http.ResponseWriter, r *http.Request) {
	t := a.adm.ticket()
	defer t.release() // after the push: the decoded request is held until then
	req, err := loki.DecodeBodyBudget(r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"), r.Body, a.opts.MaxPushBodySize, t)
	switch {
	case errors.Is(err, errOverBudget):
		t.refuse(w, "loki_push")
		return
	case errors.Is(err, loki.ErrTooLarge):
		lokiError(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	case err != nil:
		a.badRequest(w, err)
		return
	}
	st, err := a.ing.Push(r.Context(), req)
	a.countPush(req, st, err)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, loki.ErrInvalid):
		a.badRequest(w, err)
	case errors.Is(err, logstore.ErrEmptyLabels), errors.Is(err, logstore.ErrTooOld), errors.Is(err, logstore.ErrTenant):
		a.badRequest(w, err)
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrMemoryBudget), isRateLimit(err): // disk nearly full, store failed, memory budget, tenant rate: retry
		refuseStorage(w, err)
	case errors.Is(err, ingest.ErrUnavailable): // a distributor's produce failed: retry
		a.log.Warn("loki_push_unavailable", "err", err)
		w.Header().Set("Retry-After", lokiRetryAfter)
		lokiError(w, http.StatusServiceUnavailable, err.Error())
	default:
		a.log.Error("loki_push_failed", "err", err)
		lokiError(w, http.StatusInternalServerError, err.Error())
	}
}

// countPush counts a push's outcome in the weft_ingest_* counters.
func (a *lokiAPI) countPush(req *loki.Request, st loki.Stats, err error) {
	var verr *loki.ValidationError
	switch {
	case err == nil:
		a.counters.observeLogs(ingestPathLokiPush, int64(st.Entries), nil, 0)
	case errors.As(err, &verr):
		var by [loki.NumReasons]int64
		for r, n := range verr.ByReason {
			by[r] = int64(n)
		}
		a.counters.observeLogs(ingestPathLokiPush, int64(st.Entries), &by, 0)
	default: // nothing of the request was stored
		n := 0
		for _, s := range req.Streams {
			n += len(s.Entries)
		}
		switch {
		case errors.Is(err, logstore.ErrEmptyLabels):
			a.counters.reject(ingestPathLokiPush, ingestTypeLogLine, loki.ReasonMissingLabels.String(), int64(n))
			return
		case errors.Is(err, logstore.ErrTooOld): // the store refused the push whole
			a.counters.reject(ingestPathLokiPush, ingestTypeLogLine, loki.ReasonTooOld.String(), int64(n))
			return
		}
		a.counters.observeLogs(ingestPathLokiPush, 0, nil, int64(n))
	}
}

// Small endpoints.

func (a *lokiAPI) formatQuery(w http.ResponseWriter, r *http.Request) {
	e, err := logql.ParseExpr(r.FormValue("query"))
	if err != nil {
		a.badRequest(w, err)
		return
	}
	b := []byte(`{"status":"success","data":`)
	b = appendJSONString(b, e.String())
	writeJSON(w, append(b, '}'))
}

// buildInfo answers Loki's status/buildinfo: the Prometheus shape, with
// weft's version (Grafana shows it; Loki clients parse it as semver).
func (a *lokiAPI) buildInfo(w http.ResponseWriter, _ *http.Request) {
	bi := a.opts.BuildInfo
	b := []byte(`{"version":`)
	for _, f := range []struct{ key, v string }{
		{"", bi.Version}, {"revision", bi.Revision}, {"branch", bi.Branch},
		{"buildUser", bi.BuildUser}, {"buildDate", bi.BuildDate}, {"goVersion", bi.GoVersion},
	} {
		if f.key != "" {
			b = append(b, `,"`...)
			b = append(b, f.key...)
			b = append(b, `":`...)
		}
		b = appendJSONString(b, f.v)
	}
	writeJSON(w, append(b, '}'))
}
