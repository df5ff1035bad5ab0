package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/klauspost/compress/gzip"
	promstorage "github.com/prometheus/prometheus/storage"
	"google.golang.org/grpc/codes"
)

const (
	otlpContentProto = "application/x-protobuf"
	otlpContentJSON  = "application/json"
)

// NewOTLPHandler returns the OTLP/HTTP metrics receiver. It does not look at
// the request path: mount it at /v1/metrics on the OTLP port (default
// :4318) and at /otlp/v1/metrics and /api/v1/otlp/v1/metrics on the main
// port. It accepts POST with protobuf (application/x-protobuf) or OTLP/JSON
// (application/json) bodies, optionally gzip-encoded, and answers in the
// request's content type: 200 with an ExportMetricsServiceResponse (with
// partial_success when some points were rejected), 400 when the body cannot
// be decoded or every point is invalid, 413 above MaxRequestBytes after
// decompression, 415 for other content types or encodings, 503 with
// Retry-After when storage fails. Error bodies are google.rpc.Status.
//
// Safe for concurrent use. Invalid options make every request answer 500;
// use NewOTLPIngester to detect them at start-up.
func NewOTLPHandler(app promstorage.AppendableV2, opts OTLPOptions) http.Handler {
	return newMetricsSignal(app, opts)
}

var otlpBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readOTLPRequest does what every OTLP/HTTP handler does before decoding:
// POST only, a protobuf or JSON content type, gzip or no encoding, at most
// maxBytes after decompression, and initErr (invalid options) answered for
// every request. It answers any failure itself and returns ok false;
// otherwise the body, valid until release is called.
func readOTLPRequest(w http.ResponseWriter, req *http.Request, maxBytes int64, initErr error, t *ticket) (ct string, body []byte, release func(), ok bool) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method "+req.Method+" not allowed, use POST", http.StatusMethodNotAllowed)
		return "", nil, nil, false
	}
	ct, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || (ct != otlpContentProto && ct != otlpContentJSON) {
		// No OTLP content type to answer in: plain text.
		http.Error(w, fmt.Sprintf("unsupported content type %q, want %s or %s", req.Header.Get("Content-Type"), otlpContentProto, otlpContentJSON), http.StatusUnsupportedMediaType)
		return "", nil, nil, false
	}
	if initErr != nil {
		writeOTLPStatus(w, ct, http.StatusInternalServerError, codes.Internal, initErr.Error())
		return "", nil, nil, false
	}

	r := io.Reader(req.Body)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			writeOTLPStatus(w, ct, http.StatusBadRequest, codes.InvalidArgument, "read gzip body: "+err.Error())
			return "", nil, nil, false
		}
		defer gz.Close()
		r = gz
	default:
		writeOTLPStatus(w, ct, http.StatusUnsupportedMediaType, codes.InvalidArgument, fmt.Sprintf("unsupported content encoding %q, want gzip or none", enc))
		return "", nil, nil, false
	}
	buf := otlpBufPool.Get().(*bytes.Buffer)
	buf.Reset()
	release = func() {
		if buf.Cap() <= 4<<20 { // keep pooled buffers small
			buf.Reset()
			otlpBufPool.Put(buf)
		}
	}
	// The (decompressed) bytes are charged to the ingest budget as they
	// arrive.
	n, err := buf.ReadFrom(io.LimitReader(t.reader(r), maxBytes+1))
	if errors.Is(err, errOverBudget) {
		release()
		w.Header().Set("Retry-After", t.a.retryAfterSeconds())
		writeOTLPStatus(w, ct, http.StatusTooManyRequests, codes.ResourceExhausted, err.Error()+"; retry later")
		return "", nil, nil, false
	}
	if err != nil {
		release()
		writeOTLPStatus(w, ct, http.StatusBadRequest, codes.InvalidArgument, "read body: "+err.Error())
		return "", nil, nil, false
	}
	if n > maxBytes {
		release()
		writeOTLPStatus(w, ct, http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
			fmt.Sprintf("request body exceeds %d bytes after decompression", maxBytes))
		return "", nil, nil, false
	}
	return ct, buf.Bytes(), release, true
}
