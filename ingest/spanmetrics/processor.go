package spanmetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/storage/traceentry"
)

// Metric and label names (Tempo's metrics-generator, which Grafana's
// defaults query).
const (
	CallsTotal   = "traces_spanmetrics_calls_total"
	Latency      = "traces_spanmetrics_latency"
	GraphTotal   = "traces_service_graph_request_total"
	GraphFailed  = "traces_service_graph_request_failed_total"
	GraphServer  = "traces_service_graph_request_server_seconds"
	GraphClient  = "traces_service_graph_request_client_seconds"
	LabelService = "service"
	LabelName    = "span_name"
	LabelKind    = "span_kind"
	LabelStatus  = "status_code"
	LabelClient  = "client"
	LabelServer  = "server"
	LabelConn    = "connection_type"
	LabelTraceID = "trace_id"
)

// Options configure a Processor.
type Options struct {
	// FlushInterval is how often the series are written to the metric
	// store. Default 15s (a scrape interval).
	FlushInterval time.Duration
	// MaxSeries bounds the series the processor keeps (span-metric groups
	// and service-graph edges together): spans of a new group beyond it are
	// counted in weft's own metrics and dropped. Default 10000.
	MaxSeries int
	// StaleAfter forgets a series that saw no span for this long (it is no
	// longer written, so it goes stale in queries). Default 15 minutes.
	StaleAfter time.Duration
	// LatencyBuckets are the upper bounds (seconds) of the latency
	// histogram. Default Tempo's: 0.002 × 2^i for i < 14 (2 ms … 16.384 s).
	LatencyBuckets []float64
	// ServiceGraph derives traces_service_graph_* from client/server span
	// pairs. Default true (DefaultOptions).
	ServiceGraph bool
	// GraphBuckets are the service-graph histograms' bounds. Default
	// Tempo's: 0.1 × 2^i for i < 8 (0.1 … 12.8 s).
	GraphBuckets []float64
	// GraphWait is how long one side of a client/server pair waits for the
	// other; GraphMaxPending bounds the waiting sides (oldest dropped
	// first). Default 10s, 10000.
	GraphWait       time.Duration
	GraphMaxPending int
	// Logger receives flush failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

func exponential(start float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start * math.Pow(2, float64(i))
	}
	return out
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		FlushInterval:   15 * time.Second,
		MaxSeries:       10000,
		StaleAfter:      15 * time.Minute,
		LatencyBuckets:  exponential(0.002, 14),
		ServiceGraph:    true,
		GraphBuckets:    exponential(0.1, 8),
		GraphWait:       10 * time.Second,
		GraphMaxPending: 10000,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.FlushInterval <= 0 {
		o.FlushInterval = d.FlushInterval
	}
	if o.MaxSeries <= 0 {
		o.MaxSeries = d.MaxSeries
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = d.StaleAfter
	}
	if len(o.LatencyBuckets) == 0 {
		o.LatencyBuckets = d.LatencyBuckets
	}
	if len(o.GraphBuckets) == 0 {
		o.GraphBuckets = d.GraphBuckets
	}
	if o.GraphWait <= 0 {
		o.GraphWait = d.GraphWait
	}
	if o.GraphMaxPending <= 0 {
		o.GraphMaxPending = d.GraphMaxPending
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Processor derives RED metrics and service-graph edges from spans and
// writes them into the metric store. ObserveSpans is safe for concurrent
// use; New starts the flush goroutine, Close stops it and flushes once
// more.
//
// Memory: per series its labels (a few hundred bytes), len(buckets)+3
// float64 counters and one exemplar per bucket (a trace ID and two
// numbers); at most MaxSeries series, so about 1.5 KiB × MaxSeries in
// all, plus GraphMaxPending waiting span sides of about 100 bytes.
type Processor struct {
	app  promstorage.AppendableV2
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	series  map[uint64]*series
	graph   *graph
	dropped int64 // spans of groups refused at MaxSeries

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// series is one label set's counter and histogram.
type series struct {
	kind    seriesKind
	base    labels.Labels // without __name__ and le
	calls   float64       // counter (span metrics: calls; graph: requests)
	failed  float64       // graph only
	hist    []*histogram  // span metrics: latency; graph: server, client
	exCalls *exemplar.Exemplar
	last    time.Time
}

type seriesKind uint8

const (
	spanSeries seriesKind = iota
	graphSeries
)

type histogram struct {
	counts []float64 // per bucket, not cumulative; last is +Inf
	sum    float64
	count  float64
	ex     []*exemplar.Exemplar // per bucket: the latest since the last flush
}

func newHistogram(n int) *histogram {
	return &histogram{counts: make([]float64, n+1), ex: make([]*exemplar.Exemplar, n+1)}
}

func (h *histogram) observe(bounds []float64, v float64, ex *exemplar.Exemplar) {
	i, _ := slices.BinarySearch(bounds, v) // first bound >= v: le is inclusive
	h.counts[i]++
	h.sum += v
	h.count++
	h.ex[i] = ex
}

// New returns a Processor writing to app and starts its flush goroutine.
func New(app promstorage.AppendableV2, opts Options) *Processor {
	opts = opts.withDefaults()
	p := &Processor{app: app, opts: opts, log: opts.Logger, series: map[uint64]*series{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if opts.ServiceGraph {
		p.graph = newGraph(opts.GraphMaxPending)
	}
	go p.loop()
	return p
}

func (p *Processor) loop() {
	defer close(p.done)
	t := time.NewTicker(p.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if err := p.Flush(context.Background()); err != nil {
				p.log.Warn("span_metrics_flush_failed", "err", err)
			}
		}
	}
}

// Close stops the flush goroutine and flushes once more. Idempotent.
func (p *Processor) Close(ctx context.Context) error {
	first := false
	p.stopOnce.Do(func() { first = true; close(p.stop) })
	<-p.done
	if !first {
		return nil
	}
	return p.Flush(ctx)
}

// Dropped returns how many spans were not counted because MaxSeries was
// reached.
func (p *Processor) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// kindLabel and statusLabel are Tempo's label values.
func kindLabel(k traceentry.SpanKind) string {
	switch k {
	case traceentry.SpanKindInternal:
		return "SPAN_KIND_INTERNAL"
	case traceentry.SpanKindServer:
		return "SPAN_KIND_SERVER"
	case traceentry.SpanKindClient:
		return "SPAN_KIND_CLIENT"
	case traceentry.SpanKindProducer:
		return "SPAN_KIND_PRODUCER"
	case traceentry.SpanKindConsumer:
		return "SPAN_KIND_CONSUMER"
	}
	return "SPAN_KIND_UNSPECIFIED"
}

func statusLabel(c traceentry.StatusCode) string {
	switch c {
	case traceentry.StatusOK:
		return "STATUS_CODE_OK"
	case traceentry.StatusError:
		return "STATUS_CODE_ERROR"
	}
	return "STATUS_CODE_UNSET"
}

func traceExemplar(id traceentry.TraceID, v float64, tNs int64) *exemplar.Exemplar {
	return &exemplar.Exemplar{Labels: labels.FromStrings(LabelTraceID, id.String()), Value: v, Ts: tNs / 1e6, HasTs: true}
}

// ObserveSpans counts the spans of one resource (service is its
// service.name, ctx its workload-context labels). It implements
// otlptraces.Observer.
func (p *Processor) ObserveSpans(service string, ctx []workload.Label, spans []traceentry.Span) {
	if service == "" {
		service = "unknown_service"
	}
	now := p.opts.Now()
	var b labels.ScratchBuilder
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range spans {
		sp := &spans[i]
		kind, status := kindLabel(sp.Kind), statusLabel(sp.StatusCode)
		h := xxhash.New()
		for _, s := range []string{service, sp.Name, kind, status} {
			_, _ = h.WriteString(s)
			_, _ = h.Write([]byte{0xff})
		}
		for _, l := range ctx {
			_, _ = h.WriteString(l.Name)
			_, _ = h.Write([]byte{0xfe})
			_, _ = h.WriteString(l.Value)
			_, _ = h.Write([]byte{0xff})
		}
		key := h.Sum64()
		s := p.series[key]
		if s == nil {
			if len(p.series) >= p.opts.MaxSeries {
				p.dropped++
				continue
			}
			b.Reset()
			b.Add(LabelService, service)
			b.Add(LabelName, sp.Name)
			b.Add(LabelKind, kind)
			b.Add(LabelStatus, status)
			for _, l := range ctx {
				if l.Name != LabelService && l.Name != LabelName && l.Name != LabelKind && l.Name != LabelStatus {
					b.Add(l.Name, l.Value)
				}
			}
			b.Sort()
			s = &series{kind: spanSeries, base: b.Labels(), hist: []*histogram{newHistogram(len(p.opts.LatencyBuckets))}}
			p.series[key] = s
		}
		d := float64(sp.DurationNanos()) / 1e9
		ex := traceExemplar(sp.TraceID, d, sp.EndUnixNano)
		s.calls++
		s.exCalls = ex
		s.hist[0].observe(p.opts.LatencyBuckets, d, ex)
		s.last = now
		if p.graph != nil {
			p.observeEdge(service, sp, now)
		}
	}
}

// Flush writes every live series at the current time and forgets those
// stale for StaleAfter. Exemplars are written once each.
func (p *Processor) Flush(ctx context.Context) error {
	now := p.opts.Now()
	t := now.UnixMilli()
	app := p.app.AppenderV2(ctx)
	var errs []error
	appendOne := func(ls labels.Labels, v float64, ex *exemplar.Exemplar, family string, typ model.MetricType) {
		opts := promstorage.AOptions{MetricFamilyName: family, Metadata: metadata.Metadata{Type: typ}}
		if ex != nil {
			opts.Exemplars = []exemplar.Exemplar{*ex}
		}
		if _, err := app.Append(0, ls, 0, t, v, nil, nil, opts); err != nil {
			var pe *promstorage.AppendPartialError
			if !errors.As(err, &pe) { // a refused exemplar keeps the sample
				errs = append(errs, err)
			}
		}
	}
	p.mu.Lock()
	if p.graph != nil {
		p.graph.expire(now.Add(-p.opts.GraphWait))
	}
	for key, s := range p.series {
		if now.Sub(s.last) > p.opts.StaleAfter {
			delete(p.series, key)
			continue
		}
		switch s.kind {
		case spanSeries:
			appendOne(withName(s.base, CallsTotal), s.calls, s.exCalls, CallsTotal, model.MetricTypeCounter)
			p.appendHist(appendOne, Latency, s.base, p.opts.LatencyBuckets, s.hist[0])
		case graphSeries:
			appendOne(withName(s.base, GraphTotal), s.calls, s.exCalls, GraphTotal, model.MetricTypeCounter)
			appendOne(withName(s.base, GraphFailed), s.failed, nil, GraphFailed, model.MetricTypeCounter)
			p.appendHist(appendOne, GraphServer, s.base, p.opts.GraphBuckets, s.hist[0])
			p.appendHist(appendOne, GraphClient, s.base, p.opts.GraphBuckets, s.hist[1])
		}
		s.exCalls = nil
	}
	p.mu.Unlock()
	if len(errs) > 0 {
		return errors.Join(fmt.Errorf("span metrics: %d appends failed: %w", len(errs), errs[0]), app.Rollback())
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("span metrics: commit: %w", err)
	}
	return nil
}

func (p *Processor) appendHist(appendOne func(labels.Labels, float64, *exemplar.Exemplar, string, model.MetricType), family string, base labels.Labels, bounds []float64, h *histogram) {
	cum := 0.0
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(bounds) {
			le = strconv.FormatFloat(bounds[i], 'f', -1, 64)
		}
		b := labels.NewBuilder(base)
		b.Set(labels.MetricName, family+"_bucket")
		b.Set(labels.BucketLabel, le)
		appendOne(b.Labels(), cum, h.ex[i], family, model.MetricTypeHistogram)
		h.ex[i] = nil
	}
	appendOne(withName(base, family+"_sum"), h.sum, nil, family, model.MetricTypeHistogram)
	appendOne(withName(base, family+"_count"), h.count, nil, family, model.MetricTypeHistogram)
}

func withName(base labels.Labels, name string) labels.Labels {
	b := labels.NewBuilder(base)
	b.Set(labels.MetricName, name)
	return b.Labels()
}
