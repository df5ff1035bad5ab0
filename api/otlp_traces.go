package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/weftdb/weft/ingest/redact"
	"log/slog"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/ingest/usage"
)

// OTLPTracesOptions configure the OTLP traces receiver (HTTP and gRPC).
type OTLPTracesOptions struct {
	// Ingest configures the mapping of resources to trace streams
	// (workload context, index labels); see otlptraces.DefaultOptions. The
	// server's Options.Workload replaces Ingest.Workload.
	Ingest otlptraces.Options
	// SpanMetrics, if set, receives every stored span (RED metrics and
	// service-graph edges into the metric store; ingest/spanmetrics).
	SpanMetrics otlptraces.Observer
	// MaxRequestBytes bounds a request after decompression (HTTP 413; gRPC
	// RESOURCE_EXHAUSTED).
	MaxRequestBytes int64
	// RetryAfter is sent with 503 (Retry-After) and UNAVAILABLE (RetryInfo).
	RetryAfter time.Duration
	// Logger receives storage failures; nil discards them.
	Logger *slog.Logger

	// admission is the server's shared ingest budget (set by the route
	// table); nil builds one of DefaultIngestMaxInFlightBytes.
	admission *admission
	// redact is the server's redaction at ingest (set by the route
	// table; nil redacts nothing).
	redact *redact.Redactor
	// limits are the per-tenant limits (set by the route table; nil
	// limits nothing).
	limits *Limiter
	// usage counts the accepted spans (set by the route table; nil counts
	// nothing).
	usage *usage.Accountant
}

// DefaultOTLPTracesOptions returns the documented defaults (docs/traces.md).
func DefaultOTLPTracesOptions() OTLPTracesOptions {
	return OTLPTracesOptions{
		Ingest:          otlptraces.DefaultOptions(),
		MaxRequestBytes: DefaultOTLPMaxRequestBytes,
		RetryAfter:      DefaultOTLPRetryAfter,
	}
}

// newTracesSignal is OTLP traces on the receiver core: decoded with pdata,
// mapped to trace resources and written to the trace store by an
// otlptraces.Ingester. Invalid spans are rejected one by one
// (partial_success.rejected_spans with the reasons); a request whose every
// span is invalid is a 400 / INVALID_ARGUMENT; a store failure is a 503 /
// UNAVAILABLE.
func newTracesSignal(p otlptraces.Pusher, opts OTLPTracesOptions) *otlpSignal {
	s := &otlpSignal{
		name:    "traces",
		service: "opentelemetry.proto.collector.trace.v1.TraceService",
		limits:  newOTLPLimits(opts.MaxRequestBytes, opts.RetryAfter, opts.Logger, opts.admission),
	}
	ing, err := otlptraces.New(opts.limits.TracePusher(opts.redact.TracePusher(opts.usage.TracePusher(p))), opts.SpanMetrics, opts.Ingest)
	if err != nil {
		err = fmt.Errorf("otlp traces receiver: %w", err)
	}
	s.export = func(ctx context.Context, body []byte, json bool) (otlpResult, error) {
		er := ptraceotlp.NewExportRequest()
		if err := otlpDecode(er, body, json); err != nil {
			return otlpResult{}, decodeErr("traces", err)
		}
		res, err := ing.Ingest(ctx, er.Traces())
		switch {
		case errors.Is(err, otlptraces.ErrAllRejected):
			return otlpResult{}, invalidOTLP(err.Error())
		case err != nil:
			return otlpResult{}, fmt.Errorf("ingest OTLP traces: %w", err)
		}
		return otlpResult{rejected: res.Rejected, message: res.Message}, nil
	}
	s.response = func(r otlpResult, json bool) ([]byte, error) {
		resp := ptraceotlp.NewExportResponse()
		if r != (otlpResult{}) {
			resp.PartialSuccess().SetRejectedSpans(r.rejected)
			resp.PartialSuccess().SetErrorMessage(r.message)
		}
		return otlpEncode(resp, json)
	}
	return s.withInitErr(err)
}
