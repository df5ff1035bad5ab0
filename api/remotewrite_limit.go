package api

import (
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/ingest"
)

// rwSlots bounds the remote write receiver's concurrency without queueing: a
// request beyond it is refused at once (429). Its memory is the shared
// ingest admission's (admission.go). Safe for concurrent use.
type rwSlots chan struct{}

// enter takes a concurrency slot; false means none is free.
func (s rwSlots) enter() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s rwSlots) exit() { <-s }

// maxPooledBuffer bounds the buffers kept for reuse: typical batches are tens
// to hundreds of KiB; a rare 32 MiB request must not pin its buffers.
const maxPooledBuffer = 4 << 20

type rwBuffers struct{ body, decoded []byte }

type bufPool struct{ p sync.Pool }

func (p *bufPool) get() *rwBuffers {
	if b, ok := p.p.Get().(*rwBuffers); ok {
		return b
	}
	return &rwBuffers{}
}

func (p *bufPool) put(b *rwBuffers) {
	if cap(b.body) > maxPooledBuffer {
		b.body = nil
	}
	if cap(b.decoded) > maxPooledBuffer {
		b.decoded = nil
	}
	p.p.Put(b)
}

var errBodyTooLarge = errors.New("request body too large")

// maxBodyPrealloc bounds what readBody allocates up front from a declared
// Content-Length: a client that declares 32 MiB and sends one byte must not
// make the server hold 32 MiB; past it the buffer grows as bytes arrive.
const maxBodyPrealloc = 1 << 20

// readBody appends r to buf[:0], failing with errBodyTooLarge beyond limit.
// sizeHint is the Content-Length (-1 if unknown).
func readBody(r io.Reader, buf []byte, sizeHint, limit int64) ([]byte, error) {
	if sizeHint > 0 && int64(cap(buf)) < sizeHint+1 {
		buf = make([]byte, 0, min(sizeHint+1, maxBodyPrealloc)) // +1: read EOF without growing
	}
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, errBodyTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// rwMetrics are the receiver's counters; all no-ops when not registered.
type rwMetrics struct {
	requests *prometheus.CounterVec // by protocol, code
	ingested *prometheus.CounterVec // by type
	rejected *prometheus.CounterVec // by reason

	samples, histograms, exemplars prometheus.Counter
	byReason                       [ingest.NumReasons]prometheus.Counter

	// shared are the weft_ingest_* counters of every ingest path.
	shared *ingestCounters
}

func newRWMetrics(reg prometheus.Registerer) *rwMetrics {
	m := &rwMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_remote_write_requests_total",
			Help: "Remote write requests handled, by protocol (1.0, 2.0, unknown) and status code.",
		}, []string{"protocol", "code"}),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_remote_write_samples_ingested_total",
			Help: "Samples, histograms and exemplars written by the remote write receiver.",
		}, []string{"type"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_remote_write_samples_rejected_total",
			Help: "Samples, histograms and exemplars the remote write receiver refused, by reason.",
		}, []string{"reason"}),
	}
	if reg != nil {
		m.requests = registerOrExisting(reg, m.requests)
		m.ingested = registerOrExisting(reg, m.ingested)
		m.rejected = registerOrExisting(reg, m.rejected)
	}
	m.samples = m.ingested.WithLabelValues("float")
	m.histograms = m.ingested.WithLabelValues("histogram")
	m.exemplars = m.ingested.WithLabelValues("exemplar")
	for r := range ingest.NumReasons {
		m.byReason[r] = m.rejected.WithLabelValues(r.String())
	}
	m.shared = newIngestCounters(reg)
	return m
}

// registerOrExisting registers c, or returns the collector already registered
// under the same descriptor (a second handler on the same registry).
func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

func (m *rwMetrics) observe(res *ingest.Result) {
	m.shared.observeRemoteWrite(ingestPathRemoteWrite, res)
	if res.Samples > 0 {
		m.samples.Add(float64(res.Samples))
	}
	if res.Histograms > 0 {
		m.histograms.Add(float64(res.Histograms))
	}
	if res.Exemplars > 0 {
		m.exemplars.Add(float64(res.Exemplars))
	}
	for r, n := range res.Rejected {
		if n > 0 {
			m.byReason[r].Add(float64(n))
		}
	}
}

func (m *rwMetrics) request(proto ingest.Protocol, code int) {
	p := "unknown"
	switch proto {
	case ingest.ProtoV1:
		p = "1.0"
	case ingest.ProtoV2:
		p = "2.0"
	}
	m.requests.WithLabelValues(p, statusText(code)).Inc()
}

// statusText avoids strconv allocations for the common codes.
func statusText(code int) string {
	switch code {
	case 204:
		return "204"
	case 400:
		return "400"
	case 413:
		return "413"
	case 415:
		return "415"
	case 429:
		return "429"
	case 500:
		return "500"
	}
	return strconv.Itoa(code)
}
