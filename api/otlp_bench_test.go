package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/otlp"
	"github.com/weftdb/weft/storage"
)

// Benchmark shape: one GPU node's export, 10 metrics × 100 points (8 GPUs ×
// ~12 processes), half gauges, half monotonic sums, with workload-context
// resource attributes. 1,000 series and points per request.
const (
	benchMetrics = 10
	benchPoints  = 100
)

func benchOTLPMetrics(t0 time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	ra.PutStr("service.name", "dcgm")
	ra.PutStr("service.instance.id", "gpu-node-17:9400")
	ra.PutStr("host.name", "gpu-node-17")
	ra.PutStr("k8s.namespace.name", "training")
	ra.PutStr("k8s.pod.name", "llama-pretrain-worker-3")
	ra.PutStr("ai.run.id", "run-2026-11-30-a")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	ts := pcommon.NewTimestampFromTime(t0)
	for m := range benchMetrics {
		metric := ms.AppendEmpty()
		metric.SetName(fmt.Sprintf("gpu.metric.%d", m))
		var dps pmetric.NumberDataPointSlice
		if m%2 == 0 {
			metric.SetUnit("W")
			dps = metric.SetEmptyGauge().DataPoints()
		} else {
			metric.SetUnit("By")
			s := metric.SetEmptySum()
			s.SetIsMonotonic(true)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			dps = s.DataPoints()
		}
		for p := range benchPoints {
			dp := dps.AppendEmpty()
			dp.Attributes().PutInt("gpu", int64(p%8))
			dp.Attributes().PutStr("gpu.uuid", fmt.Sprintf("GPU-%08x-%04d", p%8, p))
			dp.Attributes().PutInt("pid", int64(1000+p))
			dp.SetStartTimestamp(ts - 3600e9)
			dp.SetTimestamp(ts)
			dp.SetDoubleValue(float64(m*1000 + p))
		}
	}
	return md
}

// recordingAppendable keeps what the OTLP ingester would store, to encode
// the very same series as a remote-write request.
type recordingAppendable struct{ ts []prompb.TimeSeries }

func (r *recordingAppendable) AppenderV2(context.Context) promstorage.AppenderV2 {
	return &recordingAppender{r: r}
}

type recordingAppender struct{ r *recordingAppendable }

func (a *recordingAppender) Append(_ promstorage.SeriesRef, ls labels.Labels, _, t int64, v float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ promstorage.AOptions) (promstorage.SeriesRef, error) {
	var pl []prompb.Label
	ls.Range(func(l labels.Label) { pl = append(pl, prompb.Label{Name: l.Name, Value: l.Value}) })
	a.r.ts = append(a.r.ts, prompb.TimeSeries{Labels: pl, Samples: []prompb.Sample{{Timestamp: t, Value: v}}})
	return 0, nil
}
func (*recordingAppender) Commit() error   { return nil }
func (*recordingAppender) Rollback() error { return nil }

// discardAppendable stores nothing: it isolates the receivers' own cost.
type discardAppendable struct{}

func (discardAppendable) AppenderV2(context.Context) promstorage.AppenderV2 { return discardAppender{} }

type discardAppender struct{}

func (discardAppender) Append(ref promstorage.SeriesRef, _ labels.Labels, _, _ int64, _ float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ promstorage.AOptions) (promstorage.SeriesRef, error) {
	return ref, nil
}
func (discardAppender) Commit() error   { return nil }
func (discardAppender) Rollback() error { return nil }

// BenchmarkOTLPvsRemoteWrite measures data points ingested per second by
// the OTLP/HTTP receiver (protobuf) and by weft's remote write 1.0 receiver
// (snappy protobuf) for the same 1,000 series per request, decode through
// append, into a discarding appender (the receivers' own cost), Prometheus'
// TSDB, and weft's storage (WAL group commit per request). Each iteration sends the next scrape (timestamps 15 s later);
// encoding happens outside the timer. Run on one core:
//
//	go test ./api -run '^$' -bench OTLPvsRemoteWrite -cpu 1 -benchtime 300x
func BenchmarkOTLPvsRemoteWrite(b *testing.B) {
	t0 := time.Unix(1_700_000_000, 0)
	rec := &recordingAppendable{}
	ing, err := otlp.New(rec, otlp.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	if res, err := ing.Ingest(context.Background(), benchOTLPMetrics(t0)); err != nil || res.Rejected != 0 {
		b.Fatalf("record: %+v %v", res, err)
	}
	const points = benchMetrics * benchPoints
	if len(rec.ts) != points+1 { // + target_info
		b.Fatalf("recorded %d series", len(rec.ts))
	}
	rwSeries := rec.ts[:0]
	for _, s := range rec.ts {
		if s.Labels[0].Value != "target_info" {
			rwSeries = append(rwSeries, s)
		}
	}

	otlpBodies := func(i int) []byte {
		md := benchOTLPMetrics(t0.Add(time.Duration(i) * 15 * time.Second))
		body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
		if err != nil {
			b.Fatal(err)
		}
		return body
	}
	rwBodies := func(i int) []byte {
		t := t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
		for j := range rwSeries {
			rwSeries[j].Samples[0].Timestamp = t
		}
		raw, err := (&prompb.WriteRequest{Timeseries: rwSeries}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return s2.EncodeSnappy(nil, raw)
	}

	stores := []struct {
		name string
		open func(testing.TB) promstorage.AppendableV2
	}{
		{"discard", func(testing.TB) promstorage.AppendableV2 { return discardAppendable{} }},
		{"tsdb", func(tb testing.TB) promstorage.AppendableV2 { return teststorage.New(tb) }},
		{"weft", func(tb testing.TB) promstorage.AppendableV2 {
			db, err := storage.Open(context.Background(), tb.TempDir(), storage.DefaultOptions())
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = db.Close() })
			return db
		}},
	}
	for _, st := range stores {
		receivers := []struct {
			name    string
			handler func(promstorage.AppendableV2) http.Handler
			body    func(int) []byte
			header  http.Header
		}{
			{"otlp", func(a promstorage.AppendableV2) http.Handler { return api.NewOTLPHandler(a, api.DefaultOTLPOptions()) },
				otlpBodies, http.Header{"Content-Type": {"application/x-protobuf"}}},
			{"rw1", func(a promstorage.AppendableV2) http.Handler {
				return api.NewRemoteWriteHandler(a, api.DefaultRemoteWriteOptions())
			}, rwBodies, http.Header{
				"Content-Type":                      {"application/x-protobuf"},
				"Content-Encoding":                  {"snappy"},
				"X-Prometheus-Remote-Write-Version": {"0.1.0"},
			}},
		}
		for _, rcv := range receivers {
			b.Run(st.name+"/"+rcv.name, func(b *testing.B) {
				h := rcv.handler(st.open(b))
				b.ReportAllocs()
				var bytesIn int
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					body := rcv.body(i)
					bytesIn += len(body)
					req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
					req.Header = rcv.header.Clone()
					w := httptest.NewRecorder()
					b.StartTimer()
					h.ServeHTTP(w, req)
					if w.Code/100 != 2 {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
				}
				b.ReportMetric(float64(points*b.N)/b.Elapsed().Seconds(), "points/s")
				b.ReportMetric(float64(bytesIn)/float64(points*b.N), "B/point")
			})
		}
	}
}
