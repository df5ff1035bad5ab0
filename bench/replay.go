package bench

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftdb/weft/bench/internal/push"
)

// Endpoints are a target's write URLs, one per protocol; an empty URL means
// the target does not speak that protocol.
type Endpoints struct {
	RW   string // remote write 1.0 and 2.0
	OTLP string // OTLP/HTTP protobuf metrics
}

// SendStats summarises one replay phase.
type SendStats struct {
	Requests        int
	AcceptedSamples int
	// Rejections counts non-2xx responses (each retry counts again).
	Rejections      int
	RejectedSamples int // samples of requests given up on
	LastError       string
	Latencies       []time.Duration
	Wall            time.Duration
	MaxLag          time.Duration // behind the pacer's schedule, paced phases only
	// EndLag is the largest lag of any lane's last send: a target that keeps
	// up on average ends a step near zero even after a hiccup, one that
	// cannot ends it far behind.
	EndLag           time.Duration
	Remaining        int     // payloads not sent when the phase ended
	OfferedPerSecond float64 // 0 when unpaced
}

// SamplesPerSecond is the accepted sample rate over the phase's wall time.
func (s SendStats) SamplesPerSecond() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.AcceptedSamples) / s.Wall.Seconds()
}

func (s *SendStats) merge(o SendStats) {
	s.Requests += o.Requests
	s.AcceptedSamples += o.AcceptedSamples
	s.Rejections += o.Rejections
	s.RejectedSamples += o.RejectedSamples
	if o.LastError != "" {
		s.LastError = o.LastError
	}
	s.Latencies = append(s.Latencies, o.Latencies...)
	s.Wall += o.Wall
	s.MaxLag = max(s.MaxLag, o.MaxLag)
	s.EndLag = max(s.EndLag, o.EndLag)
}

// Replayer sends one segment's payloads, lane by lane in order. Its methods
// are not safe for concurrent use; one Replayer belongs to one target.
type Replayer struct {
	client *http.Client
	url    string
	proto  Protocol
	lanes  [][]*Payload
	pos    []int
	// RetryFor bounds how long one request is retried on 429, 5xx and
	// network errors, like a remote-write sender's queue: backoff doubles
	// from 50 ms to 5 s, or follows Retry-After (at most 5 s).
	RetryFor time.Duration
}

// NewReplayer prepares seg for sending to url.
func NewReplayer(client *http.Client, url string, seg *SegmentData, workers int) *Replayer {
	r := &Replayer{client: client, url: url, proto: seg.Protocol, lanes: make([][]*Payload, workers), pos: make([]int, workers), RetryFor: time.Minute}
	for i := range seg.Payloads {
		p := &seg.Payloads[i]
		r.lanes[p.Lane%workers] = append(r.lanes[p.Lane%workers], p)
	}
	return r
}

// Left is the number of payloads not yet sent.
func (r *Replayer) Left() int {
	n := 0
	for i, l := range r.lanes {
		n += len(l) - r.pos[i]
	}
	return n
}

// pacer hands out send times at a fixed sample rate. Safe for concurrent use.
type pacer struct {
	mu   sync.Mutex
	next time.Time
	rate float64 // samples per second
}

func (p *pacer) reserve(samples int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.next
	p.next = p.next.Add(time.Duration(float64(samples) / p.rate * float64(time.Second)))
	return t
}

// Limits bound one Run. The zero value sends everything, unpaced.
type Limits struct {
	// Rate > 0 paces sends to Rate samples/s over all lanes; MaxLag then
	// reports how far sends fell behind the schedule.
	Rate float64
	// Until, when not zero, stops starting sends after this time.
	Until time.Time
	// MaxSamples > 0 stops starting sends once this many samples were sent.
	MaxSamples int
}

