// Package app wires the weft server: storage, PromQL engine, HTTP API and
// weft's own metrics, with a New → Start → Stop lifecycle.
package app

import (
	"log/slog"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/spanmetrics"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Defaults of the server's listeners and shutdown.
const (
	DefaultDataDir      = "./weft-data"
	DefaultHTTPAddr     = ":9338"
	DefaultOTLPGRPCAddr = ":4317"
	DefaultOTLPHTTPAddr = ":4318"
	// DefaultShutdownTimeout bounds a graceful shutdown: draining HTTP
	// requests, then flushing the head.
	DefaultShutdownTimeout = time.Minute
	// DefaultReadHeaderTimeout protects the listener against slow clients.
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included: a
	// 32 MiB remote-write body needs half a minute at 1 MB/s; a client that
	// stalls after one byte loses its connection after this, and the bytes
	// it sent are all its body holds of the ingest budget meanwhile. Loki
	// tail connections clear it once they are upgraded.
	DefaultReadTimeout = 2 * time.Minute
	// DefaultIdleTimeout closes keep-alive connections idle this long.
	DefaultIdleTimeout = 2 * time.Minute
)

// Options configure the server. Build them with DefaultOptions and override
// fields; zero values of optional fields take the defaults.
type Options struct {
	// DataDir holds the WAL and the Pebble database.
	DataDir string
	// HTTPAddr is the main listener: Prometheus API, remote write, /metrics.
	HTTPAddr string
	// OTLPGRPCAddr and OTLPHTTPAddr are the OTLP receiver's own listeners
	// (gRPC MetricsService, HTTP /v1/metrics). Empty disables one. The
	// main listener serves OTLP/HTTP too, at /otlp/v1/metrics and
	// /api/v1/otlp/v1/metrics.
	OTLPGRPCAddr, OTLPHTTPAddr string
	// OTLP configures the OTLP receiver: translation, delta state, limits.
	OTLP api.OTLPOptions
	// Workload is the workload-context mapping of every ingest path
	// (OTLP, remote write, Loki push; docs/workload-context.md).
	Workload workload.Options
	// LogStore configures the log store. Its partition duration and
	// retention are the metric store's (they share the index).
	LogStore logstore.Options
	// TraceStore configures the trace store (indexed attributes, sealing).
	// Its partition duration and retention are the substrate's
	// (Storage.SignalRetention.Traces).
	TraceStore tracestore.Options
	// SpanMetrics configures the span metrics derived from ingested spans;
	// DisableSpanMetrics turns them off.
	SpanMetrics        spanmetrics.Options
	DisableSpanMetrics bool
	// UsageFlushInterval is how often the chargeback accounting is written
	// into the metric store (docs/chargeback.md); 0 takes
	// usage.DefaultInterval.
	UsageFlushInterval time.Duration
	// Loki configures the Loki HTTP API (push limits, query defaults).
	Loki api.LokiOptions
	// LogQL configures the LogQL engine (limits, timeout).
	LogQL logql.EngineOptions
	// OTLPLogIndexLabels are the resource attributes stored as stream
	// labels of OTLP logs; nil takes otlplogs.DefaultIndexLabels.
	OTLPLogIndexLabels []string

	// Storage configures the store (retention, out-of-order window, ...).
	Storage storage.Options
	// Query configures the PromQL engine (timeout, max samples, lookback).
	Query query.EngineOptions
	// QueryMaxConcurrency is how many queries run at once; more wait for a
	// slot. Running queries are recorded in <DataDir>/queries.active and
	// logged at the next start if weft crashed while they ran.
	QueryMaxConcurrency int
	// RemoteWrite configures the remote-write receiver's limits.
	RemoteWrite api.RemoteWriteOptions
	// Rules configures rule evaluation and alerting (rules.go).
	Rules RulesOptions
	// IngestMaxInFlightBytes is the memory budget every ingest path shares
	// (api.Options.IngestMaxInFlightBytes).
	IngestMaxInFlightBytes int64
	// EnableAdminAPI serves delete_series and clean_tombstones.
	EnableAdminAPI bool
	// CORSOrigin is the regular expression of the origins whose pages may
	// read weft's answers (CORS); default "": off.
	CORSOrigin string
	// Security is TLS, authentication, cross-site and redaction settings
	// (security.go).
	Security SecurityOptions
	// Tenancy is multi-tenancy (-multi-tenant, docs/tenancy.md); off by
	// default: one anonymous tenant.
	Tenancy api.TenancyOptions
	// TenantLimits are the per-tenant limits (limits.tenants); the zero
	// value limits nothing.
	TenantLimits api.LimitsConfig
	// ReloadTenantLimits returns the limits a reload (SIGHUP, POST
	// /-/reload) applies; nil keeps TenantLimits.
	ReloadTenantLimits func() (api.LimitsConfig, error)
	// ShutdownTimeout bounds Stop when Run stops the server.
	ShutdownTimeout time.Duration
	// Web places the routes and the web UI (route prefix, external URL).
	Web WebOptions
	// Cluster is the scale-out role (-target) and its options
	// (cluster_options.go); the default is the single node.
	Cluster ClusterOptions

	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// BuildInfo is reported by /api/v1/status/buildinfo.
	BuildInfo api.BuildInfo
	// Flags is reported by /api/v1/status/flags.
	Flags map[string]string
	// ConfigYAML is the effective configuration /api/v1/status/config
	// reports (cmd/weft renders it, secrets redacted).
	ConfigYAML string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		DataDir:                DefaultDataDir,
		HTTPAddr:               DefaultHTTPAddr,
		OTLPGRPCAddr:           DefaultOTLPGRPCAddr,
		OTLPHTTPAddr:           DefaultOTLPHTTPAddr,
		Storage:                storage.DefaultOptions(),
		Query:                  query.DefaultEngineOptions(),
		QueryMaxConcurrency:    query.DefaultMaxConcurrency,
		RemoteWrite:            api.DefaultRemoteWriteOptions(),
		IngestMaxInFlightBytes: api.DefaultIngestMaxInFlightBytes,
		Rules:                  DefaultRulesOptions(),
		OTLP:                   api.DefaultOTLPOptions(),
		Workload:               workload.DefaultOptions(),
		LogStore:               logstore.DefaultOptions(),
		TraceStore:             tracestore.DefaultOptions(),
		SpanMetrics:            spanmetrics.DefaultOptions(),
		Loki:                   api.DefaultLokiOptions(),
		LogQL:                  logql.DefaultEngineOptions(),
		ShutdownTimeout:        DefaultShutdownTimeout,
		Cluster:                DefaultClusterOptions(),
		BuildInfo:              api.DefaultOptions().BuildInfo,
	}
}
