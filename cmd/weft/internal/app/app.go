package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/ingest/spanmetrics"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logstore"
)

// App is a running weft server. New opens the storage and builds the
// handlers, Start opens the listeners, Stop drains them, flushes the head and
// closes the storage. Methods are safe for concurrent use; Stop is
// idempotent.
type App struct {
	opts   Options
	logger *slog.Logger
	role   *role              // the scale-out target's part (cluster.go)
	sub    *storage.Substrate // nil for the stateless targets
	db     *storage.DB
	logs   *logstore.Store
	// usage counts ingest for chargeback and writes it into the metric
	// store (ingest/usage); nil without a store.
	usage *usage.Accountant
	// spanMetrics derives metrics from stored spans; nil when disabled.
	spanMetrics *spanmetrics.Processor
	tracker     *promql.ActiveQueryTracker
	api         *api.Server
	rules       *rulesState // rule evaluation and alerting (rules.go)
	srv         *http.Server
	// otlpHTTP and otlpGRPC serve the OTLP receiver on its own ports; nil
	// when their address is empty.
	otlpHTTP *http.Server
	otlpGRPC *grpc.Server
	// web is the web configuration file (TLS of every listener); nil
	// without one.
	web *webConfig

	mu        sync.Mutex
	ln        net.Listener
	listeners map[string]net.Listener // every open listener by name, for Addrs
	serving   sync.WaitGroup          // the serve goroutines of the OTLP listeners
	serveErr  chan error              // receives the main listener's terminal error, once

	stopOnce sync.Once
	stopErr  error
}

