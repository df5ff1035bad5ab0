package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/weftdb/weft/bench/internal/push"
)

// Target is a weft (or anything speaking its public APIs) to replay into.
type Target struct {
	// URL is the HTTP base: remote write goes to URL+"/api/v1/write", Loki
	// push to URL+"/loki/api/v1/push".
	URL string
	// OTLPURL is the OTLP/HTTP base: logs go to OTLPURL+"/v1/logs", traces
	// to OTLPURL+"/v1/traces". Default URL+"/otlp" (weft's main port; pass
	// http://host:4318 for the dedicated listener).
	OTLPURL string
	// Headers are set on every request (X-Scope-OrgID, Authorization).
	Headers map[string]string
	// Client sends the requests; nil: one with a one-minute timeout.
	Client *http.Client
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Traces sends the spans to OTLPURL/v1/traces. Off by default: weft's
	// trace receiver is new, and a target without one would reject them.
	Traces bool
	// RetryFor bounds how long one request is retried on 429, 5xx and
	// network errors (backoff from 50 ms doubling to 2 s, or the target's
	// Retry-After, at most 5 s). Default 30s.
	RetryFor time.Duration
	// Logger gets one line per signal; nil discards.
	Logger *slog.Logger
}

// SignalReport is what one signal's replay delivered.
type SignalReport struct {
	Signal    string `json:"signal"`
	URL       string `json:"url,omitempty"`
	Skipped   bool   `json:"skipped,omitempty"`
	Requests  int    `json:"requests"` // acknowledged with a 2xx
	Attempts  int    `json:"attempts"` // every POST, retries included
	Sent      int    `json:"sent"`     // items acknowledged: samples, lines or spans
	Stale     int    `json:"stale_markers,omitempty"`
	Rejected  int    `json:"rejected"` // items of requests given up on
	Bytes     int64  `json:"bytes"`
	LastError string `json:"last_error,omitempty"`
}

// Report is what a replay delivered, per signal.
type Report struct {
	Metrics  SignalReport  `json:"metrics"`
	Loki     SignalReport  `json:"loki_logs"`
	OTLPLogs SignalReport  `json:"otlp_logs"`
	Traces   SignalReport  `json:"traces"`
	Wall     time.Duration `json:"wall_ns"`
}

// ErrIncomplete says a replay gave up on some requests.
var ErrIncomplete = errors.New("replay incomplete")

// defaultRetryFor is how long a request is retried by default.
const defaultRetryFor = 30 * time.Second

// Backoff bounds of the retries.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
	maxRetryAt = 5 * time.Second
)

