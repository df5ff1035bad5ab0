package api

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/client_golang/prometheus"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest"
)

// Remote write limits. Each default says why.
const (
	// DefaultRemoteWriteMaxBodyBytes is the largest compressed body accepted,
	// Prometheus' receiver limit (32 MiB); senders batch far below it.
	DefaultRemoteWriteMaxBodyBytes = 32 << 20
	// DefaultRemoteWriteMaxDecodedBytes bounds the decompressed body: snappy
	// expands repetitive label data several times, and a tiny body claiming a
	// gigabyte must not allocate one. Prometheus allows 32 MiB; weft allows
	// twice that so vmagent-sized batches fit.
	DefaultRemoteWriteMaxDecodedBytes = 64 << 20
	// DefaultRemoteWriteMaxInFlightBytes bounds compressed plus decoded bytes
	// of all requests being handled at once: the receiver's working memory.
	DefaultRemoteWriteMaxInFlightBytes = 512 << 20
	// DefaultRemoteWriteRetryAfter is the Retry-After given with 429: long
	// enough for in-flight batches to finish, short for senders' queues.
	DefaultRemoteWriteRetryAfter = time.Second
)

// DefaultRemoteWriteMaxConcurrency is how many requests are decoded and
// appended at once. A single Prometheus sends on up to 50 shards by default,
// and appends mostly wait on WAL group commits (more of them in flight share
// each fsync), so the limit is well above the core count; memory is bounded
// by MaxInFlightBytes, not by this. (With 4 per core, 16 concurrent senders
// on 2 cores got 429s during a burst of new series in weft-bench.)
func DefaultRemoteWriteMaxConcurrency() int { return max(64, 8*runtime.GOMAXPROCS(0)) }

// RemoteWriteOptions configures NewRemoteWriteHandler. Zero numeric fields
// take the defaults of DefaultRemoteWriteOptions.
type RemoteWriteOptions struct {
	// Logger receives one line per failed request (never per sample); nil is no-op.
	Logger *slog.Logger
	// Registerer receives the weft_remote_write_* metrics; nil registers none.
	Registerer prometheus.Registerer

	// MaxBodyBytes rejects larger compressed bodies with 413.
	MaxBodyBytes int64
	// MaxDecodedBytes rejects bodies whose decompressed size is larger with 413.
	MaxDecodedBytes int64
	// MaxConcurrency answers 429 to requests beyond this many in flight.
	MaxConcurrency int
	// MaxInFlightBytes answers 429 when admitting a request would exceed this
	// many compressed plus decoded bytes in flight, for a handler built on
	// its own. In the server every ingest path shares one budget instead
	// (Options.IngestMaxInFlightBytes). A request alone is always admitted
	// (it is already bounded by the limits above).
	MaxInFlightBytes int64

	// admission is the server's shared ingest budget (set by the route
	// table); nil builds one of MaxInFlightBytes.
	admission *admission
	// RetryAfter is sent with 429, rounded up to whole seconds.
	RetryAfter time.Duration

	// Ingest configures validation: labels per series, future skew, ...
	Ingest ingest.Options
}

// DefaultRemoteWriteOptions returns the documented defaults.
func DefaultRemoteWriteOptions() RemoteWriteOptions {
	return RemoteWriteOptions{
		MaxBodyBytes:     DefaultRemoteWriteMaxBodyBytes,
		MaxDecodedBytes:  DefaultRemoteWriteMaxDecodedBytes,
		MaxConcurrency:   DefaultRemoteWriteMaxConcurrency(),
		MaxInFlightBytes: DefaultRemoteWriteMaxInFlightBytes,
		RetryAfter:       DefaultRemoteWriteRetryAfter,
		Ingest:           ingest.DefaultOptions(),
	}
}

