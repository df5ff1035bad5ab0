package e2e_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
)

// TestOTLPTelemetrygen drives weft's receiver with the pinned telemetrygen
// over gRPC and over HTTP, for every metric type and both temporalities, and
// checks the exact series and sample counts stored (and the last values
// where telemetrygen's are deterministic).
func TestOTLPTelemetrygen(t *testing.T) {
	bin := otlpPeerBin(t, "telemetrygen")
	w := startWeftOTLP(t, api.DefaultOTLPOptions())
	rec := newPointRecorder()
	grpcAddr := recordingGRPC(t, rec, w.grpcAddr)
	httpURL := recordingHTTP(t, rec, w.httpURL)
	const (
		n    = 10 // data points per run, one series each
		rate = 50 // per second: 20 ms apart, so no two share a millisecond
	)
	types := []struct {
		name   string
		metric string // stored name of the value series
		series int    // series besides target_info
	}{
		{"Gauge", "gen", 1},
		{"Sum", "gen_total", 1},
		// 15 explicit bounds: 16 _bucket series, _sum, _count.
		{"Histogram", "gen_count", 18},
		{"ExponentialHistogram", "gen", 1},
	}
	for _, transport := range []string{"grpc", "http"} {
		for _, typ := range types {
			for _, temp := range []string{"cumulative", "delta"} {
				name := fmt.Sprintf("%s/%s/%s", transport, typ.name, temp)
				t.Run(name, func(t *testing.T) {
					svc := strings.ToLower(strings.ReplaceAll(name, "/", "-"))
					args := []string{"metrics", "--otlp-insecure", "--metric-type", typ.name,
						"--aggregation-temporality", temp, "--metrics", strconv.Itoa(n), "--rate", strconv.Itoa(rate),
						"--service", svc, "--workers", "1"}
					if transport == "grpc" {
						args = append(args, "--otlp-endpoint", grpcAddr)
					} else {
						args = append(args, "--otlp-http", "--otlp-endpoint", strings.TrimPrefix(httpURL, "http://"))
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
					if err != nil {
						t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
					}

					job := labels.MustNewMatcher(labels.MatchEqual, "job", svc)
					samples := weftOTLPSamples(t, w.db, math.MinInt64, math.MaxInt64, job)
					perSeries := map[string]int{}
					last := map[string]otlpSample{}
					for _, s := range samples {
						perSeries[s.Labels]++
						last[s.Labels] = s
					}
					// telemetrygen's resource has only service.name: no target_info.
					// Each series holds one sample per distinct millisecond sent.
					pts := rec.distinct(svc)
					// On a loaded machine the rate limiter lets a few points through
					// back to back, so fewer than n may be distinct.
					if pts < 2 || pts > n {
						t.Fatalf("telemetrygen sent points in %d distinct ms, want 2..%d", pts, n)
					}
					wantSeries, wantSamples := typ.series, typ.series*pts
					if len(perSeries) != wantSeries || len(samples) != wantSamples {
						t.Fatalf("stored %d series, %d samples; want %d, %d:\n%v", len(perSeries), len(samples), wantSeries, wantSamples, perSeries)
					}
					// The last value is the one of the first point sent in the
					// newest millisecond (a later one there is a duplicate): gauge
					// and sum report i = 0..n-1, a histogram counts 10
					// observations, deltas accumulate.
					if typ.name != "ExponentialHistogram" {
						want := rec.lastValue(svc)
						var got string
						for ls, s := range last {
							if strings.HasPrefix(ls, `{__name__="`+typ.metric+`"`) {
								got = s.V
							}
						}
						if got != strconv.FormatFloat(want, 'f', -1, 64) {
							t.Errorf("last %s = %q, want %v", typ.metric, got, want)
						}
					}
				})
			}
		}
	}
}