// Run sends payloads until all are sent, ctx ends or a limit is reached;
// payloads not sent stay queued for the next Run.
func (r *Replayer) Run(ctx context.Context, lim Limits) SendStats {
	var (
		mu    sync.Mutex
		tot   = SendStats{OfferedPerSecond: lim.Rate}
		wg    sync.WaitGroup
		taken atomic.Int64
	)
	rate, until := lim.Rate, lim.Until
	began := time.Now()
	var pc *pacer
	if rate > 0 {
		pc = &pacer{next: began, rate: rate}
	}
	for lane := range r.lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var st SendStats
			for r.pos[lane] < len(r.lanes[lane]) && ctx.Err() == nil {
				p := r.lanes[lane][r.pos[lane]]
				if lim.MaxSamples > 0 && taken.Add(int64(p.Samples))-int64(p.Samples) >= int64(lim.MaxSamples) {
					break
				}
				if pc != nil {
					at := pc.reserve(p.Samples)
					if !until.IsZero() && at.After(until) {
						break
					}
					if d := time.Until(at); d > 0 {
						st.EndLag = 0
						select {
						case <-time.After(d):
						case <-ctx.Done():
						}
					} else {
						st.MaxLag = max(st.MaxLag, -d)
						st.EndLag = -d
					}
				} else if !until.IsZero() && time.Now().After(until) {
					break
				}
				r.send(ctx, p, &st)
				r.pos[lane]++
			}
			mu.Lock()
			tot.merge(st)
			mu.Unlock()
		}()
	}
	wg.Wait()
	tot.Wall = time.Since(began)
	tot.Remaining = r.Left()
	return tot
}

// Backoff bounds for retries.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// protocolHeader is what a sender of each protocol sets.
var protocolHeader = map[Protocol]http.Header{
	RW1:  {"Content-Type": {"application/x-protobuf"}, "Content-Encoding": {"snappy"}, "X-Prometheus-Remote-Write-Version": {"0.1.0"}, "User-Agent": {"weft-bench"}},
	RW2:  {"Content-Type": {"application/x-protobuf;proto=io.prometheus.write.v2.Request"}, "Content-Encoding": {"snappy"}, "X-Prometheus-Remote-Write-Version": {"2.0.0"}, "User-Agent": {"weft-bench"}},
	OTLP: {"Content-Type": {"application/x-protobuf"}, "Content-Encoding": {"gzip"}, "User-Agent": {"weft-bench"}},
}

// send posts p, retrying 429, 5xx and network errors like a remote-write
// queue (push.Sender), and books every attempt in st.
func (r *Replayer) send(ctx context.Context, p *Payload, st *SendStats) {
	s := push.Sender{Client: r.client, URL: r.url, Header: protocolHeader[p.Protocol], Policy: retryPolicy(r.RetryFor)}
	sendCounted(ctx, &s, p.Body, p.Samples, st)
}

// retryPolicy is the harness' retry policy: backoff from minBackoff to
// maxBackoff (or Retry-After, as long), for retryFor.
func retryPolicy(retryFor time.Duration) push.Policy {
	return push.Policy{RetryFor: retryFor, MinBackoff: minBackoff, MaxBackoff: maxBackoff, MaxRetryAfter: maxBackoff}
}

// sendCounted posts body with s and books every attempt, and the body's n
// items as accepted or rejected, in st.
func sendCounted(ctx context.Context, s *push.Sender, body []byte, n int, st *SendStats) {
	ok, last := s.Send(ctx, body, func(a push.Attempt) {
		st.Latencies = append(st.Latencies, a.Latency)
		st.Requests++
		if !a.OK() {
			st.Rejections++
		}
	})
	if last != "" {
		st.LastError = last
	}
	if ok {
		st.AcceptedSamples += n
	} else {
		st.RejectedSamples += n
	}
}

// StepOptions bound the search for the maximum sustainable ingest rate.
type StepOptions struct {
	StartRate    float64       // samples/s of the first step
	Factor       float64       // rate multiplier between steps
	StepDuration time.Duration // length of one step
	MaxSteps     int
	// MaxLag is how far the last sends of a step may lag behind the schedule
	// before the step counts as not sustained (lag growing over the step
	// means the target cannot keep up).
	MaxLag time.Duration
	// WarmupSamples are sent unpaced before the first step, so the steps
	// measure steady-state ingest rather than the creation of every series
	// (the spike measures that).
	WarmupSamples int
}