func (o RemoteWriteOptions) withDefaults() RemoteWriteOptions {
	d := DefaultRemoteWriteOptions()
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxDecodedBytes <= 0 {
		o.MaxDecodedBytes = d.MaxDecodedBytes
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = d.MaxConcurrency
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = d.MaxInFlightBytes
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = d.RetryAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Ingest.Logger == nil {
		o.Ingest.Logger = o.Logger
	}
	if o.admission == nil {
		o.admission = newAdmission(o.MaxInFlightBytes, o.RetryAfter, nil)
	}
	return o
}

// Response headers of remote write 2.0: what was actually written.
const (
	rwSamplesWrittenHeader    = "X-Prometheus-Remote-Write-Samples-Written"
	rwHistogramsWrittenHeader = "X-Prometheus-Remote-Write-Histograms-Written"
	rwExemplarsWrittenHeader  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

type remoteWriteHandler struct {
	app     promstorage.AppendableV2
	opts    RemoteWriteOptions
	dec     *ingest.Decoder
	slots   rwSlots
	adm     *admission
	bufs    bufPool
	metrics *rwMetrics
	retry   string // Retry-After value
}

// NewRemoteWriteHandler returns the Prometheus remote write 1.0 and 2.0
// receiver (POST /api/v1/write) over app. The message is chosen by
// Content-Type (application/x-protobuf, proto=prometheus.WriteRequest or
// proto=io.prometheus.write.v2.Request), the body is snappy block encoded.
// Responses follow Prometheus' receiver: 204 on success, 400 for malformed
// or invalid data (with the valid rest written, and on 2.0 the written
// counts in X-Prometheus-Remote-Write-*-Written headers), 413 for oversized
// bodies, 415 for unsupported types or encodings, 429 with Retry-After when
// the receiver is at its concurrency or memory limit, and 5xx only when
// storage failed in a way a retry may fix (the batch is then rolled back).
// See docs/remote-write.md. The handler is safe for concurrent use.
func NewRemoteWriteHandler(app promstorage.AppendableV2, opts RemoteWriteOptions) http.Handler {
	opts = opts.withDefaults()
	return &remoteWriteHandler{
		app:     app,
		opts:    opts,
		dec:     ingest.NewDecoder(opts.Ingest),
		slots:   make(rwSlots, opts.MaxConcurrency),
		adm:     opts.admission,
		metrics: newRWMetrics(opts.Registerer),
		retry:   strconv.Itoa(int(math.Ceil(opts.RetryAfter.Seconds()))),
	}
}

// parseRemoteWriteContentType picks the message from Content-Type, like
// Prometheus: no header or no proto parameter means 1.0.
func parseRemoteWriteContentType(ct string) (ingest.Protocol, error) {
	if strings.TrimSpace(ct) == "" {
		return ingest.ProtoV1, nil
	}
	media, params, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(media), "application/x-protobuf") {
		return 0, fmt.Errorf("unsupported content type %q: expected application/x-protobuf", ct)
	}
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "proto") {
			continue
		}
		switch strings.Trim(strings.TrimSpace(v), `"`) {
		case "prometheus.WriteRequest":
			return ingest.ProtoV1, nil
		case "io.prometheus.write.v2.Request":
			return ingest.ProtoV2, nil
		default:
			return 0, fmt.Errorf("unsupported remote write message %q: expected prometheus.WriteRequest or io.prometheus.write.v2.Request", strings.TrimSpace(v))
		}
	}
	return ingest.ProtoV1, nil
}

