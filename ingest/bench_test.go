package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/workload"
)

// nopAppender accepts everything; it isolates decoding and validation cost.
type nopAppender struct{}

func (nopAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	return 1, nil
}

func (nopAppender) AppendExemplars(ref storage.SeriesRef, _ labels.Labels, _ []exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}
func (nopAppender) Commit() error   { return nil }
func (nopAppender) Rollback() error { return nil }

// BenchmarkDecodeAppend measures protobuf decoding, label building and
// validation of 1000 12-label one-sample series into an appender that does
// nothing: the receiver's own cost per series, without storage or snappy.
//
//	go test ./ingest -run '^$' -bench BenchmarkDecodeAppend -cpu 1
func BenchmarkDecodeAppend(b *testing.B) {
	const n = 1000
	st := writev2.NewSymbolTable()
	var v1 prompb.WriteRequest
	var v2 writev2.Request
	t := testNow.UnixMilli()
	for i := range n {
		ls := labels.FromStrings(
			"__name__", "DCGM_FI_DEV_GPU_UTIL", "Hostname", fmt.Sprintf("node-%03d", i/8),
			"UUID", fmt.Sprintf("GPU-%08x-7a1c-4f2e-9b1d-%012x", i, i*7919), "cluster", "train-eu-1",
			"container", "trainer", "gpu", fmt.Sprint(i%8), "instance", fmt.Sprintf("10.1.%d.%d:9400", i/256, i%256),
			"job", "dcgm-exporter", "modelName", "NVIDIA H200", "namespace", "llm-pretrain",
			"pod", fmt.Sprintf("trainer-%d", i/8), "run_id", "run-2026-11-30-a",
		)
		v1.Timeseries = append(v1.Timeseries, prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil), Samples: []prompb.Sample{{Value: float64(i), Timestamp: t}}})
		v2.Timeseries = append(v2.Timeseries, writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil), Samples: []writev2.Sample{{Value: float64(i), Timestamp: t}}})
	}
	v2.Symbols = st.Symbols()
	for _, tc := range []struct {
		name  string
		proto Protocol
		buf   []byte
	}{{"rw1", ProtoV1, marshal(b, &v1)}, {"rw2", ProtoV2, marshal(b, &v2)}} {
		// context: with the server's workload-context mapping, which adds
		// gpu_uuid and host (from UUID and Hostname) to every series.
		for _, mapping := range []*workload.Mapping{nil, workload.MustDefault()} {
			name := tc.name
			if mapping != nil {
				name += "/context"
			}
			b.Run(name, func(b *testing.B) {
				o := DefaultOptions()
				o.Now = func() time.Time { return testNow }
				o.Workload = mapping
				benchDecodeAppend(b, NewDecoder(o), tc.proto, tc.buf, n)
			})
		}
	}
}

// benchDecodeAppend decodes buf (n series) with d and appends it to an
// appender that does nothing, per iteration.
func benchDecodeAppend(b *testing.B, d *Decoder, proto Protocol, buf []byte, n int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	cpu0 := processCPU()
	for b.Loop() {
		batch, err := d.Decode(proto, buf)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := batch.Append(b.Context(), nopAppender{}); err != nil {
			b.Fatal(err)
		}
		batch.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/series")
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/series")
	}
}
