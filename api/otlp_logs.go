package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/weftdb/weft/ingest/redact"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlplogs"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/storage/logstore"
)

// OTLPLogsOptions configure the OTLP logs receiver (HTTP and gRPC).
type OTLPLogsOptions struct {
	// Ingest configures the mapping (workload context, index labels) and
	// the limits shared with the Loki push path; see otlplogs.DefaultOptions.
	// Ignored when Ingester is set.
	Ingest otlplogs.Options
	// Ingester, if set, is used instead of building one from Ingest; build
	// it with NewOTLPLogsIngester to fail start-up on invalid options.
	Ingester *otlplogs.Ingester
	// MaxRequestBytes bounds a request after decompression (HTTP 413; for
	// gRPC pass OTLPGRPCServerOptions to the server).
	MaxRequestBytes int64
	// RetryAfter is sent with 503 (Retry-After) and UNAVAILABLE (RetryInfo).
	RetryAfter time.Duration
	// Logger receives storage failures; nil discards them.
	Logger *slog.Logger
	// Broadcaster, if set, receives the records after they are stored,
	// for the Loki tail endpoint; pass the one in LokiOptions.Broadcaster.
	// It must be set before NewOTLPLogsIngester is called.
	Broadcaster *LogBroadcaster
	// Registerer receives the weft_ingest_* counters (path otlp_logs); nil
	// registers none.
	Registerer prometheus.Registerer

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

// DefaultOTLPLogsOptions returns the documented defaults (docs/logs.md).
func DefaultOTLPLogsOptions() OTLPLogsOptions {
	return OTLPLogsOptions{
		Ingest:          otlplogs.DefaultOptions(),
		MaxRequestBytes: DefaultOTLPMaxRequestBytes,
		RetryAfter:      DefaultOTLPRetryAfter,
	}
}

// NewOTLPLogsIngester validates opts and builds the Ingester writing to p
// (the log store) and publishing what it stored to opts.Broadcaster; wiring
// code calls it once, fails start-up on an error, and puts the result in
// OTLPLogsOptions.Ingester.
func NewOTLPLogsIngester(p loki.Pusher, opts OTLPLogsOptions) (*otlplogs.Ingester, error) {
	if opts.Ingester != nil {
		return opts.Ingester, nil
	}
	p = opts.usage.LogPusher(p) // what the store accepted
	if opts.Broadcaster != nil {
		p = opts.Broadcaster.Pusher(p)
	}
	p = opts.redact.LogPusher(p) // before the store and the tail
	p = opts.limits.LogPusher(p) // before anything is done with the lines
	ing, err := otlplogs.New(p, opts.Ingest)
	if err != nil {
		return nil, fmt.Errorf("otlp logs receiver: %w", err)
	}
	return ing, nil
}

// newLogsSignal is OTLP logs on the receiver core: decoded with pdata,
// mapped to log streams and pushed by an otlplogs.Ingester.
func newLogsSignal(p loki.Pusher, opts OTLPLogsOptions) *otlpSignal {
	s := &otlpSignal{
		name:    "logs",
		service: "opentelemetry.proto.collector.logs.v1.LogsService",
		limits:  newOTLPLimits(opts.MaxRequestBytes, opts.RetryAfter, opts.Logger, opts.admission),
	}
	ing, err := NewOTLPLogsIngester(p, opts)
	counters := newIngestCounters(opts.Registerer)
	s.export = func(ctx context.Context, body []byte, json bool) (otlpResult, error) {
		er := plogotlp.NewExportRequest()
		if err := otlpDecode(er, body, json); err != nil {
			return otlpResult{}, decodeErr("logs", err)
		}
		res, err := ing.Ingest(ctx, er.Logs())
		counters.observeOTLPLogs(int64(er.Logs().LogRecordCount()), res, err)
		switch {
		case errors.Is(err, otlplogs.ErrAllRejected), errors.Is(err, logstore.ErrTooOld):
			return otlpResult{}, invalidOTLP(err.Error())
		case err != nil:
			return otlpResult{}, fmt.Errorf("ingest OTLP logs: %w", err)
		}
		return otlpResult{rejected: res.Rejected, message: res.Message}, nil
	}
	s.response = func(r otlpResult, json bool) ([]byte, error) {
		resp := plogotlp.NewExportResponse()
		if r != (otlpResult{}) {
			resp.PartialSuccess().SetRejectedLogRecords(r.rejected)
			resp.PartialSuccess().SetErrorMessage(r.message)
		}
		return otlpEncode(resp, json)
	}
	return s.withInitErr(err)
}

// NewOTLPLogsHandler returns the OTLP/HTTP logs receiver writing to p (the
// log store). It does not look at the request path: mount it at /v1/logs
// on the OTLP port and at /otlp/v1/logs on the main port. It accepts POST
// with protobuf or OTLP/JSON bodies, optionally gzip-encoded, and answers in
// the request's content type: 200 with an ExportLogsServiceResponse (with
// partial_success{rejected_log_records} when some records were rejected;
// the rest is stored), 400 when the body cannot be decoded or every record
// is invalid, 413 above MaxRequestBytes after decompression, 415 for other
// content types or encodings, 503 with Retry-After when storage fails.
// Error bodies are google.rpc.Status. Safe for concurrent use.
func NewOTLPLogsHandler(p loki.Pusher, opts OTLPLogsOptions) http.Handler {
	return newLogsSignal(p, opts)
}

// writeOTLPStatus answers an error as a google.rpc.Status in content type
// ct, as the OTLP/HTTP specification asks.
func writeOTLPStatus(w http.ResponseWriter, ct string, httpCode int, code codes.Code, msg string) {
	st := status.New(code, msg).Proto()
	var (
		out []byte
		err error
	)
	if ct == otlpContentJSON {
		out, err = protojson.Marshal(st)
	} else {
		out, err = proto.Marshal(st)
	}
	if err != nil {
		http.Error(w, msg, httpCode)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(httpCode)
	_, _ = w.Write(out)
}
