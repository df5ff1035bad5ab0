package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// Server is weft's HTTP and OTLP front end. Its main handler serves, on one
// port, every route of the route table (routes.go): the Prometheus API under
// /api/v1/, remote write, OTLP/HTTP, the Loki API, health and readiness
// under /-/, weft's own metrics on /metrics. OTLPHandler and NewOTLPGRPCServer
// serve the same OTLP receivers on the OTLP ports. It is safe for concurrent
// use; it owns no goroutines. Close ends the open Loki tail connections (the
// caller owns the servers that serve the handlers).
type Server struct {
	mux     *http.ServeMux
	handler http.Handler // mux behind the cross-site guard (crosssite.go)
	ready   atomic.Bool
	started time.Time
	logger  *slog.Logger

	// otlp holds the OTLP receivers, one per signal, shared by the main
	// port, the OTLP HTTP port and the OTLP gRPC server (one delta state).
	otlp []*otlpSignal
	// tail publishes stored log lines to the Loki tail connections.
	tail *LogBroadcaster
	// adm is the ingest budget every ingest path shares.
	adm *admission
	// instr counts requests on every listener: the main port's routes, the
	// OTLP HTTP port's and the OTLP gRPC server's calls.
	instr *instrumentation
	// trustedOrigins may write from a browser (crosssite.go).
	trustedOrigins []string
	// auth authenticates every listener's requests; nil when off.
	auth *authenticator
	// tenancy puts each request's tenant in its context (tenancy.go).
	tenancy TenancyOptions
}

// New builds the handlers. It starts not ready: /-/ready and the query
// endpoints answer 503 until SetReady(true).
func New(opts Options) (*Server, error) {
	if opts.Storage == nil {
		return nil, errors.New("api: Options.Storage is required")
	}
	if opts.Engine == nil {
		return nil, errors.New("api: Options.Engine is required")
	}
	def := DefaultOptions()
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

	tail := opts.Tail
	if tail == nil {
		tail = NewLogBroadcaster()
	}
	s := &Server{mux: http.NewServeMux(), started: time.Now(), logger: opts.Logger, tail: tail}
	instr := newInstrumentation(opts.Registerer)
	s.instr = instr
	table, err := s.routes(opts, instr)
	if err != nil {
		return nil, err
	}
	methods := methodsByPath(table, opts.Handlers)
	for _, r := range table {
		h := r.h
		if r.pattern == "/" {
			h = wrongMethod(methods, h)
		}
		if r.ready {
			h = s.requireReady(h)
		}
		if r.name != "" {
			h = instr.wrap(r.name, h)
		}
		if err := s.mount(r.pattern, h); err != nil {
			return nil, err
		}
	}
	for _, pattern := range slices.Sorted(maps.Keys(opts.Handlers)) {
		if err := s.mount(pattern, instr.wrap(pattern, opts.Handlers[pattern])); err != nil {
			return nil, err
		}
	}
	if s.auth, err = newAuthenticator(opts.Auth); err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	s.tenancy = opts.Tenancy
	if s.handler, err = newCrossSiteGuard(s.auth.wrapHTTP(s.tenancy.wrapHTTP(opts.Limits.wrapHTTP(s.mux))), opts.TrustedOrigins); err != nil {
		return nil, err
	}
	s.trustedOrigins = opts.TrustedOrigins
	return s, nil
}

// OTLPHandler returns the OTLP/HTTP receivers for the OTLP port (default
// :4318): POST /v1/metrics and /v1/logs (when the log store is set).
func (s *Server) OTLPHandler() http.Handler {
	mux := http.NewServeMux()
	for _, sig := range s.otlp {
		path := "/v1/" + sig.name
		mux.Handle(path, s.instr.wrap(path, sig)) // its own handler label, beside /otlp/v1/... of the main port
	}
	h, err := newCrossSiteGuard(s.auth.wrapHTTP(s.tenancy.wrapHTTP(mux)), s.trustedOrigins)
	if err != nil { // checked by New already
		panic("BUG: " + err.Error())
	}
	return h
}

// NewOTLPGRPCServer returns a gRPC server with the OTLP services of every
// signal registered (MetricsService, LogsService), the receivers' codec and
// request size limit, and the extra options given. The caller serves and
// stops it.
func (s *Server) NewOTLPGRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	var maxBytes int64
	for _, sig := range s.otlp {
		maxBytes = max(maxBytes, sig.limits.maxBytes)
	}
	opts := append(otlpGRPCServerOptions(maxBytes, s.adm), grpc.ChainUnaryInterceptor(s.instr.unary))
	if s.auth != nil { // after the counting: refused calls are counted too
		opts = append(opts, grpc.ChainUnaryInterceptor(s.auth.grpcUnary), grpc.ChainStreamInterceptor(s.auth.grpcStream))
	}
	if s.tenancy.Enabled { // after authentication, which sets the tenant of a bound credential
		opts = append(opts, grpc.ChainUnaryInterceptor(s.tenancy.grpcUnary), grpc.ChainStreamInterceptor(s.tenancy.grpcStream))
	}
	g := grpc.NewServer(append(opts, extra...)...)
	for _, sig := range s.otlp {
		sig.register(g)
	}
	return g
}

// Close ends the open Loki tail connections: http.Server.Shutdown does not
// wait for hijacked (WebSocket) connections. Idempotent.
func (s *Server) Close() { s.tail.Close() }

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
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

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

// methodsByPath lists, for each exact path a method-qualified pattern
// serves ("POST /loki/api/v1/push"), the methods it is served for.
func methodsByPath(table []route, extra map[string]http.Handler) map[string][]string {
	out := map[string][]string{}
	add := func(pattern string) {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok || strings.HasSuffix(path, "/") || strings.Contains(path, "{") {
			return
		}
		if !slices.Contains(out[path], method) {
			out[path] = append(out[path], method)
		}
	}
	for _, r := range table {
		add(r.pattern)
	}
	for p := range extra {
		add(p)
	}
	return out
}

// wrongMethod answers 405 with the Allow header for a path that only other
// methods serve, before the catch-all next (the UI) would answer 404: a
// GET of /loki/api/v1/push reaches "/" because ServeMux prefers a matching
// pattern to a 405.
func wrongMethod(methods map[string][]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, ok := methods[r.URL.Path]; ok {
			allow := slices.Sorted(slices.Values(ms))
			w.Header().Set("Allow", strings.Join(allow, ", "))
			http.Error(w, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, " or "), http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}
