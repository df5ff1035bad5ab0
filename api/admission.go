package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Ingest admission: every ingest path (remote write, Loki push, OTLP over
// HTTP and gRPC, every signal) charges the bytes it holds for a request to
// one budget, as they arrive: the body as it is read, the decompressed bytes
// as they are produced, the decoded request's estimated size before it is
// decoded. A request that would take the total past the budget is refused at
// once with a retryable answer (429 + Retry-After, RESOURCE_EXHAUSTED with
// RetryInfo), so overload costs the server nothing and senders back off; a
// request alone is always admitted, so one large request never starves. A
// stalled body holds only the bytes it sent, plus
// at most one charge chunk.

// Admission defaults.
const (
	// DefaultIngestMaxInFlightBytes is the budget of bytes all ingest
	// requests may hold at once. Remote write alone had 512 MiB; the budget is
	// now shared by every path.
	DefaultIngestMaxInFlightBytes = 512 << 20
	// DefaultIngestRetryAfter is what a refused request asks to wait.
	DefaultIngestRetryAfter = 5 * time.Second
	// decodedFactor estimates the memory of a decoded OTLP or Loki request
	// per byte of its (decompressed) protobuf or JSON: pdata's and weft's
	// decoded structures hold the strings plus per-item headers, 2-4x the
	// wire bytes on the payloads of docs/otlp.md.
	decodedFactor = 3
	// chargeChunk is how many bytes a body read charges at least at a time,
	// so that small reads do not each touch the shared counter.
	chargeChunk = 64 << 10
)

// errOverBudget: admitting more bytes would exceed the ingest budget.
var errOverBudget = errors.New("too many ingest bytes in flight")

// admission is the shared ingest budget. Safe for concurrent use.
type admission struct {
	max        int64
	inflight   atomic.Int64
	retryAfter time.Duration
	refused    *prometheus.CounterVec // by path
}

func newAdmission(maxBytes int64, retryAfter time.Duration, reg prometheus.Registerer) *admission {
	if maxBytes <= 0 {
		maxBytes = DefaultIngestMaxInFlightBytes
	}
	if retryAfter <= 0 {
		retryAfter = DefaultIngestRetryAfter
	}
	a := &admission{max: maxBytes, retryAfter: retryAfter, refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weft_ingest_admission_refused_total",
		Help: "Ingest requests refused because the bytes all ingest requests hold would exceed the budget (limits.ingest.max_in_flight_bytes), by path.",
	}, []string{"path"})}
	if reg != nil {
		a.refused = registerOrExisting(reg, a.refused)
		inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "weft_ingest_in_flight_bytes",
			Help: "Bytes the ingest requests in flight hold (bodies, decompressed bytes, decoded estimates).",
		}, func() float64 { return float64(a.inflight.Load()) })
		_ = reg.Register(inflight) // a second server on one registry keeps the first
	}
	return a
}

// full reports whether the budget is used up (the gRPC tap refuses new
// streams then, before their messages are read).
func (a *admission) full() bool { return a.inflight.Load() >= a.max }

// retryAfterSeconds is Retry-After's value.
func (a *admission) retryAfterSeconds() string {
	return strconv.Itoa(int((a.retryAfter + time.Second - 1) / time.Second))
}

// ticket is one request's share of the budget. Not safe for concurrent use;
// release it once, when the request is done.
type ticket struct {
	a    *admission
	held int64
}

func (a *admission) ticket() *ticket { return &ticket{a: a} }

// charge adds n bytes to the request's share; errOverBudget when they do
// not fit. With nothing else in flight any amount fits.
func (t *ticket) charge(n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		cur := t.a.inflight.Load()
		if cur > t.held && cur+n > t.a.max {
			return errOverBudget
		}
		if t.a.inflight.CompareAndSwap(cur, cur+n) {
			t.held += n
			return nil
		}
	}
}

// release gives the request's share back.
func (t *ticket) release() {
	t.a.inflight.Add(-t.held)
	t.held = 0
}

// refuse counts a refusal of path and answers 429 with Retry-After in plain
// text (the OTLP core answers in its own encoding).
func (t *ticket) refuse(w http.ResponseWriter, path string) {
	t.a.refused.WithLabelValues(path).Inc()
	w.Header().Set("Retry-After", t.a.retryAfterSeconds())
	http.Error(w, fmt.Sprintf("%v: the server holds its ingest budget of %d bytes; retry later", errOverBudget, t.a.max), http.StatusTooManyRequests)
}

// reader returns r charging every byte read to the ticket, a chargeChunk at
// a time when the last one is used up: a read that does not fit fails with
// errOverBudget, and a stalled body holds at most one chunk it has not sent.
func (t *ticket) reader(r io.Reader) io.Reader { return &chargedReader{r: r, t: t} }

type chargedReader struct {
	r      io.Reader
	t      *ticket
	credit int64 // charged, not yet read
}

func (c *chargedReader) Read(p []byte) (int, error) {
	if c.credit == 0 {
		if err := c.t.charge(chargeChunk); err != nil {
			return 0, err
		}
		c.credit = chargeChunk
	}
	if int64(len(p)) > c.credit {
		p = p[:c.credit] // read no more than is charged: what arrives, not what a buffer could hold
	}
	n, err := c.r.Read(p)
	c.credit -= int64(n)
	return n, err
}

// Reader and Charge make a ticket an ingest/loki.Budget.
func (t *ticket) Reader(r io.Reader) io.Reader { return t.reader(r) }

// Charge charges n bytes more.
func (t *ticket) Charge(n int64) error { return t.charge(n) }
