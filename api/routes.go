package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weftdb/weft/ingest/redact"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/query/logql"
)

// route is one entry of the route table.
type route struct {
	pattern string       // http.ServeMux pattern
	name    string       // handler label of weft_http_* metrics; "" when h counts itself
	h       http.Handler // the handler
	ready   bool         // answers 503 until the server is ready
}

// routes is the route table of the main port: every route weft serves is
// here, built from opts. Each route has its own handler label.
func (s *Server) routes(opts Options, instr *instrumentation) ([]route, error) {
	// One workload-context mapping for every ingest path.
	ctx, err := workload.New(opts.Workload)
	if err != nil {
		return nil, fmt.Errorf("workload context: %w", err)
	}
	opts.OTLP.Ingest.Workload = opts.Workload
	opts.OTLPLogs.Ingest.Workload = opts.Workload
	opts.OTLPTraces.Ingest.Workload = opts.Workload
	opts.RemoteWrite.Ingest.Workload = ctx
	// OTLP metrics share remote write's label count limit (one key,
	// limits.remote_write.max_labels_per_series).
	if n := opts.RemoteWrite.Ingest.MaxLabelsPerSeries; n > 0 {
		opts.OTLP.Ingest.MaxLabelsPerSeries = n
	}
	opts.Loki.Ingest.Workload = ctx
	opts = compatDefaults(opts) // counters, buildinfo, deletion (compat_routes.go)
	// One redaction at ingest for every path, before anything is stored or
	// tailed (ingest/redact).
	ro := opts.Redaction
	if ro.Registerer == nil {
		ro.Registerer = opts.Registerer
	}
	red, err := redact.New(ro)
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	// Usage accounting next to the stores, after everything that may
	// refuse or change a write (ingest/usage, usage.go).
	opts.Appendable = red.Appendable(opts.Usage.Appendable(opts.Appendable))
	opts.Loki.usage, opts.OTLPLogs.usage, opts.OTLPTraces.usage = opts.Usage, opts.Usage, opts.Usage
	opts.Loki.redact, opts.OTLPLogs.redact, opts.OTLPTraces.redact = red, red, red
	// Per-tenant limits before anything else is done with a request
	// (limits.go).
	opts.Appendable = opts.Limits.Appendable(opts.Appendable)
	opts.Loki.limits, opts.OTLPLogs.limits, opts.OTLPTraces.limits = opts.Limits, opts.Limits, opts.Limits
	// One ingest budget for every path (admission.go).
	s.adm = newAdmission(opts.IngestMaxInFlightBytes, opts.IngestRetryAfter, opts.Registerer)
	opts.RemoteWrite.admission = s.adm
	opts.Loki.admission = s.adm
	opts.OTLP.admission = s.adm
	opts.OTLPLogs.admission = s.adm
	opts.OTLPTraces.admission = s.adm

	promAPI, err := newPrometheusAPI(opts, s, instr)
	if err != nil {
		return nil, fmt.Errorf("mount prometheus api: %w", err)
	}
	rs := []route{
		// Prometheus' own API counts each of its routes (newPrometheusAPI).
		{pattern: "/api/v1/", h: promAPI},
		// weft's own answers for what Prometheus takes from its scrape
		// manager or what weft serves differently.
		{pattern: "GET /api/v1/metadata", name: "/api/v1/metadata", h: &metadataHandler{reader: opts.Metadata, logger: opts.Logger}, ready: true},
		{pattern: "GET /api/v1/status/config", name: "/api/v1/status/config", h: statusConfigHandler(opts), ready: true},
		{pattern: "POST /api/v1/write", name: "/api/v1/write", h: remoteWriteRoute(opts), ready: true},
		{pattern: "POST /api/v1/admin/tsdb/snapshot", name: "/api/v1/admin/tsdb/snapshot", h: s.snapshotHandler(opts), ready: true},
		{pattern: "PUT /api/v1/admin/tsdb/snapshot", name: "/api/v1/admin/tsdb/snapshot", h: s.snapshotHandler(opts), ready: true},
		{pattern: "GET /-/healthy", name: "/-/healthy", h: textHandler("weft is Healthy.\n")},
		{pattern: "GET /-/ready", name: "/-/ready", h: readyHandler(opts.StorageHealth), ready: true},
		{pattern: "GET /metrics", name: "/metrics", h: promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
			ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError),
			EnableOpenMetrics: true,
		})},
		// Go runtime profiles (heap, CPU, goroutines), where Prometheus
		// serves them, for `go tool pprof http://host:9338/debug/pprof/heap`.
		{pattern: "GET /debug/pprof/", h: http.HandlerFunc(pprof.Index)},
		{pattern: "GET /debug/pprof/cmdline", h: http.HandlerFunc(pprof.Cmdline)},
		{pattern: "GET /debug/pprof/profile", h: http.HandlerFunc(pprof.Profile)},
		{pattern: "GET /debug/pprof/symbol", h: http.HandlerFunc(pprof.Symbol)},
		{pattern: "GET /debug/pprof/trace", h: http.HandlerFunc(pprof.Trace)},
	}

	// weft's own API for the UI (cardinality of a selector's series), and
	// the UI at "/": every path no other route takes.
	rs = append(rs, route{pattern: "GET /weft/api/v1/cardinality", name: "/weft/api/v1/cardinality", ready: true,
		h: &cardinalityHandler{store: opts.Storage, card: opts.Cardinality, logger: opts.Logger, now: time.Now}})
	rs = append(rs, route{pattern: "GET /weft/api/v1/cardinality/churn", name: "/weft/api/v1/cardinality/churn", ready: true,
		h: &churnHandler{churn: opts.Churn, logger: opts.Logger, now: time.Now}})
	rs = append(rs, investigateRoutes(opts)...) // context, investigate (investigate.go)
	rs = append(rs, usageRoutes(opts)...)       // chargeback (usage.go)
	if opts.Tenancy.Enabled {                   // status/tsdb of the request's tenant (tenancy.go)
		rs = append(rs, route{pattern: "GET /api/v1/status/tsdb", name: "/api/v1/status/tsdb", ready: true,
			h: &tenantTSDBStatus{card: opts.Cardinality, next: promAPI, logger: opts.Logger}})
	}
	if opts.UI != nil {
		rs = append(rs, route{pattern: "/", name: "/", h: opts.UI})
	}

	// OTLP/HTTP on the main port; the same receivers serve the OTLP ports.
	if opts.Appendable != nil {
		m := newMetricsSignal(opts.Appendable, opts.OTLP)
		s.otlp = append(s.otlp, m)
		rs = append(rs,
			route{pattern: "/otlp/v1/metrics", name: "/otlp/v1/metrics", h: m},
			route{pattern: "/api/v1/otlp/v1/metrics", name: "/api/v1/otlp/v1/metrics", h: m},
		)
	}
	if opts.Logs != nil {
		lo := opts.Loki
		lo.Broadcaster = s.tail
		if lo.Logger == nil {
			lo.Logger = opts.Logger
		}
		loki := newLokiAPI(opts.Logs, logql.NewEngine(opts.Limits.LogSource(opts.Logs), opts.LogQL), lo)
		rs = append(rs, loki.routes()...)

		lg := opts.OTLPLogs
		lg.Broadcaster = s.tail
		l := newLogsSignal(opts.Logs, lg)
		s.otlp = append(s.otlp, l)
		rs = append(rs, route{pattern: "/otlp/v1/logs", name: "/otlp/v1/logs", h: l})
	}
	if opts.Traces != nil {
		to := opts.Tempo
		if to.Logger == nil {
			to.Logger = opts.Logger
		}
		rs = append(rs, newTempoAPI(opts.Traces, to, opts.BuildInfo).routes()...)
		tr := newTracesSignal(opts.Traces, opts.OTLPTraces)
		s.otlp = append(s.otlp, tr)
		rs = append(rs, route{pattern: "/otlp/v1/traces", name: "/otlp/v1/traces", h: tr})
	}
	// Rules and alerts: the Loki ruler's endpoints and /-/reload
	// (rules.go); /api/v1/rules and /api/v1/alerts are Prometheus' own.
	rs = append(rs, s.rulesRoutes(opts)...)
	rs = append(rs, compatRoutes(opts)...) // federate, import, export (compat_routes.go)
	for _, sig := range s.otlp {
		if sig.initErr != nil {
			return nil, fmt.Errorf("otlp %s receiver: %w", sig.name, sig.initErr)
		}
	}
	return rs, nil
}

// remoteWriteRoute is the remote-write receiver over opts.Appendable, or a
// 404 without one.
func remoteWriteRoute(opts Options) http.Handler {
	if opts.Appendable == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "remote write receiver is not enabled", http.StatusNotFound)
		})
	}
	rw := opts.RemoteWrite
	if rw.Logger == nil {
		rw.Logger = opts.Logger
	}
	if rw.Registerer == nil {
		rw.Registerer = opts.Registerer
	}
	return NewRemoteWriteHandler(opts.Appendable, rw)
}

// snapshotHandler answers Prometheus' snapshot endpoint: Prometheus' handler
// creates a directory under the data directory before asking the storage;
// weft has no snapshots, so it answers before anything is created, with
// Prometheus' errors.
func (s *Server) snapshotHandler(opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !opts.EnableAdmin {
			respondError(w, s.logger, errorUnavailable, errors.New("admin APIs disabled"))
			return
		}
		respondError(w, s.logger, errorInternal, fmt.Errorf("create snapshot: %w", errNoSnapshots))
	})
}

// textHandler answers 200 with a fixed plain-text body.
func textHandler(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body)
	})
}
