package spanmetrics

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	promhist "github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/storage/traceentry"
)

// recorder is an AppendableV2 that keeps the last committed value and
// exemplars of every series.
type recorder struct {
	mu    sync.Mutex
	vals  map[string]float64
	exs   map[string][]exemplar.Exemplar
	pend  map[string]float64
	pendE map[string][]exemplar.Exemplar
}

func newRecorder() *recorder {
	return &recorder{vals: map[string]float64{}, exs: map[string][]exemplar.Exemplar{}}
}

func (r *recorder) AppenderV2(context.Context) promstorage.AppenderV2 {
	r.mu.Lock()
	r.pend, r.pendE = map[string]float64{}, map[string][]exemplar.Exemplar{}
	return r
}

func (r *recorder) Append(_ promstorage.SeriesRef, ls labels.Labels, _, _ int64, v float64, _ *promhist.Histogram, _ *promhist.FloatHistogram, o promstorage.AOptions) (promstorage.SeriesRef, error) {
	r.pend[ls.String()] = v
	r.pendE[ls.String()] = append(r.pendE[ls.String()], o.Exemplars...)
	return 1, nil
}

func (r *recorder) Commit() error {
	for k, v := range r.pend {
		r.vals[k] = v
	}
	for k, v := range r.pendE {
		r.exs[k] = append(r.exs[k], v...)
	}
	r.mu.Unlock()
	return nil
}

func (r *recorder) Rollback() error { r.mu.Unlock(); return nil }

func span(trace, id, parent byte, kind traceentry.SpanKind, status traceentry.StatusCode, d time.Duration) traceentry.Span {
	sp := traceentry.Span{TraceID: traceentry.TraceID{15: trace}, SpanID: traceentry.SpanID{7: id}, Name: "infer",
		Kind: kind, StatusCode: status, StartUnixNano: 1e18, EndUnixNano: 1e18 + int64(d)}
	if parent != 0 {
		sp.ParentSpanID = traceentry.SpanID{7: parent}
	}
	return sp
}

// TestSpanMetrics checks the RED series (names, labels with the workload
// context, cumulative buckets, trace_id exemplars) and a service-graph
// edge whose server span arrives before its client span.
func TestSpanMetrics(t *testing.T) {
	rec := newRecorder()
	now := time.Unix(2e9, 0)
	opts := DefaultOptions()
	opts.FlushInterval = time.Hour // flushed by hand
	opts.Now = func() time.Time { return now }
	p := New(rec, opts)
	ctx := []workload.Label{{Name: "run_id", Value: "r42"}}
	p.ObserveSpans("model", ctx, []traceentry.Span{
		span(1, 2, 1, traceentry.SpanKindServer, traceentry.StatusError, 3*time.Millisecond),
		span(2, 2, 1, traceentry.SpanKindServer, traceentry.StatusError, 50*time.Millisecond),
	})
	p.ObserveSpans("router", nil, []traceentry.Span{span(1, 1, 0, traceentry.SpanKindClient, traceentry.StatusUnset, 5*time.Millisecond)})
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := `service="model", span_kind="SPAN_KIND_SERVER", span_name="infer", status_code="STATUS_CODE_ERROR"`
	want := map[string]float64{
		`{__name__="traces_spanmetrics_calls_total", run_id="r42", ` + base + `}`:                                    2,
		`{__name__="traces_spanmetrics_latency_bucket", le="0.002", run_id="r42", ` + base + `}`:                     0,
		`{__name__="traces_spanmetrics_latency_bucket", le="0.004", run_id="r42", ` + base + `}`:                     1,
		`{__name__="traces_spanmetrics_latency_bucket", le="0.064", run_id="r42", ` + base + `}`:                     2,
		`{__name__="traces_spanmetrics_latency_bucket", le="+Inf", run_id="r42", ` + base + `}`:                      2,
		`{__name__="traces_spanmetrics_latency_count", run_id="r42", ` + base + `}`:                                  2,
		`{__name__="traces_spanmetrics_latency_sum", run_id="r42", ` + base + `}`:                                    0.053,
		`{__name__="traces_service_graph_request_total", client="router", server="model"}`:                           1,
		`{__name__="traces_service_graph_request_failed_total", client="router", server="model"}`:                    1,
		`{__name__="traces_service_graph_request_server_seconds_bucket", client="router", le="0.1", server="model"}`: 1,
		`{__name__="traces_service_graph_request_client_seconds_count", client="router", server="model"}`:            1,
	}
	for k, v := range want {
		got, ok := rec.vals[k]
		if !ok || got < v-1e-9 || got > v+1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	ex := rec.exs[`{__name__="traces_spanmetrics_latency_bucket", le="0.064", run_id="r42", `+base+`}`]
	if len(ex) != 1 || ex[0].Labels.Get("trace_id") != (traceentry.TraceID{15: 2}).String() || ex[0].Value != 0.05 {
		t.Errorf("bucket exemplar %v", ex)
	}
	if ex := rec.exs[`{__name__="traces_spanmetrics_calls_total", run_id="r42", `+base+`}`]; len(ex) != 1 {
		t.Errorf("calls exemplar %v", ex)
	}
}

// TestSpanMetricsBounded: past MaxSeries new groups are dropped and
// counted; stale series are forgotten.
func TestSpanMetricsBounded(t *testing.T) {
	rec := newRecorder()
	now := time.Unix(2e9, 0)
	opts := DefaultOptions()
	opts.FlushInterval = time.Hour
	opts.MaxSeries = 2
	opts.ServiceGraph = false
	opts.Now = func() time.Time { return now }
	p := New(rec, opts)
	defer p.Close(context.Background())
	for _, svc := range []string{"a", "b", "c", "d"} {
		p.ObserveSpans(svc, nil, []traceentry.Span{span(1, 1, 0, traceentry.SpanKindServer, 0, time.Millisecond)})
	}
	if p.Dropped() != 2 || len(p.series) != 2 {
		t.Fatalf("dropped %d, %d series", p.Dropped(), len(p.series))
	}
	now = now.Add(time.Hour)
	if err := p.Flush(context.Background()); err != nil || len(p.series) != 0 {
		t.Fatalf("stale series kept: %v %d", err, len(p.series))
	}
}