// Replay sends p to t in rounds, one time block after the other: in a
// round one goroutine per lane and signal (so at most 4 x p.Lanes requests
// in flight) sends that lane's requests of the block in order. It returns
// when everything was sent or given up on, or ctx ended; the error
// is ErrIncomplete (wrapped, with the last failure) when anything was not
// delivered. Replay owns and joins every goroutine it starts; it is safe to
// call concurrently (Payloads are not modified).
func Replay(ctx context.Context, p *Payloads, t Target, o ReplayOptions) (Report, error) {
	if t.URL == "" {
		return Report{}, fmt.Errorf("%w: no target URL", ErrBadOptions)
	}
	base := strings.TrimRight(t.URL, "/")
	otlp := strings.TrimRight(t.OTLPURL, "/")
	if otlp == "" {
		otlp = base + "/otlp"
	}
	if o.RetryFor <= 0 {
		o.RetryFor = defaultRetryFor
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	signals := []struct {
		rep  *SignalReport
		reqs []Request
		url  string
		hdr  map[string]string
		skip bool
	}{
		{nil, p.Metrics, base + "/api/v1/write", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy", "X-Prometheus-Remote-Write-Version": "0.1.0"}, false},
		{nil, p.Loki, base + "/loki/api/v1/push", map[string]string{"Content-Type": "application/json"}, false},
		{nil, p.OTLPLogs, otlp + "/v1/logs", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, false},
		{nil, p.Traces, otlp + "/v1/traces", map[string]string{"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, !o.Traces},
	}
	var rep Report
	reps := []*SignalReport{&rep.Metrics, &rep.Loki, &rep.OTLPLogs, &rep.Traces}
	names := []string{"metrics", "loki", "otlp_logs", "traces"}
	nLanes := max(p.Lanes, 1)
	// queues[block][signal][lane] are the requests of a round, in order.
	var queues [][4][][]*Request
	for i, sg := range signals {
		r := reps[i]
		r.Signal, r.URL, r.Skipped = names[i], sg.url, sg.skip
		if sg.skip {
			continue
		}
		for j := range sg.reqs {
			q := &sg.reqs[j]
			for len(queues) <= q.Block {
				queues = append(queues, [4][][]*Request{})
			}
			if queues[q.Block][i] == nil {
				queues[q.Block][i] = make([][]*Request, nLanes)
			}
			queues[q.Block][i][q.Lane%nLanes] = append(queues[q.Block][i][q.Lane%nLanes], q)
		}
	}
	var senders [4]*push.Sender
	for i, sg := range signals {
		h := http.Header{"User-Agent": {"weft-bench-scenario"}}
		for k, v := range sg.hdr {
			h.Set(k, v)
		}
		for k, v := range t.Headers {
			h.Set(k, v)
		}
		senders[i] = &push.Sender{Client: client, URL: sg.url, Header: h,
			Policy: push.Policy{RetryFor: o.RetryFor, MinBackoff: minBackoff, MaxBackoff: maxBackoff, MaxRetryAfter: maxRetryAt}}
	}
	began := time.Now()
	var mu sync.Mutex
	for _, round := range queues {
		// One round: every lane of every signal sends its requests of the
		// block; the next block starts when all are done.
		var wg sync.WaitGroup
		for i, lanes := range round {
			r := reps[i]
			for _, lane := range lanes {
				if len(lane) == 0 {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					var st SignalReport
					for _, q := range lane {
						if ctx.Err() != nil {
							st.Rejected += q.Items
							continue
						}
						send(ctx, senders[i], q, &st)
					}
					mu.Lock()
					r.merge(st)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
	}
	rep.Wall = time.Since(began)
	var failed []string
	for _, r := range reps {
		if !r.Skipped {
			lg.Info("scenario_replayed", "signal", r.Signal, "sent", r.Sent, "rejected", r.Rejected, "requests", r.Requests, "attempts", r.Attempts)
		}
		if r.Rejected > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d not delivered (%s)", r.Signal, r.Rejected, r.LastError))
		}
	}
	if len(failed) > 0 {
		return rep, fmt.Errorf("%w: %s", ErrIncomplete, strings.Join(failed, "; "))
	}
	return rep, ctx.Err()
}

func (r *SignalReport) merge(o SignalReport) {
	r.Requests += o.Requests
	r.Attempts += o.Attempts
	r.Sent += o.Sent
	r.Stale += o.Stale
	r.Rejected += o.Rejected
	r.Bytes += o.Bytes
	if o.LastError != "" {
		r.LastError = o.LastError
	}
}

// send posts q with the replay's retry policy and books it in st.
func send(ctx context.Context, s *push.Sender, q *Request, st *SignalReport) {
	ok, last := s.Send(ctx, q.Body, func(push.Attempt) { st.Attempts++ })
	if last != "" {
		st.LastError = last
	}
	if !ok {
		st.Rejected += q.Items
		return
	}
	st.Requests++
	st.Sent += q.Items
	st.Stale += q.Stale
	st.Bytes += int64(len(q.Body))
}

// Run generates scenario name, encodes it with the default options and
// replays it into t: the one call a test needs.
func Run(ctx context.Context, name string, o Options, t Target, ro ReplayOptions) (*Data, Report, error) {
	d, err := Generate(name, o)
	if err != nil {
		return nil, Report{}, err
	}
	p, err := d.Encode(EncodeOptions{})
	if err != nil {
		return d, Report{}, err
	}
	rep, err := Replay(ctx, p, t, ro)
	return d, rep, err
}
