package api

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/util/teststorage"
)

// rwBenchSeries is the batch size: Prometheus' default max_samples_per_send is
// 2000; a 1000-series request is a typical remote write batch.
const rwBenchSeries = 1000

// rwBenchLabels returns series i of a DCGM-exporter-like fleet: 12 labels.
func rwBenchLabels(i int) labels.Labels {
	return labels.FromStrings(
		"__name__", "DCGM_FI_DEV_GPU_UTIL",
		"Hostname", fmt.Sprintf("node-%03d", i/8),
		"UUID", fmt.Sprintf("GPU-%08x-7a1c-4f2e-9b1d-%012x", i, i*7919),
		"cluster", "train-eu-1",
		"container", "trainer",
		"gpu", fmt.Sprintf("%d", i%8),
		"instance", fmt.Sprintf("10.1.%d.%d:9400", i/256, i%256),
		"job", "dcgm-exporter",
		"modelName", "NVIDIA H200",
		"namespace", "llm-pretrain",
		"pod", fmt.Sprintf("trainer-%d", i/8),
		"run_id", "run-2026-11-30-a",
	)
}

// rwBenchPayload encodes rwBenchSeries one-sample series at t, snappy-compressed.
type rwBenchPayload struct {
	ls  []labels.Labels
	v1  prompb.WriteRequest
	sym writev2.SymbolsTable
	v2  writev2.Request
}

func newRWBenchPayload() *rwBenchPayload {
	p := &rwBenchPayload{sym: writev2.NewSymbolTable()}
	for i := range rwBenchSeries {
		ls := rwBenchLabels(i)
		p.ls = append(p.ls, ls)
		p.v1.Timeseries = append(p.v1.Timeseries, prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil), Samples: make([]prompb.Sample, 1)})
		p.v2.Timeseries = append(p.v2.Timeseries, writev2.TimeSeries{LabelsRefs: p.sym.SymbolizeLabels(ls, nil), Samples: make([]writev2.Sample, 1)})
	}
	p.v2.Symbols = p.sym.Symbols()
	return p
}

func (p *rwBenchPayload) encode(tb testing.TB, v2 bool, t int64) []byte {
	var raw []byte
	var err error
	if v2 {
		for i := range p.v2.Timeseries {
			p.v2.Timeseries[i].Samples[0] = writev2.Sample{Value: float64(i) + float64(t%1000)/1000, Timestamp: t}
		}
		raw, err = p.v2.Marshal()
	} else {
		for i := range p.v1.Timeseries {
			p.v1.Timeseries[i].Samples[0] = prompb.Sample{Value: float64(i) + float64(t%1000)/1000, Timestamp: t}
		}
		raw, err = p.v1.Marshal()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return s2.EncodeSnappy(nil, raw)
}

// rwPromNsPerSeries keeps the Prometheus receiver's figure of this run, by
// protocol, so the weft sub-benchmarks can report the ratio beside it.
var rwPromNsPerSeries, rwPromCPUPerSeries = map[string]float64{}, map[string]float64{}

// BenchmarkRemoteWrite measures decode plus append (plus commit) of a
// 1000-series request of 12-label, one-sample series through the whole
// handler (httptest, no network): weft's receiver over weft's storage and
// over Prometheus' TSDB, and Prometheus' own receiver (remote.NewWriteHandler)
// over its TSDB, with the same payload. Run with -cpu 1 for the one-core
// figure; "x-prometheus" is weft's ns/series divided by Prometheus'.
//
//	go test ./api -run '^$' -bench 'BenchmarkRemoteWrite$' -cpu 1 -benchtime 2000x
func BenchmarkRemoteWrite(b *testing.B) {
	p := newRWBenchPayload()
	for _, proto := range []struct {
		name string
		v2   bool
		ct   string
	}{{"rw1", false, rwCTV1}, {"rw2", true, rwCTV2}} {
		for _, target := range []struct {
			name string
			open func(b *testing.B) http.Handler
		}{
			{"prometheus-receiver/tsdb", func(b *testing.B) http.Handler {
				db := teststorage.New(b)
				return remote.NewWriteHandler(slog.New(slog.DiscardHandler), nil, db,
					remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, false, true)
			}},
			{"weft-receiver/tsdb", func(b *testing.B) http.Handler {
				return NewRemoteWriteHandler(storage.AppendableV2(teststorage.New(b)), DefaultRemoteWriteOptions())
			}},
			{"weft-receiver/weft-storage", func(b *testing.B) http.Handler {
				return NewRemoteWriteHandler(rwOpenWeft(b), DefaultRemoteWriteOptions())
			}},
		} {
			b.Run(proto.name+"/"+target.name, func(b *testing.B) {
				h := target.open(b)
				b.ReportAllocs()
				// Timestamps increase by 1 ms per request and end a minute ago.
				t0 := time.Now().Add(-time.Minute).UnixMilli() - int64(b.N)
				var cpu time.Duration
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					body := p.encode(b, proto.v2, t0+int64(i))
					req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
					req.Header.Set("Content-Type", proto.ct)
					req.Header.Set("Content-Encoding", "snappy")
					rec := httptest.NewRecorder()
					b.StartTimer()
					cpu0 := rwProcessCPU()
					h.ServeHTTP(rec, req)
					cpu += rwProcessCPU() - cpu0
					if rec.Code != http.StatusNoContent {
						b.Fatalf("code %d: %s", rec.Code, rec.Body.String())
					}
				}
				nsPerSeries := float64(b.Elapsed().Nanoseconds()) / float64(b.N*rwBenchSeries)
				cpuPerSeries := float64(cpu.Nanoseconds()) / float64(b.N*rwBenchSeries)
				b.ReportMetric(nsPerSeries, "ns/series")
				if cpu > 0 {
					b.ReportMetric(cpuPerSeries, "cpu-ns/series")
				}
				if target.name == "prometheus-receiver/tsdb" {
					rwPromNsPerSeries[proto.name] = nsPerSeries
					rwPromCPUPerSeries[proto.name] = cpuPerSeries
					return
				}
				if prom := rwPromNsPerSeries[proto.name]; prom > 0 {
					b.ReportMetric(nsPerSeries/prom, "x-prometheus")
				}
				if prom := rwPromCPUPerSeries[proto.name]; prom > 0 && cpu > 0 {
					b.ReportMetric(cpuPerSeries/prom, "cpu-x-prometheus")
				}
			})
		}
	}
}
