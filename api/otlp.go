package api

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/otlp"
)

// OTLP receiver limits and defaults.
const (
	// DefaultOTLPMaxRequestBytes bounds an OTLP request after decompression
	// (HTTP: 413; gRPC: RESOURCE_EXHAUSTED through grpc.MaxRecvMsgSize). The
	// OpenTelemetry Collector's default batch is far below it; it protects
	// the server from gzip bombs and runaway clients.
	DefaultOTLPMaxRequestBytes = 64 << 20
	// DefaultOTLPRetryAfter is what a 503 / UNAVAILABLE asks clients to wait.
	DefaultOTLPRetryAfter = 5 * time.Second
)

// OTLPOptions configure the OTLP metrics receiver (HTTP and gRPC).
type OTLPOptions struct {
	// Ingest configures translation, workload context and delta state; see
	// otlp.DefaultOptions. Ignored when Ingester is set.
	Ingest otlp.Options
	// Ingester, if set, is used instead of building one from Ingest. Pass
	// the same Ingester to NewOTLPHandler and RegisterOTLPGRPC so that HTTP
	// and gRPC senders share delta state; build it with NewOTLPIngester.
	Ingester *otlp.Ingester
	// MaxRequestBytes bounds a request after decompression.
	MaxRequestBytes int64
	// RetryAfter is sent with 503 (Retry-After) and UNAVAILABLE (RetryInfo).
	RetryAfter time.Duration
	// Logger receives request failures; nil discards them.
	Logger *slog.Logger
	// Registerer receives the weft_ingest_* counters (path otlp_metrics);
	// nil registers none.
	Registerer prometheus.Registerer

	// admission is the server's shared ingest budget (set by the route
	// table); nil builds one of DefaultIngestMaxInFlightBytes.
	admission *admission
}

// DefaultOTLPOptions returns the documented defaults (docs/otlp.md).
func DefaultOTLPOptions() OTLPOptions {
	return OTLPOptions{
		Ingest:          otlp.DefaultOptions(),
		MaxRequestBytes: DefaultOTLPMaxRequestBytes,
		RetryAfter:      DefaultOTLPRetryAfter,
	}
}

// NewOTLPIngester validates opts and builds the Ingester that NewOTLPHandler
// and RegisterOTLPGRPC would build; wiring code calls it once, fails start-up
// on an error, and puts the result in OTLPOptions.Ingester for both.
// extraRejections are storage errors meaning "invalid sample" (for weft's
// storage, storage.ErrInvalidLabels).
func NewOTLPIngester(app promstorage.AppendableV2, opts OTLPOptions, extraRejections ...error) (*otlp.Ingester, error) {
	if opts.Ingester != nil {
		return opts.Ingester, nil
	}
	ing, err := otlp.New(app, opts.Ingest, extraRejections...)
	if err != nil {
		return nil, fmt.Errorf("otlp receiver: %w", err)
	}
	return ing, nil
}

// otlpLimits are the request limits, admission and logger every OTLP
// receiver (metrics, logs, traces) applies, with zero values replaced by the
// defaults.
type otlpLimits struct {
	maxBytes   int64
	retryAfter time.Duration
	logger     *slog.Logger
	adm        *admission
}

func newOTLPLimits(maxBytes int64, retryAfter time.Duration, logger *slog.Logger, adm *admission) otlpLimits {
	if adm == nil {
		adm = newAdmission(0, 0, nil)
	}
	l := otlpLimits{maxBytes: maxBytes, retryAfter: retryAfter, logger: logger, adm: adm}
	if l.maxBytes <= 0 {
		l.maxBytes = DefaultOTLPMaxRequestBytes
	}
	if l.retryAfter <= 0 {
		l.retryAfter = DefaultOTLPRetryAfter
	}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	return l
}
