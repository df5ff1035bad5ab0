package usage_test

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/usage"
)

// nopAppendable stores nothing, so the benchmark measures the accounting.
type nopAppendable struct{}

func (nopAppendable) AppenderV2(context.Context) promstorage.AppenderV2 { return nopAppender{} }

type nopAppender struct{}

func (nopAppender) Append(ref promstorage.SeriesRef, _ labels.Labels, _, _ int64, _ float64, _ *histogram.Histogram, _ *histogram.FloatHistogram, _ promstorage.AOptions) (promstorage.SeriesRef, error) {
	return ref, nil
}
func (nopAppender) Commit() error   { return nil }
func (nopAppender) Rollback() error { return nil }

// BenchmarkAppendAccounted: a remote-write-sized request (2,000 samples of
// 4 teams) through the accounting; allocations are per request, not per
// sample. "interleaved" alternates the series sample by sample, "series"
// sends each series' samples together, as remote write does.
func BenchmarkAppendAccounted(b *testing.B) {
	acct := usage.New(usage.Options{})
	app := acct.Appendable(nopAppendable{})
	ctx := tenant.With(context.Background(), "acme")
	series := make([]labels.Labels, 4)
	for i, team := range []string{"vision", "nlp", "speech", "rl"} {
		series[i] = labels.FromStrings(labels.MetricName, "loss", "namespace", "ns-"+team, "team", team)
	}
	const perRequest = 2000
	for _, bc := range []struct {
		name  string
		which func(i int) int
	}{
		{"interleaved", func(i int) int { return i % len(series) }},
		{"series", func(i int) int { return i * len(series) / perRequest }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ap := app.AppenderV2(ctx)
				for i := range perRequest {
					if _, err := ap.Append(0, series[bc.which(i)], 0, int64(i), 1, nil, nil, promstorage.AOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				if err := ap.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perRequest), "ns/sample")
		})
	}
}