// minAchieved is the share of the offered rate a step must get acknowledged
// within its wall time (in-flight requests included) to count as sustained.
const minAchieved = 0.8

// DefaultStepOptions suit the small scale on a few cores.
func DefaultStepOptions() StepOptions {
	return StepOptions{StartRate: 25_000, Factor: 1.6, StepDuration: 3 * time.Second, MaxSteps: 12, MaxLag: time.Second}
}

// StepResult is one offered rate and what the target did with it.
type StepResult struct {
	Offered   float64 `json:"offered_samples_per_s"`
	Achieved  float64 `json:"achieved_samples_per_s"`
	MaxLagS   float64 `json:"max_lag_s"`
	EndLagS   float64 `json:"end_lag_s"`
	Rejection int     `json:"rejections"`
	Sustained bool    `json:"sustained"`
}

// MaxRate is the result of the rate search.
type MaxRate struct {
	// Max is the highest offered rate that was sustained (no rejections, lag
	// bounded). Saturated says a higher step failed; when false the workload
	// ran out first and Max is a lower bound.
	Max       float64
	Saturated bool
	Steps     []StepResult
	// Drain is the unpaced send of what the steps left over; Total covers
	// warm-up, steps and drain, so every target ends with the same data.
	Drain SendStats
	Total SendStats
}

// FindMaxRate sends the warm-up, steps the offered rate up until a step is
// not sustained or the segment runs out, then sends what is left unpaced.
// While no step has been sustained a failing step halves the rate instead,
// so a slow target still gets a figure. At most MaxSteps steps run.
func (r *Replayer) FindMaxRate(ctx context.Context, so StepOptions) MaxRate {
	var res MaxRate
	if so.WarmupSamples > 0 {
		res.Total.merge(r.Run(ctx, Limits{MaxSamples: so.WarmupSamples}))
	}
	rate := so.StartRate
	for i := 0; i < so.MaxSteps && r.Left() > 0 && ctx.Err() == nil; i++ {
		st := r.Run(ctx, Limits{Rate: rate, Until: time.Now().Add(so.StepDuration)})
		res.Total.merge(st)
		sr := StepResult{Offered: rate, Achieved: st.SamplesPerSecond(), MaxLagS: st.MaxLag.Seconds(), EndLagS: st.EndLag.Seconds(), Rejection: st.Rejections}
		var counts bool
		sr.Sustained, counts = judgeStep(st, rate, so)
		res.Steps = append(res.Steps, sr)
		if !sr.Sustained {
			if res.Max > 0 {
				res.Saturated = true
				break
			}
			rate /= 2
			continue
		}
		if counts {
			res.Max = max(res.Max, rate)
		}
		rate *= so.Factor
	}
	if r.Left() > 0 {
		res.Drain = r.Run(ctx, Limits{})
		res.Total.merge(res.Drain)
	}
	return res
}

// judgeStep says whether a step offered at rate was sustained: nothing
// refused, the last sends left on schedule, and the acknowledged rate kept
// up (a stall shows as latency, not lag, when it hits the last requests of
// a step). A step that ran out of payloads before half its duration says
// little about the rate: it is not held against the target, and does not
// count as reached (counts false). A longer one that ran out is judged like
// any other: its lag had less time to grow, but its acknowledged rate is as
// telling.
func judgeStep(st SendStats, rate float64, so StepOptions) (sustained, counts bool) {
	short := st.Remaining == 0 && st.Wall < so.StepDuration/2
	sustained = st.Rejections == 0 && st.EndLag <= so.MaxLag &&
		(short || st.SamplesPerSecond() >= minAchieved*rate)
	return sustained, sustained && !short
}

// Percentile returns the q-quantile (0..1) of ds by nearest rank.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s)) + 0.5)
	i = min(max(i-1, 0), len(s)-1)
	return s[i]
}
