package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// instrumentation counts requests and their durations per handler. With a
// nil registerer the metrics exist but are not exported.
type instrumentation struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
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
	}
	if reg != nil {
		reg.MustRegister(in.requests, in.duration)
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
