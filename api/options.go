package api

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/promql"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/ingest/redact"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/query/logql"
)

// Storage is what the Prometheus API reads: samples, chunks and exemplars.
// Implementations must be safe for concurrent use.
type Storage interface {
	promstorage.SampleAndChunkQueryable
	promstorage.ExemplarQueryable
}

// TraceStore is the trace store as the API uses it: OTLP traces are
// written to it and the Tempo API reads it. Safe for concurrent use.
type TraceStore interface {
	TraceReader
	otlptraces.Pusher
}

// MetadataReader returns metric metadata (type, help, unit) by metric name.
// metric == "" means every metric; limit < 0 means no limit on the number of
// metric names returned. Safe for concurrent use.
type MetadataReader interface {
	Metadata(ctx context.Context, metric string, limit int) (map[string][]metadata.Metadata, error)
}

// SeriesDeleter deletes series data (tombstones) and reclaims it. Safe for
// concurrent use.
type SeriesDeleter interface {
	DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error
	CleanTombstones(ctx context.Context) error
}

// CardinalityReader reports cardinality statistics for status/tsdb: the
// top limit entries of each list, largest first. Safe for concurrent use.
type CardinalityReader interface {
	Cardinality(ctx context.Context, limit int) (Cardinality, error)
}

// Cardinality is the content of /api/v1/status/tsdb.
type Cardinality struct {
	NumSeries     uint64
	NumLabelPairs int
	// ChunkCount is the number of chunks in the head (in memory); -1 if unknown.
	ChunkCount int64
	// MinTime and MaxTime bound the samples in the head, in milliseconds.
	MinTime, MaxTime int64

	SeriesCountByMetricName     []CardinalityStat
	LabelValueCountByLabelName  []CardinalityStat
	MemoryInBytesByLabelName    []CardinalityStat
	SeriesCountByLabelValuePair []CardinalityStat
}

// CardinalityStat is one named count.
type CardinalityStat struct {
	Name  string
	Value uint64
}

// BuildInfo is reported by /api/v1/status/buildinfo and Loki's
// status/buildinfo.
type BuildInfo struct {
	Version, Revision, Branch, BuildUser, BuildDate, GoVersion string
}

// defaultBuildInfo is what a server that was told nothing reports.
func defaultBuildInfo() BuildInfo {
	return BuildInfo{Version: "unknown", Revision: "unknown", Branch: "unknown", BuildUser: "unknown", BuildDate: "unknown"}
}

// withDefaults fills empty fields from defaultBuildInfo, and GoVersion
// with the running Go version.
func (bi BuildInfo) withDefaults() BuildInfo {
	d := defaultBuildInfo()
	for _, f := range []struct {
		dst *string
		def string
	}{
		{&bi.Version, d.Version}, {&bi.Revision, d.Revision}, {&bi.Branch, d.Branch},
		{&bi.BuildUser, d.BuildUser}, {&bi.BuildDate, d.BuildDate}, {&bi.GoVersion, runtime.Version()},
	} {
		if *f.dst == "" {
			*f.dst = f.def
		}
	}
	return bi
}

