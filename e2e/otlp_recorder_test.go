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
type pointRecorder struct {
	mu  sync.Mutex
	pts map[string]map[int64]bool
}

func newPointRecorder() *pointRecorder { return &pointRecorder{pts: map[string]map[int64]bool{}} }

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
		}
		add := func(t pcommon.Timestamp) { r.pts[svc][int64(t)/1e6] = true }
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					for x := range m.Gauge().DataPoints().Len() {
						add(m.Gauge().DataPoints().At(x).Timestamp())
					}
				case pmetric.MetricTypeSum:
					for x := range m.Sum().DataPoints().Len() {
						add(m.Sum().DataPoints().At(x).Timestamp())
					}
				case pmetric.MetricTypeHistogram:
					for x := range m.Histogram().DataPoints().Len() {
						add(m.Histogram().DataPoints().At(x).Timestamp())
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