func (h *remoteWriteHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, 0, http.StatusMethodNotAllowed, "method not allowed: remote write takes POST")
		return
	}
	proto, err := parseRemoteWriteContentType(r.Header.Get("Content-Type"))
	if err != nil {
		h.fail(w, 0, http.StatusUnsupportedMediaType, err.Error())
		return
	}
	if enc := strings.TrimSpace(r.Header.Get("Content-Encoding")); enc != "" && !strings.EqualFold(enc, "snappy") {
		h.fail(w, proto, http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported content encoding %q: only snappy is accepted", enc))
		return
	}
	if r.ContentLength > h.opts.MaxBodyBytes {
		h.fail(w, proto, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, h.opts.MaxBodyBytes))
		return
	}
	// The body and the decoded bytes are charged to the shared ingest
	// budget as they arrive (admission.go). A concurrency slot is taken
	// only once the body is in: a client that stalls mid-body holds the
	// bytes it sent and no slot.
	t := h.adm.ticket()
	defer t.release()

	bufs := h.bufs.get()
	defer h.bufs.put(bufs)
	body, err := readBody(t.reader(r.Body), bufs.body[:0], r.ContentLength, h.opts.MaxBodyBytes)
	bufs.body = body[:0]
	switch {
	case errors.Is(err, errOverBudget):
		h.adm.refused.WithLabelValues("remote_write").Inc()
		h.throttle(w, proto, "too many remote write bytes in flight: "+err.Error())
		return
	case errors.Is(err, errBodyTooLarge):
		h.fail(w, proto, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", h.opts.MaxBodyBytes))
		return
	case err != nil:
		h.fail(w, proto, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	n, err := s2.DecodedLen(body)
	if err != nil {
		h.fail(w, proto, http.StatusBadRequest, "corrupt snappy body: "+err.Error())
		return
	}
	if int64(n) > h.opts.MaxDecodedBytes {
		h.fail(w, proto, http.StatusRequestEntityTooLarge, fmt.Sprintf("decompressed body of %d bytes exceeds the limit of %d bytes", n, h.opts.MaxDecodedBytes))
		return
	}
	if err := t.charge(int64(n)); err != nil {
		h.adm.refused.WithLabelValues("remote_write").Inc()
		h.throttle(w, proto, "too many remote write bytes in flight: "+err.Error())
		return
	}
	if !h.slots.enter() {
		h.throttle(w, proto, "too many concurrent remote write requests")
		return
	}
	defer h.slots.exit()
	if cap(bufs.decoded) < n {
		bufs.decoded = make([]byte, n)
	}
	decoded, err := s2.Decode(bufs.decoded[:n], body)
	if err != nil {
		h.fail(w, proto, http.StatusBadRequest, "corrupt snappy body: "+err.Error())
		return
	}
	batch, err := h.dec.Decode(proto, decoded)
	if err != nil {
		h.fail(w, proto, http.StatusBadRequest, err.Error())
		return
	}
	defer batch.Release()
	h.store(w, r, proto, batch)
}

// store appends the batch in one transaction and answers.
func (h *remoteWriteHandler) store(w http.ResponseWriter, r *http.Request, proto ingest.Protocol, batch *ingest.Batch) {
	app := h.app.AppenderV2(r.Context())
	res, err := batch.Append(r.Context(), app)
	if err != nil && !errors.Is(err, ingest.ErrRejected) {
		if rerr := app.Rollback(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		if _, refused := storageRefusal(err); !refused {
			h.opts.Logger.Error("remote_write_append_failed", "protocol", proto.String(), "series", batch.NumSeries(), "err", err)
		}
		h.storeFailed(w, proto, err, "store remote write batch: ")
		return
	}
	if cerr := app.Commit(); cerr != nil {
		if _, refused := storageRefusal(cerr); !refused { // the store logs refusals once, not per request
			h.opts.Logger.Error("remote_write_commit_failed", "protocol", proto.String(), "series", batch.NumSeries(), "err", cerr)
		}
		h.storeFailed(w, proto, cerr, "commit remote write batch: ")
		return
	}
	h.metrics.observe(&res)
	if proto == ingest.ProtoV2 {
		setWritten(w.Header(), res.Samples, res.Histograms, res.Exemplars)
	}
	if err != nil {
		h.opts.Logger.Debug("remote_write_rejected", "protocol", proto.String(), "rejected", res.RejectedTotal(), "written", res.Samples+res.Histograms, "err", err)
		h.metrics.request(proto, http.StatusBadRequest)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.metrics.request(proto, http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

func setWritten(hdr http.Header, samples, histograms, exemplars int) {
	hdr.Set(rwSamplesWrittenHeader, strconv.Itoa(samples))
	hdr.Set(rwHistogramsWrittenHeader, strconv.Itoa(histograms))
	hdr.Set(rwExemplarsWrittenHeader, strconv.Itoa(exemplars))
}

// fail answers a request of which nothing was written. proto is 0 when the
// message is not known yet.
func (h *remoteWriteHandler) fail(w http.ResponseWriter, proto ingest.Protocol, code int, msg string) {
	if proto == ingest.ProtoV2 {
		setWritten(w.Header(), 0, 0, 0)
	}
	if code < 500 {
		h.opts.Logger.Debug("remote_write_refused", "code", code, "err", msg)
	}
	h.metrics.request(proto, code)
	http.Error(w, msg, code)
}

// storeFailed answers a batch the store did not take: 503 with Retry-After
// when the write path is unavailable for now (a storage refusal, see
// storage_refusal.go, or ingest.ErrUnavailable: a scale-out distributor's
// produce failed), else 500. Senders retry both.
func (h *remoteWriteHandler) storeFailed(w http.ResponseWriter, proto ingest.Protocol, err error, step string) {
	if reason, ok := storageRefusal(err); ok {
		w.Header().Set("Retry-After", retryAfterSeconds(storageRetryAfter))
		h.fail(w, proto, storageRefusalCode(err), step+reason)
		return
	}
	if errors.Is(err, ingest.ErrUnavailable) {
		w.Header().Set("Retry-After", h.retry)
		h.fail(w, proto, http.StatusServiceUnavailable, step+err.Error())
		return
	}
	h.fail(w, proto, http.StatusInternalServerError, step+err.Error())
}

func (h *remoteWriteHandler) throttle(w http.ResponseWriter, proto ingest.Protocol, msg string) {
	w.Header().Set("Retry-After", h.retry)
	h.fail(w, proto, http.StatusTooManyRequests, msg)
}
