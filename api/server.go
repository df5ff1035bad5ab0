package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is weft's main HTTP handler: the Prometheus API under /api/v1/,
// health and readiness under /-/, and weft's own metrics on /metrics. It is
// safe for concurrent use; it owns no goroutines and needs no closing (the
// caller owns the http.Server that serves it).
type Server struct {
	mux     *http.ServeMux
	ready   atomic.Bool
	started time.Time
	logger  *slog.Logger
}

// New builds the handler. It starts not ready: /-/ready and the query
// endpoints answer 503 until SetReady(true).
func New(opts Options) (*Server, error) {
	if opts.Storage == nil {
		return nil, errors.New("api: Options.Storage is required")
	}
	if opts.Engine == nil {
		return nil, errors.New("api: Options.Engine is required")
	}
	def := DefaultOptions()
	if opts.CORSOrigin == "" {
		opts.CORSOrigin = def.CORSOrigin
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = def.LookbackDelta
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = def.QueryTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Gatherer == nil {
		opts.Gatherer = prometheus.NewRegistry()
	}

	s := &Server{mux: http.NewServeMux(), started: time.Now(), logger: opts.Logger}
	instr := newInstrumentation(opts.Registerer)

	promAPI, err := newPrometheusAPI(opts, s, instr)
	if err != nil {
		return nil, fmt.Errorf("mount prometheus api: %w", err)
	}
	s.mux.Handle("/api/v1/", promAPI)

	// weft's own answers for what Prometheus takes from its scrape manager
	// or what weft serves differently.
	md := &metadataHandler{reader: opts.Metadata, logger: opts.Logger}
	s.mux.Handle("GET /api/v1/metadata", instr.wrap("/api/v1/metadata", s.requireReady(md)))
	rw := opts.RemoteWrite
	if rw == nil {
		rw = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "remote write receiver is not enabled", http.StatusNotFound)
		})
	}
	s.mux.Handle("POST /api/v1/write", instr.wrap("/api/v1/write", s.requireReady(rw)))
	if err := s.mountRules(opts, instr); err != nil {
		return nil, err
	}

	// Prometheus' snapshot handler creates a directory under the data
	// directory before asking the storage; weft has no snapshots, so answer
	// before anything is created, with Prometheus' errors.
	snapshot := instr.wrap("/api/v1/admin/tsdb/snapshot", s.requireReady(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !opts.EnableAdmin {
			respondError(w, s.logger, errorUnavailable, errors.New("admin APIs disabled"))
			return
		}
		respondError(w, s.logger, errorInternal, fmt.Errorf("create snapshot: %w", errNoSnapshots))
	})))
	s.mux.Handle("POST /api/v1/admin/tsdb/snapshot", snapshot)
	s.mux.Handle("PUT /api/v1/admin/tsdb/snapshot", snapshot)

	s.mux.Handle("GET /-/healthy", instr.wrap("/-/healthy", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "weft is Healthy.\n")
	})))
	s.mux.Handle("GET /-/ready", instr.wrap("/-/ready", s.requireReady(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "weft is Ready.\n")
	}))))
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelError),
		EnableOpenMetrics: true,
	}))
	// Go runtime profiles (heap, CPU, goroutines), where Prometheus serves
	// them, for `go tool pprof http://host:9338/debug/pprof/heap`.
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	for _, pattern := range slices.Sorted(maps.Keys(opts.Handlers)) {
		if err := s.mount(pattern, instr.wrap(pattern, opts.Handlers[pattern])); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// mount adds a route, turning ServeMux's panic on an invalid or conflicting
// pattern into an error.
func (s *Server) mount(pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mount %q: %v", pattern, r)
		}
	}()
	s.mux.Handle(pattern, h)
	return nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetReady marks the server ready (storage open, WAL replayed) or not
// (shutting down).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Ready reports whether SetReady(true) was called last.
func (s *Server) Ready() bool { return s.ready.Load() }

// requireReady answers 503 until the server is ready, as Prometheus does.
func (s *Server) requireReady(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "Service Unavailable")
			return
		}
		h.ServeHTTP(w, r)
	})
}
