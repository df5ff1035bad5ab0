package api

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// instrumentation counts requests and their durations per handler. With a
// nil registerer the metrics exist but are not exported.
type instrumentation struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	grpc     *prometheus.CounterVec // gRPC requests by method and code
}

func newInstrumentation(reg prometheus.Registerer) *instrumentation {
	in := &instrumentation{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_http_requests_total",
			Help: "HTTP requests served, by handler and status code.",
		}, []string{"handler", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "weft_http_request_duration_seconds",
			Help: "Duration of HTTP requests, by handler (query durations are those of /api/v1/query and /api/v1/query_range).",
			// Query latencies range from sub-millisecond label lookups to
			// multi-minute range queries.
			Buckets:                         []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: 0,
		}, []string{"handler"}),
		grpc: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_grpc_requests_total",
			Help: "gRPC requests served (the OTLP port), by full method and status code.",
		}, []string{"method", "code"}),
	}
	if reg != nil {
		reg.MustRegister(in.requests, in.duration, in.grpc)
	}
	return in
}

// wrap instruments h under the given handler name.
func (in *instrumentation) wrap(name string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerDuration(
		in.duration.MustCurryWith(prometheus.Labels{"handler": name}),
		promhttp.InstrumentHandlerCounter(in.requests.MustCurryWith(prometheus.Labels{"handler": name}), h),
	)
}

// unary counts every unary gRPC call by method and status code.
func (in *instrumentation) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	in.grpc.WithLabelValues(info.FullMethod, status.Code(err).String()).Inc()
	return resp, err
}
