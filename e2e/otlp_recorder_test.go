package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// pointRecorder notes, per service.name, the distinct millisecond
// timestamps of the data points a client sent, so a test knows how many
// samples one series can hold (points in the same millisecond collide, as
// telemetrygen's first two points do: it reads the clock before it waits).
//
// It also notes, per service and millisecond, the value a store keeps for
// the first point of that millisecond (a later one is a duplicate): the
// point's value (a histogram's count), summed over the points before it for
// delta temporality, as the delta→cumulative conversion does.
type pointRecorder struct {
	mu    sync.Mutex
	pts   map[string]map[int64]bool
	first map[string]map[int64]float64
	sum   map[string]float64 // running sum of delta points
}

func newPointRecorder() *pointRecorder {
	return &pointRecorder{pts: map[string]map[int64]bool{}, first: map[string]map[int64]float64{}, sum: map[string]float64{}}
}

// lastValue returns the value kept for svc's newest millisecond.
func (r *pointRecorder) lastValue(svc string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	newest := int64(-1)
	for ms := range r.first[svc] {
		newest = max(newest, ms)
	}
	return r.first[svc][newest]
}

func (r *pointRecorder) record(md pmetric.Metrics) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		svc := ""
		if v, ok := rms.At(i).Resource().Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		if r.pts[svc] == nil {
			r.pts[svc] = map[int64]bool{}
			r.first[svc] = map[int64]float64{}
		}
		add := func(t pcommon.Timestamp) { r.pts[svc][int64(t)/1e6] = true }
		value := func(t pcommon.Timestamp, v float64, delta bool) {
			if delta {
				r.sum[svc] += v
				v = r.sum[svc]
			}
			if _, dup := r.first[svc][int64(t)/1e6]; !dup {
				r.first[svc][int64(t)/1e6] = v
			}
		}
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					for x := range m.Gauge().DataPoints().Len() {
						dp := m.Gauge().DataPoints().At(x)
						add(dp.Timestamp())
						value(dp.Timestamp(), number(dp), false)
					}
				case pmetric.MetricTypeSum:
					for x := range m.Sum().DataPoints().Len() {
						dp := m.Sum().DataPoints().At(x)
						add(dp.Timestamp())
						value(dp.Timestamp(), number(dp), m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta)
					}
				case pmetric.MetricTypeHistogram:
					for x := range m.Histogram().DataPoints().Len() {
						dp := m.Histogram().DataPoints().At(x)
						add(dp.Timestamp())
						value(dp.Timestamp(), float64(dp.Count()), m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta)
					}
				case pmetric.MetricTypeExponentialHistogram:
					for x := range m.ExponentialHistogram().DataPoints().Len() {
						add(m.ExponentialHistogram().DataPoints().At(x).Timestamp())
					}
				}
			}
		}
	}
}

func number(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// distinct returns how many distinct milliseconds svc's points had.
func (r *pointRecorder) distinct(svc string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pts[svc])
}

// recordingHTTP records each OTLP/HTTP protobuf request, then passes it on.
func recordingHTTP(tb testing.TB, r *pointRecorder, next string) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		er := pmetricotlp.NewExportRequest()
		if err := er.UnmarshalProto(body); err == nil {
			r.record(er.Metrics())
		}
		fwd, err := http.NewRequestWithContext(req.Context(), http.MethodPost, next+req.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fwd.Header = req.Header.Clone()
		res, err := http.DefaultClient.Do(fwd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// grpcRecorder records each Export, then forwards it to weft over gRPC.
type grpcRecorder struct {
	pmetricotlp.UnimplementedGRPCServer
	r    *pointRecorder
	next pmetricotlp.GRPCClient
}

func (g *grpcRecorder) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	g.r.record(req.Metrics())
	return g.next.Export(ctx, req)
}

func recordingGRPC(tb testing.TB, r *pointRecorder, next string) string {
	tb.Helper()
	conn, err := grpc.NewClient(next, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := grpc.NewServer()
	pmetricotlp.RegisterGRPCServer(s, &grpcRecorder{r: r, next: pmetricotlp.NewGRPCClient(conn)})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	tb.Cleanup(func() {
		s.Stop()
		<-done
		conn.Close()
	})
	return lis.Addr().String()
}