// New opens the storage in opts.DataDir and builds the HTTP handlers. On
// error everything opened so far is closed again.
func New(ctx context.Context, opts Options) (_ *App, err error) {
	def := DefaultOptions()
	if opts.DataDir == "" {
		opts.DataDir = def.DataDir
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = def.HTTPAddr
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = def.ShutdownTimeout
	}
	if opts.QueryMaxConcurrency <= 0 {
		opts.QueryMaxConcurrency = def.QueryMaxConcurrency
	}
	if opts.OTLP.Ingester == nil && opts.OTLP.Ingest.TranslationStrategy == "" {
		opts.OTLP = def.OTLP // zero OTLP options take the defaults
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	// The scale-out target (-target) decides what is built besides the
	// routes: no store for the stateless roles (cluster.go).
	role, err := newRole(ctx, &opts, logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			role.close()
		}
	}()

	// One substrate owns Pebble, the index, the WAL and the retention
	// clock, and opens every signal store on them: log streams share the
	// index with metric series, so one label selector finds both.
	var (
		sub  *storage.Substrate
		db   *storage.DB
		logs *logstore.Store
	)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	limits, err := api.NewLimiter(opts.TenantLimits, reg) // per-tenant limits (api/limits.go)
	if err != nil {
		return nil, fmt.Errorf("tenant limits: %w", err)
	}
	if role.store {
		sopts := opts.Storage
		sopts.AdmitSeries = func(ctx context.Context, tid string, ls labels.Labels) error {
			if usage.Flushing(ctx) { // weft's own accounting is not refused (docs/chargeback.md)
				return nil
			}
			return limits.AdmitSeries(ctx, tid, ls)
		}
		sopts.Logger = logger.With("component", "storage")
		sopts.Logs = opts.LogStore
		sopts.Traces = opts.TraceStore
		if sopts.Traces.ResourceLabels, err = otlptraces.ResourceLabels(otlptraces.Options{Workload: opts.Workload}); err != nil {
			return nil, fmt.Errorf("trace resource labels: %w", err)
		}
		sub, err = storage.OpenSubstrate(ctx, opts.DataDir, sopts)
		if err != nil {
			return nil, fmt.Errorf("open storage %s: %w", opts.DataDir, err)
		}
		defer func() {
			if err != nil {
				err = errors.Join(err, sub.Close())
			}
		}()
		db, logs = sub.Metrics(), sub.Logs()
		limits.SetSeriesCounter(tenantSeriesCounter(db)) // cardinality.go
		reg.MustRegister(newStorageCollector(db))
	}

	tracker, err := promql.NewActiveQueryTracker(opts.DataDir, opts.QueryMaxConcurrency, logger.With("component", "active queries"))
	if err != nil {
		return nil, fmt.Errorf("active query tracker: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tracker.Close())
		}
	}()

	qopts := opts.Query
	qopts.ActiveQueryTracker = tracker
	qopts.Logger = logger.With("component", "query engine")
	qopts.Registerer = reg

	aopts := api.DefaultOptions()
	aopts.Logger = logger.With("component", "api")
	aopts.Registerer = reg
	aopts.Gatherer = reg
	aopts.Storage = db
	aopts.Engine = query.NewEngine(qopts)
	aopts.Metadata = db
	aopts.Admin = db
	card := api.StoreCardinality{DB: db}
	aopts.Cardinality, aopts.Churn = card, card
	aopts.Appendable = db
	aopts.RemoteWrite = opts.RemoteWrite
	aopts.RemoteWrite.Logger = logger.With("component", "remote write")
	aopts.OTLP = opts.OTLP
	aopts.OTLP.Logger = logger.With("component", "otlp")
	aopts.Logs = logs
	aopts.LogQL = opts.LogQL
	aopts.Loki = opts.Loki
	aopts.Loki.Logger = logger.With("component", "loki")
	aopts.Workload = opts.Workload
	aopts.IngestMaxInFlightBytes = opts.IngestMaxInFlightBytes
	// OTLP logs share the Loki push limits and the metrics receiver's
	// transport limits.
	aopts.OTLPLogs.Ingest.Loki = opts.Loki.Ingest
	aopts.OTLPLogs.MaxRequestBytes = opts.OTLP.MaxRequestBytes
	aopts.OTLPLogs.RetryAfter = opts.OTLP.RetryAfter
	aopts.OTLPLogs.Logger = logger.With("component", "otlp logs")
	// Traces: the Tempo API and OTLP traces over the trace store, with
	// span metrics into the metric store.
	if sub != nil {
		aopts.Traces = sub.Traces()
		aopts.StorageHealth = sub.Health // /-/ready: disk below its reserve, store failed
	}
	iv, err := newInvestigator(sub, aopts.Engine, opts.Workload, logger)
	if err != nil {
		return nil, err
	}
	if iv != nil {
		aopts.Investigate = iv
	}
	aopts.OTLPTraces.MaxRequestBytes = opts.OTLP.MaxRequestBytes
	aopts.OTLPTraces.RetryAfter = opts.OTLP.RetryAfter
	aopts.OTLPTraces.Logger = logger.With("component", "otlp traces")
	aopts.Tempo.Logger = logger.With("component", "tempo")
	var spanMetrics *spanmetrics.Processor
	if !opts.DisableSpanMetrics && db != nil {
		smo := opts.SpanMetrics
		smo.Logger = logger.With("component", "span metrics")
		spanMetrics = spanmetrics.New(db, smo)
		aopts.OTLPTraces.SpanMetrics = spanMetrics
		defer func() {
			if err != nil {
				err = errors.Join(err, spanMetrics.Close(context.Background()))
			}
		}()
	}
	aopts.OTLPLogs.Ingest.IndexLabels = opts.OTLPLogIndexLabels
	aopts.EnableAdmin = opts.EnableAdminAPI
	aopts.CORSOrigin = opts.CORSOrigin
	aopts.Tenancy = opts.Tenancy
	aopts.Limits = limits
	var acct *usage.Accountant
	if db != nil { // chargeback: usage series written into the store (docs/chargeback.md)
		uo := usage.DefaultOptions()
		uo.Sink, uo.Logger = db, logger.With("component", "usage")
		if opts.UsageFlushInterval > 0 {
			uo.Interval = opts.UsageFlushInterval
		}
		acct = usage.New(uo)
		aopts.Usage = acct
		aopts.UsageDisk = usageDisk(db)
	}
	webCfg, err := applySecurity(opts, &aopts) // security.go
	if err != nil {
		return nil, err
	}
	aopts.BuildInfo = opts.BuildInfo
	aopts.Flags = opts.Flags
	aopts.ConfigYAML = opts.ConfigYAML
	aopts.DataDir = opts.DataDir
	aopts.Retention = opts.Storage.Retention
	aopts.LookbackDelta = opts.Query.LookbackDelta
	aopts.QueryTimeout = opts.Query.Timeout
	if role.configure != nil {
		if err := role.configure(sub, &aopts, reg); err != nil {
			return nil, fmt.Errorf("target %s: %w", role.target, err)
		}
		if role.investigator != nil {
			iv = role.investigator
		}
	}
	if aopts.UI, err = newUI(opts.Web); err != nil {
		return nil, err
	}
	// Rules run on the engines the API queries with (rules.go), over the
	// store: the stateless scale-out targets have none (cluster.go).
	var rules *rulesState
	rstore, rlogs := ruleStore{app: db, q: db}, logql.Source(logs)
	if role.rules != nil {
		rstore, rlogs = role.rules.st, role.rules.logs
	}
	if role.store || role.rules != nil {
		ro := opts.Rules
		if iv != nil && ro.Ruler.Investigator == nil {
			// Firing alerts are kept as incidents; opted-in ones carry their
			// probable cause (investigate.go).
			ro.Ruler.Investigator = alertInvestigator{iv}
		}
		// Each tenant's rules run as that tenant (ruler/tenants.go).
		ro.Ruler.MultiTenant = opts.Tenancy.Enabled
		shard := role.rules.sharding()
		if shard != nil {
			ro.Ruler.Shard = shard.owns
		}
		if rules, err = newRules(ro, rstore, aopts.Engine, logql.NewEngine(rlogs, opts.LogQL), reg, logger); err != nil {
			return nil, err
		}
		if shard != nil {
			shard.reshard = rules.ruler.Reshard
		}
		defer func() {
			if err != nil {
				rules.stop(false)
			}
		}()
		rules.reloadLimits = limitsReloader(aopts.Limits, opts.ReloadTenantLimits)
		aopts.Rules, aopts.Reload = rules.ruler, rules.reload
	} else if err := noRules(role.target, opts.Rules); err != nil {
		return nil, err
	}
	srvAPI, err := api.New(aopts)
	if err != nil {
		return nil, fmt.Errorf("build http api: %w", err)
	}
	var inner http.Handler = srvAPI
	if role.wrap != nil {
		inner = role.wrap(srvAPI)
	}
	handler, err := withRoutePrefix(opts.Web, inner)
	if err != nil {
		return nil, err
	}

	a := &App{
		opts:        opts,
		logger:      logger,
		role:        role,
		sub:         sub,
		db:          db,
		logs:        logs,
		spanMetrics: spanMetrics,
		usage:       acct,
		tracker:     tracker,
		api:         srvAPI,
		rules:       rules,
		web:         webCfg,
		srv: &http.Server{
			Handler:           webCfg.withHeaders(handler),
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		},
		listeners: map[string]net.Listener{},
		serveErr:  make(chan error, 1),
	}
	if opts.OTLPHTTPAddr != "" {
		a.otlpHTTP = newHTTPServer(webCfg.withHeaders(srvAPI.OTLPHandler()), logger)
	}
	if opts.OTLPGRPCAddr != "" {
		a.otlpGRPC = srvAPI.NewOTLPGRPCServer(append(webCfg.grpcCreds(),
			// Idle connections and handshakes are bounded like HTTP's.
			grpc.ConnectionTimeout(DefaultReadHeaderTimeout),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: DefaultIdleTimeout}),
		)...)
	}
	return a, nil
}