// Options configures the HTTP handler. Storage and Engine are required.
type Options struct {
	// Logger receives request errors; nil means none.
	Logger *slog.Logger
	// Registerer receives weft_http_* metrics; nil means not registered.
	Registerer prometheus.Registerer
	// Gatherer is served on /metrics and status/self_metrics; nil serves an
	// empty registry.
	Gatherer prometheus.Gatherer

	// Storage is read by every query endpoint (required).
	Storage Storage
	// Engine evaluates PromQL (required); see query.NewEngine.
	Engine promql.QueryEngine
	// Metadata answers /api/v1/metadata; nil answers with no metadata.
	Metadata MetadataReader
	// Admin serves delete_series and clean_tombstones when EnableAdmin is
	// set; nil makes them answer "unavailable".
	Admin SeriesDeleter
	// Cardinality answers /api/v1/status/tsdb; nil answers an internal error.
	Cardinality CardinalityReader
	// Churn answers /weft/api/v1/cardinality/churn; nil answers that churn
	// is not available.
	Churn ChurnReader
	// Appendable receives remote write (POST /api/v1/write) and OTLP
	// metrics (/otlp/v1/metrics on this port, the OTLP ports through
	// OTLPHandler and NewOTLPGRPCServer); nil: remote write answers 404 and
	// OTLP metrics are not served.
	Appendable promstorage.AppendableV2
	// RemoteWrite configures the remote-write receiver (limits, validation).
	RemoteWrite RemoteWriteOptions
	// OTLP configures the OTLP metrics receiver.
	OTLP OTLPOptions
	// Logs is the log store: the Loki API under /loki/ and OTLP logs are
	// served when it is set.
	Logs LogStore
	// LogQL configures the LogQL engine of the Loki API.
	LogQL logql.EngineOptions
	// Tail is the broadcaster of the Loki tail connections, which every
	// push API publishes to; nil: the server makes its own. A process that
	// also stores lines another way (a scale-out ingester applying the
	// ingest log) publishes those to it too.
	Tail *LogBroadcaster
	// Loki configures the Loki API (push limits, query defaults, tail).
	Loki LokiOptions
	// OTLPLogs configures the OTLP logs receiver.
	OTLPLogs OTLPLogsOptions
	// Traces is the trace store: the Tempo API and OTLP traces are served
	// when it is set.
	Traces TraceStore
	// OTLPTraces configures the OTLP traces receiver (and span metrics).
	OTLPTraces OTLPTracesOptions
	// Tempo configures the Tempo HTTP API.
	Tempo TempoOptions
	// IngestMaxInFlightBytes is the budget of bytes every ingest request
	// together may hold (bodies, decompressed bytes, decoded estimates):
	// remote write, Loki push, OTLP over HTTP and gRPC. A request that would
	// exceed it answers 429 + Retry-After (gRPC RESOURCE_EXHAUSTED with
	// RetryInfo). Default DefaultIngestMaxInFlightBytes.
	IngestMaxInFlightBytes int64
	// IngestRetryAfter is what a refused ingest request is asked to wait.
	// Default DefaultIngestRetryAfter.
	IngestRetryAfter time.Duration
	// Workload is the one workload-context mapping of every ingest path:
	// OTLP resource attributes (metrics and logs) and the labels of remote
	// write and Loki push streams whose aliases name a canonical key
	// (docs/workload-context.md). It replaces the Workload of OTLP,
	// OTLPLogs, RemoteWrite and Loki. Default workload.DefaultOptions();
	// empty Rules turn context labels off.
	Workload workload.Options
	// Investigate answers /weft/api/v1/context, investigate, spread,
	// pivot and incidents (investigate.go, docs/investigation.md); nil
	// answers that investigation is unavailable.
	Investigate Investigator
	// Rules answers /api/v1/rules, /api/v1/alerts, /api/v1/alertmanagers
	// and the Loki ruler endpoints (rules*.go); nil answers no rules.
	Rules RuleReader
	// Reload serves POST /-/reload; nil does not mount it.
	Reload ReloadFunc
	// Handlers are further routes for embedders and tests, keyed by
	// http.ServeMux pattern; weft's own routes are all in the route table
	// (routes.go). A pattern that conflicts with one of them makes New fail.
	Handlers map[string]http.Handler
	// UI is mounted at "/" and answers every path no other route takes:
	// the web UI (package web), whose single-page fallback leaves API
	// paths to 404. nil leaves "/" unrouted (404).
	UI http.Handler

	// EnableAdmin enables the admin endpoints (delete_series,
	// clean_tombstones), like Prometheus' --web.enable-admin-api. Default
	// false.
	EnableAdmin bool
	// CORSOrigin is a regular expression of the origins whose browser
	// pages may read weft's answers (CORS). Default "": CORS is off, no
	// origin is allowed (Prometheus' -web.cors.origin defaults to ".*").
	CORSOrigin string
	// Redaction removes secrets from what every ingest path stores
	// (ingest/redact); no rules redact nothing.
	Redaction redact.Options
	// Auth authenticates every request of every listener (auth.go); the
	// zero value is no authentication.
	Auth AuthOptions
	// TrustedOrigins ("scheme://host[:port]") may send state-changing
	// requests from a browser page of another origin (crosssite.go).
	TrustedOrigins []string
	// Tenancy is multi-tenancy (tenancy.go); the zero value is off: every
	// request is the anonymous tenant's.
	Tenancy TenancyOptions
	// Limits are the per-tenant limits (limits.go); nil limits nothing.
	Limits *Limiter
	// Usage counts what every ingest path stored, per tenant, team and
	// namespace, for chargeback (ingest/usage, docs/chargeback.md); nil
	// counts nothing.
	Usage *usage.Accountant
	// UsageDisk reports the stores' bytes on disk by signal for the usage
	// report's bytes_stored_apportioned; nil reports 0.
	UsageDisk func(ctx context.Context) (chargeback.Disk, error)
	// BuildInfo is reported by status/buildinfo.
	BuildInfo BuildInfo
	// Flags is reported by status/flags (flag name → value).
	Flags map[string]string
	// ConfigYAML is weft's effective configuration, answered by
	// status/config (secrets redacted by whoever renders it). Empty answers
	// Prometheus' default configuration, as a library user without a file
	// has no other.
	ConfigYAML string
	// DataDir is reported as the working data directory.
	DataDir string
	// StorageHealth, when set, is asked by /-/ready: an error (the disk is
	// below its free-space reserve, the store failed) answers 503 with it
	// as the reason (storage_refusal.go). Nil: ready means ready.
	StorageHealth func() error
	// Retention is reported by status/runtimeinfo; 0 reports "unlimited".
	Retention time.Duration
	// LookbackDelta is the engine's lookback, used by the API for cost
	// estimation only; default 5m.
	LookbackDelta time.Duration
	// QueryTimeout is the engine's timeout, reported to the API; default 2m.
	QueryTimeout time.Duration
}

// DefaultOptions returns options with the documented defaults; Storage and
// Engine still have to be set.
func DefaultOptions() Options {
	return Options{
		LookbackDelta: query.DefaultLookbackDelta,
		QueryTimeout:  query.DefaultTimeout,
		RemoteWrite:   DefaultRemoteWriteOptions(),
		OTLP:          DefaultOTLPOptions(),
		LogQL:         logql.DefaultEngineOptions(),
		Loki:          DefaultLokiOptions(),
		OTLPLogs:      DefaultOTLPLogsOptions(),
		OTLPTraces:    DefaultOTLPTracesOptions(),
		Tempo:         DefaultTempoOptions(),
		Workload:      workload.DefaultOptions(),
		BuildInfo:     defaultBuildInfo(),
	}
}
