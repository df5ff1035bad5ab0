package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	v1 "github.com/prometheus/prometheus/web/api/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/index/tenant"
)

// Multi-tenancy (docs/tenancy.md): with it on, every ingest and query
// request names its tenant in X-Scope-OrgID (gRPC metadata x-scope-orgid),
// as Mimir, Loki and Tempo require, and runs with a context restricted to
// that tenant (package index/tenant): the stores write the tenant into the
// index and every index lookup intersects the tenant's postings. With it
// off, the header is ignored and every request is the anonymous tenant's,
// as before. Bearer tokens and users bound to a tenant have set the header
// already (auth.go), so this runs after authentication.

// TenancyOptions configures multi-tenancy.
type TenancyOptions struct {
	// Enabled requires X-Scope-OrgID on every ingest and query request
	// (-multi-tenant). Default false: one anonymous tenant.
	Enabled bool
	// Federation lets a query name several tenants, "a|b", and read all of
	// their data (-tenant-federation.enabled). Writes always name one.
	Federation bool
}

// Tenancy errors, each answered with the status below.
var (
	errNoTenant        = fmt.Errorf("no org id: multi-tenancy is on (-multi-tenant), send the tenant in the %s header", TenantHeader)
	errFederationOff   = errors.New("cross-tenant query: naming several tenants (a|b) needs -tenant-federation.enabled")
	errFederatedWrite  = errors.New("a write must name exactly one tenant")
	errTenantMalformed = errors.New("malformed tenant")
)

// exemptFromTenancy reports whether a path answers without a tenant: the
// probes, weft's own metrics and profiles, the reload endpoint and the UI's
// static files, which hold no tenant's data.
func exemptFromTenancy(p string) bool {
	switch {
	case unauthenticatedPath(p), p == "/metrics", p == "/-/reload", strings.HasPrefix(p, "/debug/pprof"):
		return true
	case strings.HasPrefix(p, "/api/"), strings.HasPrefix(p, "/loki/"), strings.HasPrefix(p, "/otlp/"),
		strings.HasPrefix(p, "/v1/"), strings.HasPrefix(p, "/weft/api/"), strings.HasPrefix(p, "/prometheus/"), p == "/federate":
		return false
	}
	return true // the UI's pages and assets
}

// tenantContext parses a tenant header value into ctx. write is true for
// an ingest request. The error says which status to answer.
func (o TenancyOptions) tenantContext(ctx context.Context, header string, write bool) (context.Context, int, error) {
	if !o.Enabled {
		return ctx, 0, nil
	}
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, http.StatusUnauthorized, errNoTenant
	}
	ids, err := tenant.ParseIDs(header)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("%w in %s: %w", errTenantMalformed, TenantHeader, err)
	}
	if len(ids) > 1 {
		switch {
		case write:
			return nil, http.StatusBadRequest, fmt.Errorf("%w; %s names %d", errFederatedWrite, TenantHeader, len(ids))
		case !o.Federation:
			return nil, http.StatusBadRequest, errFederationOff
		}
	}
	return tenant.WithSet(ctx, tenant.NewSet(ids...)), 0, nil
}

// requestTenant returns the tenant r names: its TenantHeader, or, for a
// WebSocket handshake (Loki's live tail) without one, the query parameter
// of the same name, since a browser cannot set headers on a WebSocket. A
// credential bound to a tenant has set the header already (auth.go), so
// the parameter can name only what the header could.
func requestTenant(r *http.Request) string {
	if h := r.Header.Get(TenantHeader); h != "" || !webSocketHandshake(r) {
		return h
	}
	return r.URL.Query().Get(TenantHeader)
}

// writeRequest reports whether r stores or deletes data (the ingest paths
// and the admin and delete APIs), which may not be federated.
func writeRequest(r *http.Request) bool {
	p := r.URL.Path
	return p == "/api/v1/write" || p == "/loki/api/v1/push" || p == "/api/prom/push" || p == "/loki/api/v1/delete" ||
		strings.HasPrefix(p, "/otlp/") || strings.HasPrefix(p, "/api/v1/otlp/") || strings.HasPrefix(p, "/v1/") ||
		strings.HasPrefix(p, "/api/v1/import") || strings.HasPrefix(p, "/api/v1/admin/")
}

// tenancyHandler runs h with the request's tenant in its context.
type tenancyHandler struct {
	o TenancyOptions
	h http.Handler
}

func (t *tenancyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if exemptFromTenancy(r.URL.Path) {
		t.h.ServeHTTP(w, r)
		return
	}
	ctx, code, err := t.o.tenantContext(r.Context(), requestTenant(r), writeRequest(r))
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	t.h.ServeHTTP(w, r.WithContext(ctx))
}

// wrapHTTP returns h behind the tenancy check, or h when it is off.
func (o TenancyOptions) wrapHTTP(h http.Handler) http.Handler {
	if !o.Enabled {
		return h
	}
	return &tenancyHandler{o: o, h: h}
}

// grpcContext reads the tenant of an OTLP gRPC call (always a write).
func (o TenancyOptions) grpcContext(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var header string
	if v := md.Get(tenantMetadata); len(v) > 0 {
		header = v[0]
	}
	ctx, code, err := o.tenantContext(ctx, header, true)
	if err != nil {
		c := codes.InvalidArgument
		if code == http.StatusUnauthorized {
			c = codes.Unauthenticated
		}
		return nil, status.Error(c, err.Error())
	}
	return ctx, nil
}

func (o TenancyOptions) grpcUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := o.grpcContext(ctx)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (o TenancyOptions) grpcStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := o.grpcContext(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, &authedStream{ServerStream: ss, ctx: ctx})
}

// tenantTSDBStatus answers /api/v1/status/tsdb for the request's tenant:
// Prometheus' own handler asks its stats interface without the request's
// context, so with multi-tenancy on weft answers it, in the same shape,
// from the index restricted to the tenant. The head's chunk count is not
// kept per tenant and is reported as 0.
type tenantTSDBStatus struct {
	card   CardinalityReader
	next   http.Handler // Prometheus' API, when the request is not restricted
	logger *slog.Logger
}

func (h *tenantTSDBStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := tenant.FromContext(r.Context()); !ok || h.card == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	limit := 10 // Prometheus' default
	if s := r.FormValue("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			respondError(w, h.logger, errorBadData, errors.New("limit must be a positive number"))
			return
		}
		limit = n
	}
	c, err := h.card.Cardinality(r.Context(), limit)
	if err != nil {
		respondError(w, h.logger, errorForContext(r, err), err)
		return
	}
	conv := func(in []CardinalityStat) []v1.TSDBStat {
		out := make([]v1.TSDBStat, 0, len(in))
		for _, s := range in {
			out = append(out, v1.TSDBStat{Name: s.Name, Value: s.Value})
		}
		return out
	}
	respond(w, h.logger, v1.TSDBStatus{
		HeadStats:                   v1.HeadStats{NumSeries: c.NumSeries, NumLabelPairs: c.NumLabelPairs, MinTime: c.MinTime, MaxTime: c.MaxTime},
		SeriesCountByMetricName:     conv(c.SeriesCountByMetricName),
		LabelValueCountByLabelName:  conv(c.LabelValueCountByLabelName),
		MemoryInBytesByLabelName:    conv(c.MemoryInBytesByLabelName),
		SeriesCountByLabelValuePair: conv(c.SeriesCountByLabelValuePair),
	})
}