// newHTTPServer is every HTTP listener's server: header, request and idle
// timeouts bound slow and idle clients.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Start opens the HTTP listener and serves in a goroutine owned by the App
// (Stop waits for it). The server is ready once Start returns.
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln != nil {
		return errors.New("app already started")
	}
	// Open every listener before serving on any, so that a port in use
	// fails Start without leaving half a server running.
	addrs := []struct {
		name, addr string
		on         bool
	}{
		{"http", a.opts.HTTPAddr, true},
		{"otlp_http", a.opts.OTLPHTTPAddr, a.otlpHTTP != nil},
		{"otlp_grpc", a.opts.OTLPGRPCAddr, a.otlpGRPC != nil},
	}
	for _, l := range addrs {
		if !l.on {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, open := range a.listeners {
				_ = open.Close()
			}
			clear(a.listeners)
			return fmt.Errorf("listen on %s (%s): %w", l.addr, l.name, err)
		}
		a.listeners[l.name] = ln
	}
	a.ln = a.listeners["http"]
	go func() {
		err := serveHTTP(a.srv, a.ln, a.web)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		a.serveErr <- err
	}()
	if ln := a.listeners["otlp_http"]; ln != nil {
		a.serving.Go(func() {
			if err := serveHTTP(a.otlpHTTP, ln, a.web); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.logger.Error("otlp http listener failed", "err", err)
			}
		})
	}
	if ln := a.listeners["otlp_grpc"]; ln != nil {
		a.serving.Go(func() {
			if err := a.otlpGRPC.Serve(ln); err != nil {
				a.logger.Error("otlp grpc listener failed", "err", err)
			}
		})
	}
	a.rules.start()
	a.usage.Start()
	if err := a.role.run(ctx, a.api.SetReady); err != nil {
		return fmt.Errorf("start %s: %w", a.role.target, err)
	}
	attrs := []any{"data_dir", a.opts.DataDir, "target", a.role.target}
	for name, ln := range a.listeners {
		attrs = append(attrs, name+"_addr", ln.Addr().String())
	}
	a.logger.Info("weft started", attrs...)
	return nil
}

