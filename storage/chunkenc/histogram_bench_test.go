package chunkenc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	promchunk "github.com/prometheus/prometheus/tsdb/chunkenc"
)

// latencySeries simulates n scrapes of a cumulative schema-3 native
// histogram of request latencies: ~200 lognormal observations per scrape,
// so buckets appear over time (layout changes) and counts grow steadily.
func latencySeries(seed uint64, n int) []*histogram.Histogram {
	rng := rand.New(rand.NewPCG(seed, 7))
	const schema = 3
	counts := map[int32]int64{}
	var zero, total uint64
	var sum float64
	out := make([]*histogram.Histogram, n)
	for s := range out {
		for k := 50 + rng.IntN(300); k > 0; k-- {
			v := math.Exp(rng.NormFloat64()*0.6 - 3) // ~50 ms median
			total++
			sum += v
			if v < 1e-4 {
				zero++
				continue
			}
			// Bucket index for schema 3: ceil(log2(v) * 2^schema).
			counts[int32(math.Ceil(math.Log2(v)*(1<<schema)))]++
		}
		idx := make([]int32, 0, len(counts))
		for i := range counts {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		h := &histogram.Histogram{
			Schema: schema, ZeroThreshold: 1e-4, ZeroCount: zero, Count: total,
			Sum: math.Round(sum*1e6) / 1e6,
		}
		var prevIdx int32
		var prevCount int64
		for j, i := range idx {
			switch {
			case j == 0:
				h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: i, Length: 1})
			case i == prevIdx+1:
				h.PositiveSpans[len(h.PositiveSpans)-1].Length++
			default:
				h.PositiveSpans = append(h.PositiveSpans, histogram.Span{Offset: i - prevIdx - 1, Length: 1})
			}
			h.PositiveBuckets = append(h.PositiveBuckets, counts[i]-prevCount)
			prevIdx, prevCount = i, counts[i]
		}
		if s > 0 {
			h.CounterResetHint = histogram.NotCounterReset
		}
		out[s] = h
	}
	return out
}

// BenchmarkHistogramBytes compares weft's histogram column with Prometheus'
// histogram chunks (cut at 120 samples) on a day of 15 s scrapes of one
// latency histogram; the timed loop encodes weft 120-histogram chunks.
func BenchmarkHistogramBytes(b *testing.B) {
	hs := latencySeries(1, 5760)
	prom := 0
	for lo := 0; lo < len(hs); lo += 120 {
		c := promchunk.NewHistogramChunk()
		app, err := c.Appender()
		if err != nil {
			b.Fatal(err)
		}
		var chunks []promchunk.Chunk
		chunks = append(chunks, c)
		for i, h := range hs[lo:min(lo+120, len(hs))] {
			nc, _, napp, err := app.AppendHistogram(nil, 0, int64(lo+i)*15000, h, false)
			if err != nil {
				b.Fatal(err)
			}
			if nc != nil {
				chunks = append(chunks, nc)
			}
			app = napp
		}
		for _, c := range chunks {
			prom += len(c.Bytes())
		}
	}
	ts := make([]int64, len(hs))
	for i := range ts {
		ts[i] = int64(i) * 15000
	}
	// weft sizes include the timestamp column, as Prometheus' chunks do.
	weft120, weft1d := 0, len(AppendHistograms(AppendTimestamps(nil, ts), hs))
	var buf []byte
	for b.Loop() {
		weft120 = 0
		for lo := 0; lo < len(hs); lo += 120 {
			hi := min(lo+120, len(hs))
			buf = AppendHistograms(AppendTimestamps(buf[:0], ts[lo:hi]), hs[lo:hi])
			weft120 += len(buf)
		}
	}
	n := float64(len(hs))
	b.ReportMetric(float64(prom)/n, "prom120-B/hist")
	b.ReportMetric(float64(weft120)/n, "weft120-B/hist")
	b.ReportMetric(float64(weft1d)/n, "weft1d-B/hist")
	b.ReportMetric(float64(weft120)/float64(prom), "ratio-120")
	b.ReportMetric(float64(weft1d)/float64(prom), "ratio-1d")
}

func TestLatencySeriesRoundTrip(t *testing.T) {
	roundTripHistograms(t, latencySeries(2, 1000))
}
