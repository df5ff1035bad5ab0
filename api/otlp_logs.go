package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlplogs"
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
	if opts.Broadcaster != nil {
		p = opts.Broadcaster.Pusher(p)
	}
	ing, err := otlplogs.New(p, opts.Ingest)
	if err != nil {
		return nil, fmt.Errorf("otlp logs receiver: %w", err)
	}
	return ing, nil
}

// otlpLogsReceiver is what the HTTP and gRPC front ends share.
type otlpLogsReceiver struct {
	otlpLimits
	ing      *otlplogs.Ingester
	err      error // invalid options: every request answers it
	counters *ingestCounters
}

func newOTLPLogsReceiver(p loki.Pusher, opts OTLPLogsOptions) *otlpLogsReceiver {
	r := &otlpLogsReceiver{otlpLimits: newOTLPLimits(opts.MaxRequestBytes, opts.RetryAfter, opts.Logger), counters: newIngestCounters(opts.Registerer)}
	r.ing, r.err = NewOTLPLogsIngester(p, opts)
	if r.err != nil {
		r.logger.Error("otlp_logs_receiver_misconfigured", "err", r.err)
	}
	return r
}

// classifyOTLPLogs maps an Ingest outcome to the answer of both transports.
func classifyOTLPLogs(err error) otlpOutcome {
	switch {
	case err == nil:
		return otlpOK
	case errors.Is(err, otlplogs.ErrAllRejected):
		return otlpInvalid
	default:
		return otlpUnavailable
	}
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
	return &otlpLogsHTTPHandler{r: newOTLPLogsReceiver(p, opts)}
}

type otlpLogsHTTPHandler struct {
	r *otlpLogsReceiver
}

func (h *otlpLogsHTTPHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ct, raw, release, ok := readOTLPRequest(w, req, h.r.maxBytes, h.r.err)
	if !ok {
		return
	}
	defer release()

	var err error
	er := plogotlp.NewExportRequest()
	if ct == otlpContentJSON {
		err = er.UnmarshalJSON(raw)
	} else {
		err = er.UnmarshalProto(raw)
	}
	if err != nil {
		writeOTLPStatus(w, ct, http.StatusBadRequest, codes.InvalidArgument, "decode OTLP logs: "+err.Error())
		return
	}

	res, err := h.r.ingest(req.Context(), er.Logs())
	switch classifyOTLPLogs(err) {
	case otlpUnavailable:
		h.r.logger.Warn("otlp_logs_ingest_failed", "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(int((h.r.retryAfter+999_999_999)/1e9)))
		writeOTLPStatus(w, ct, http.StatusServiceUnavailable, codes.Unavailable, err.Error())
		return
	case otlpInvalid:
		writeOTLPStatus(w, ct, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}

	resp := plogotlp.NewExportResponse()
	if res.Rejected > 0 || res.Message != "" {
		resp.PartialSuccess().SetRejectedLogRecords(res.Rejected)
		resp.PartialSuccess().SetErrorMessage(res.Message)
	}
	writeOTLPResponse(w, ct, resp.MarshalJSON, resp.MarshalProto)
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