// Addrs returns the address of every open listener by name ("http",
// "otlp_http", "otlp_grpc"); empty before Start.
func (a *App) Addrs() map[string]net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]net.Addr, len(a.listeners))
	for name, ln := range a.listeners {
		out[name] = ln.Addr()
	}
	return out
}

// Addr returns the HTTP listener's address, or nil before Start.
func (a *App) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return nil
	}
	return a.ln.Addr()
}

// ServeErr returns a channel that receives the listener's error if serving
// fails (nil after a clean Stop). It receives at most one value.
func (a *App) ServeErr() <-chan error { return a.serveErr }

// Stop shuts down in order: mark not ready, drain HTTP requests (new ones are
// refused), flush the head into Pebble, close the storage. It is bounded by
// ctx and idempotent: later calls return the first call's result.
func (a *App) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() {
		a.role.halt()
		a.api.SetReady(false)
		var errs []error
		a.mu.Lock()
		started := a.ln != nil
		a.mu.Unlock()
		if started {
			if err := a.srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("drain http: %w", err))
				_ = a.srv.Close()
			}
			if err := <-a.serveErr; err != nil {
				errs = append(errs, fmt.Errorf("serve http: %w", err))
			}
			a.api.Close() // Shutdown does not wait for WebSocket (tail) connections
			if a.otlpHTTP != nil {
				if err := a.otlpHTTP.Shutdown(ctx); err != nil {
					errs = append(errs, fmt.Errorf("drain otlp http: %w", err))
					_ = a.otlpHTTP.Close()
				}
			}
			if a.otlpGRPC != nil {
				stopGRPC(ctx, a.otlpGRPC)
			}
			a.serving.Wait()
		}
		a.rules.stop(started) // before the stores close: it writes ALERTS
		if err := a.tracker.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close active query tracker: %w", err))
		}
		if a.spanMetrics != nil { // after the receivers, before the metric store
			if err := a.spanMetrics.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close span metrics: %w", err))
			}
		}
		switch err := a.usage.Stop(ctx); { // after the receivers, before the metric store
		case errors.Is(err, storage.ErrUnavailable):
			// A full disk or a failed store refuses the last minute's
			// counts, as it refuses every write; the stop goes on.
			a.logger.Warn("usage_not_flushed", "reason", err)
		case err != nil:
			errs = append(errs, fmt.Errorf("flush usage: %w", err))
		}
		a.role.close() // an ingester stops consuming before its store flushes
		if a.sub != nil {
			errs = append(errs, stopStorage(ctx, a.sub, a.logger))
		}
		a.stopErr = errors.Join(errs...)
		a.logger.Info("weft stopped", "err", a.stopErr)
	})
	return a.stopErr
}

// Run starts a server with opts, serves until ctx is done or the listener
// fails, then stops it within opts.ShutdownTimeout.
func Run(ctx context.Context, opts Options) error {
	a, err := New(ctx, opts)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return errors.Join(err, a.Stop(context.Background()))
	}
	var failed <-chan struct{} // nil for the stateless targets: never ready
	if a.sub != nil {
		failed = a.sub.Failed()
	}
	select {
	case <-ctx.Done():
		a.logger.Info("shutting down", "cause", context.Cause(ctx))
	case <-failed:
		// Requests parked inside the failed store never finish: drain
		// briefly, then close their connections (storage_stop.go).
		a.logger.Error("shutting down: storage failed", "err", a.sub.Health())
		stopCtx, cancel := context.WithTimeout(context.Background(), min(a.opts.ShutdownTimeout, failedStoreDrain))
		defer cancel()
		return errors.Join(a.sub.Health(), a.Stop(stopCtx))
	case err := <-a.serveErr:
		// Put it back: Stop waits for the serve goroutine's result and
		// reports it.
		a.serveErr <- err
		a.logger.Error("http listener failed", "err", err)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownTimeout)
	defer cancel()
	return a.Stop(stopCtx)
}

// stopGRPC drains s gracefully, or stops it hard when ctx ends first.
func stopGRPC(ctx context.Context, s *grpc.Server) {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.Stop()
		<-done
	}
}
