package querier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/cluster/readapi"
)

// Defaults.
const (
	DefaultStatusInterval = 2 * time.Second
	DefaultTimeout        = 2 * time.Minute
)

// Options configure a querier.
type Options struct {
	// Ingesters are the ingesters' base URLs (http://host:port).
	Ingesters []string
	// TotalPartitions is the topic's partition count; 0 takes the count
	// the ingesters report.
	TotalPartitions int32
	// QueryIngestersWithin: data newer than now minus this comes from the
	// ingesters, older data from the blocks. 0 reads everything from the
	// ingesters (no blocks needed).
	QueryIngestersWithin time.Duration
	// DenyPartialResponse fails a query that some partition could not
	// answer instead of answering without it.
	DenyPartialResponse bool
	// StatusInterval is how often the ingesters' statuses are polled.
	// Default DefaultStatusInterval.
	StatusInterval time.Duration
	// Timeout bounds one request to an ingester. Default DefaultTimeout.
	Timeout time.Duration
	// Blocks reads the bucket; nil: no blocks.
	Blocks Blocks
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the querier's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock (the ingester/blocks split); nil means time.Now.
	Now func() time.Time
}

// Blocks is the bucket's data as the querier reads it (cluster/blocks'
// Reader): metric samples, log streams and traces of the uploaded blocks.
// Its Select may yield a stream more than once (once per block; the
// querier merges), and EachStreamTotal may report a stream once per block
// (the querier sums).
type Blocks interface {
	promstorage.Queryable
	readapi.LogSource
	BlockTraces // traces.go
}

// Sentinels. Inspect with errors.Is.
var (
	// ErrPartialResponse: some partitions had no ingester that answered,
	// and partial responses are denied.
	ErrPartialResponse = errors.New("partial response denied")
)

// Querier fans reads out over the cluster. Start polls the ingesters'
// statuses in a goroutine that Stop ends. Safe for concurrent use.
type Querier struct {
	opts   Options
	topo   *topology
	hc     *http.Client
	logger *slog.Logger
	m      *metrics

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a querier of opts.Ingesters.
func New(opts Options) (*Querier, error) {
	if len(opts.Ingesters) == 0 {
		return nil, errors.New("querier: no ingesters configured")
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = DefaultStatusInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hc := &http.Client{Timeout: opts.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}
	q := &Querier{opts: opts, hc: hc, logger: opts.Logger, topo: &topology{total: opts.TotalPartitions, interval: opts.StatusInterval}}
	// Tail streams last as long as their tail connections: no Timeout.
	streams := &http.Client{Transport: hc.Transport}
	for _, base := range opts.Ingesters {
		base = strings.TrimSuffix(base, "/")
		q.topo.ingesters = append(q.topo.ingesters, &ingester{base: base, client: readapi.NewClient(base, hc), stream: readapi.NewClient(base, streams)})
	}
	q.m = newMetrics(opts.Registerer, q)
	return q, nil
}

// Start polls the ingesters once (so the first queries know them) and
// then every StatusInterval until Stop.
func (q *Querier) Start(ctx context.Context) {
	q.topo.refresh(ctx)
	ctx, q.cancel = context.WithCancel(context.WithoutCancel(ctx))
	q.wg.Go(func() { q.topo.run(ctx) })
}

// Stop ends the polling and waits for it.
func (q *Querier) Stop() {
	if q.cancel != nil {
		q.cancel()
	}
	q.wg.Wait()
	q.hc.CloseIdleConnections()
}

// Ready reports whether every partition has a ready ingester.
func (q *Querier) Ready() bool {
	n := q.topo.totalPartitions()
	if n == 0 {
		return false
	}
	_, missing := q.topo.plan(n, all(n), nil)
	return len(missing) == 0
}

// Planned reports whether the querier knows the partition count (from its
// options or an ingester's status), so it can plan reads.
func (q *Querier) Planned() bool { return q.topo.totalPartitions() > 0 }

// split returns the time (unix ms) before which data is read from the
// blocks, or math.MinInt64-like "no split" (false) when the ingesters
// answer for everything.
func (q *Querier) split() (int64, bool) {
	if q.opts.Blocks == nil || q.opts.QueryIngestersWithin <= 0 {
		return 0, false
	}
	return q.opts.Now().Add(-q.opts.QueryIngestersWithin).UnixMilli(), true
}

// fanout calls call for each ingester's share of the partitions,
// concurrently; the partitions of an ingester that fails are planned once
// more on the others. It returns the results and the partitions nobody
// answered for; a bad request (the query's fault) is returned as the
// error.
func fanout[T any](ctx context.Context, q *Querier, call func(ctx context.Context, in *ingester, parts []int32, total int32) (T, error)) ([]T, []int32, error) {
	return fanoutTo(ctx, q, nil, call)
}

// fanoutTo is fanout over the partitions that only chooses among (every
// partition when only is nil); only gets the partition count, which it
// needs to name partitions.
func fanoutTo[T any](ctx context.Context, q *Querier, only func(total int32) []int32, call func(ctx context.Context, in *ingester, parts []int32, total int32) (T, error)) ([]T, []int32, error) {
	total := q.topo.totalPartitions()
	if total == 0 {
		return nil, nil, fmt.Errorf("querier: no ingester reported the partition count yet")
	}
	want := all(total)
	if only != nil {
		want = only(total)
	}
	avoid := map[*ingester]bool{}
	var out []T
	for round := 0; round < 2 && len(want) > 0; round++ {
		plan, missing := q.topo.plan(total, want, avoid)
		type result struct {
			v     T
			err   error
			a     assignment
			start time.Time
		}
		res := make([]result, len(plan))
		var wg sync.WaitGroup
		for i, a := range plan {
			wg.Go(func() {
				res[i].start = time.Now()
				res[i].v, res[i].err = call(ctx, a.in, a.partitions, total)
				res[i].a = a
			})
		}
		wg.Wait()
		want = missing
		for _, r := range res {
			q.m.fanoutDuration.Observe(time.Since(r.start).Seconds())
			if r.err == nil {
				out = append(out, r.v)
				continue
			}
			if errors.Is(r.err, readapi.ErrBadRequest) {
				return nil, nil, r.err
			}
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			q.m.fanoutErrors.WithLabelValues(r.a.in.base).Inc()
			q.logger.Warn("querier_ingester_failed", "ingester", r.a.in.base, "partitions", r.a.partitions, "err", r.err)
			avoid[r.a.in] = true
			want = append(want, r.a.partitions...)
		}
	}
	return out, want, nil
}

// partial handles partitions that had no answer: an error when partial
// responses are denied, else a warning (nil when none are missing), noted
// in ctx's tracker for the Middleware's header.
func (q *Querier) partial(ctx context.Context, missing []int32) (warning, err error) {
	if len(missing) == 0 {
		return nil, nil
	}
	q.m.partial.Inc()
	if q.opts.DenyPartialResponse {
		return nil, fmt.Errorf("%w: no ingester answered for partitions %v", ErrPartialResponse, missing)
	}
	if t := trackerFrom(ctx); t != nil {
		t.add(missing)
	}
	return fmt.Errorf("partial response: no ingester answered for partitions %v", missing), nil
}
