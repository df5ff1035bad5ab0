package chunkenc

import (
	"fmt"
	"math"
	"testing"
	"time"

	promchunk "github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// Benchmarks against Prometheus' XOR chunks on gputelemetry data. Run them
// all with
//
//	go test -run '^$' -bench . -benchtime 20x ./storage/chunkenc/

// BenchmarkDecode decodes every chunk of a day of telemetry to (t, v):
// weft's DecodeTimestamps+DecodeFloats into reused columns against iterating
// Prometheus' XOR chunk with Next/At (each At's result kept, as a consumer
// would). samples/s is per core (one goroutine).
func BenchmarkDecode(b *testing.B) {
	all := telemetryDay()
	for _, size := range []int{120, 480} {
		chunks := chunkByCount(all, size)
		samples := 0
		weft := make([][]byte, len(chunks))
		prom := make([]*promchunk.XORChunk, len(chunks))
		for i, c := range chunks {
			weft[i] = encodeWeft(c, nil)
			prom[i] = encodeProm(b, c)
			samples += len(c.t)
		}
		b.Run(fmt.Sprintf("prometheus/%d", size), func(b *testing.B) {
			b.ReportAllocs()
			var it promchunk.Iterator
			var lastT int64
			var lastV float64
			for b.Loop() {
				for _, c := range prom {
					it = c.Iterator(it)
					for it.Next() == promchunk.ValFloat {
						lastT, lastV = it.At()
					}
					if err := it.Err(); err != nil {
						b.Fatal(err)
					}
				}
			}
			reportDecode(b, samples, float64(lastT)+lastV)
		})
		b.Run(fmt.Sprintf("weft/%d", size), func(b *testing.B) {
			b.ReportAllocs()
			ts := make([]int64, 0, size)
			vs := make([]float64, 0, size)
			var lastT int64
			var lastV float64
			for b.Loop() {
				for _, c := range weft {
					var rest []byte
					var err error
					if ts, rest, err = DecodeTimestamps(ts[:0], c); err != nil {
						b.Fatal(err)
					}
					if vs, _, err = DecodeFloats(vs[:0], rest); err != nil {
						b.Fatal(err)
					}
					lastT, lastV = ts[len(ts)-1], vs[len(vs)-1]
				}
			}
			reportDecode(b, samples, float64(lastT)+lastV)
		})
	}
}

// BenchmarkDecodeSpeedup interleaves the two decoders of BenchmarkDecode
// chunk batch by chunk batch and times each separately, so that load from
// other processes hits both alike; "speedup" is weft's samples/s over
// Prometheus'.
func BenchmarkDecodeSpeedup(b *testing.B) {
	all := telemetryDay()
	for _, size := range []int{120, 480} {
		chunks := chunkByCount(all, size)
		weft := make([][]byte, len(chunks))
		prom := make([]*promchunk.XORChunk, len(chunks))
		samples := 0
		for i, c := range chunks {
			weft[i] = encodeWeft(c, nil)
			prom[i] = encodeProm(b, c)
			samples += len(c.t)
		}
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			var it promchunk.Iterator
			ts := make([]int64, 0, size)
			vs := make([]float64, 0, size)
			var lastT int64
			var lastV float64
			var promDur, weftDur time.Duration
			const batch = 64 // chunks per timed slice: long enough to time, short enough to interleave
			for b.Loop() {
				for lo := 0; lo < len(chunks); lo += batch {
					hi := min(lo+batch, len(chunks))
					start := time.Now()
					for _, c := range prom[lo:hi] {
						it = c.Iterator(it)
						for it.Next() == promchunk.ValFloat {
							lastT, lastV = it.At()
						}
					}
					mid := time.Now()
					for _, c := range weft[lo:hi] {
						var rest []byte
						var err error
						if ts, rest, err = DecodeTimestamps(ts[:0], c); err != nil {
							b.Fatal(err)
						}
						if vs, _, err = DecodeFloats(vs[:0], rest); err != nil {
							b.Fatal(err)
						}
						lastT, lastV = ts[len(ts)-1], vs[len(vs)-1]
					}
					weftDur += time.Since(mid)
					promDur += mid.Sub(start)
				}
			}
			if math.IsInf(float64(lastT)+lastV, 0) {
				b.Log(lastT, lastV)
			}
			total := float64(samples) * float64(b.N)
			b.ReportMetric(total/promDur.Seconds(), "prom-samples/s")
			b.ReportMetric(total/weftDur.Seconds(), "weft-samples/s")
			b.ReportMetric(promDur.Seconds()/weftDur.Seconds(), "speedup")
		})
	}
}

func reportDecode(b *testing.B, samples int, sink float64) {
	b.Helper()
	if math.IsInf(sink, 0) {
		b.Log(sink) // keep the sink alive
	}
	b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(samples)/float64(b.N), "ns/sample")
}

// BenchmarkBytesPerSample reports bytes per sample per metric kind and
// overall: Prometheus XOR chunks of 120 samples against weft's codecs on
// 120-sample chunks and on long per-series blocks (2h and 1d, time aligned,
// as compaction writes them). ratio-* is weft over Prometheus. The timed
// loop encodes the day as 1d blocks (encode1d-samples/s).
func BenchmarkBytesPerSample(b *testing.B) {
	all := telemetryDay()
	byKind := map[string][]gputelemetry.Series{"all": all}
	names := []string{"all"}
	for _, k := range gputelemetry.Kinds() {
		names = append(names, k.MetricName())
	}
	for _, s := range all {
		byKind[s.Kind.MetricName()] = append(byKind[s.Kind.MetricName()], s)
	}
	for _, name := range names {
		series := byKind[name]
		b.Run(name, func(b *testing.B) {
			samples, prom := 0, 0
			for _, c := range chunkByCount(series, 120) {
				samples += len(c.t)
				prom += len(encodeProm(b, c).Bytes())
			}
			w120 := weftBytes(chunkByCount(series, 120))
			w2h := weftBytes(chunkByTime(series, 2*time.Hour))
			day := chunkByTime(series, 24*time.Hour)
			var buf []byte
			for b.Loop() {
				for _, c := range day {
					buf = encodeWeft(c, buf)
				}
			}
			b.ReportMetric(float64(samples)*float64(b.N)/b.Elapsed().Seconds(), "encode1d-samples/s")
			w1d := weftBytes(day)
			per := func(n int) float64 { return float64(n) / float64(samples) }
			b.ReportMetric(per(prom), "prom120-B/sample")
			b.ReportMetric(per(w120), "weft120-B/sample")
			b.ReportMetric(per(w2h), "weft2h-B/sample")
			b.ReportMetric(per(w1d), "weft1d-B/sample")
			b.ReportMetric(float64(w120)/float64(prom), "ratio-120")
			b.ReportMetric(float64(w1d)/float64(prom), "ratio-1d")
		})
	}
}

func weftBytes(chunks []sampleChunk) int {
	total := 0
	var buf []byte
	for _, c := range chunks {
		buf = encodeWeft(c, buf)
		total += len(buf)
	}
	return total
}
