package storage

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// Benchmarks put weft's store beside Prometheus' TSDB (head + WAL, default
// options: head chunks mmapped, WAL on) in the same `go test -bench` run:
//
//	go test -run '^$' -bench . -benchtime 200x ./storage/
//
// Each reports samples/s or B/series with b.ReportMetric.

const benchBatchSeries = 1000

// benchLabels is a realistic GPU-cluster label set: 12 labels, ~350 bytes,
// a few of them unique per series.
func benchLabels(i int) labels.Labels {
	return labels.FromStrings(
		"__name__", "DCGM_FI_DEV_GPU_UTIL",
		"cluster", "gpu-cluster-eu-west-4-prod",
		"container", "trainer-main-container",
		"gpu", fmt.Sprint(i%8),
		"gpu_uuid", fmt.Sprintf("GPU-%08x-4e1f-9c2a-7b3d-%012x", i*2654435761%(1<<32), i),
		"instance", fmt.Sprintf("10.%d.%d.%d:9400", i/65536%256, i/256%256, i%256),
		"job", "dcgm-exporter-daemonset",
		"model", "llama-3-70b-instruct-finetune",
		"namespace", "ml-training-production",
		"pod", fmt.Sprintf("trainer-job-7f9c4d5b8-worker-%06d", i/8),
		"run_id", fmt.Sprintf("run-2026-11-30-%06d", i/64),
		"team", "foundation-models-research",
	)
}

// startCPU returns a function that reports the process CPU time (user +
// system, all threads) and the system part used since startCPU was called. On a machine shared
// with other work it is a steadier throughput base than wall time.
func startCPU() func() (total, sys time.Duration) {
	u0, s0 := processCPU()
	return func() (time.Duration, time.Duration) {
		u1, s1 := processCPU()
		return (u1 - u0) + (s1 - s0), s1 - s0
	}
}

func processCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

type benchStore interface {
	Appender(ctx context.Context) promstorage.Appender
	Close() error
}

func openWeftBench(tb testing.TB) benchStore {
	opts := DefaultOptions()
	opts.CheckpointInterval = -1
	opts.FutureWindow = -1
	opts.Retention = -1 // the benchmarks write at fixed times near 1970, as Prometheus' side (no retention)
	db, err := Open(context.Background(), tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func openPromBench(tb testing.TB) benchStore {
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = 0
	db, err := tsdb.Open(tb.TempDir(), nil, nil, opts, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

var benchStores = []struct {
	name string
	open func(testing.TB) benchStore
}{
	{"weft", openWeftBench},
	{"prometheus", openPromBench},
}

// benchWriters is how many concurrent appenders the append benchmarks run,
// as many remote-write connections or scrape loops do; weft's group commit
// shares one WAL fsync among them.
const benchWriters = 8

// appendBatch commits one sample at ts to each series of lss (refs cached
// as a scraper does), updating refs.
func appendBatch(db benchStore, lss []labels.Labels, refs []promstorage.SeriesRef, ts int64) error {
	app := db.Appender(context.Background())
	for i := range lss {
		ref, err := app.Append(refs[i], lss[i], ts, float64(ts)*0.5+float64(i))
		if err != nil {
			// An open appender would block the store's Close.
			_ = app.Rollback()
			return err
		}
		refs[i] = ref
	}
	return app.Commit()
}

// BenchmarkAppendExisting commits batches of 1000 series x 1 sample to
// existing series (refs cached as a scraper does), WAL on, from
// benchWriters goroutines each owning its series. One op is one batch.
func BenchmarkAppendExisting(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			db := st.open(b)
			defer db.Close()
			var writer, clock atomic.Int64
			b.SetParallelism(benchWriters)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			b.RunParallel(func(pb *testing.PB) {
				w := int(writer.Add(1))
				lss := make([]labels.Labels, benchBatchSeries)
				refs := make([]promstorage.SeriesRef, benchBatchSeries)
				for i := range lss {
					lss[i] = benchLabels(w*benchBatchSeries + i)
				}
				for pb.Next() {
					// One shared clock keeps every writer near the newest
					// time, as real senders are.
					if err := appendBatch(db, lss, refs, clock.Add(1)*15_000); err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpuUsed, sys := cpu()
			if w, ok := db.(*DB); ok && w.Stats().WALFsyncs > 0 {
				b.ReportMetric(float64(b.N)/float64(w.Stats().WALFsyncs), "commits/fsync")
			}
			b.ReportMetric(float64(b.N*benchBatchSeries)/b.Elapsed().Seconds(), "samples/s")
			b.ReportMetric(float64(b.N*benchBatchSeries)/cpuUsed.Seconds(), "samples/cpu-s")
			b.ReportMetric(100*sys.Seconds()/cpuUsed.Seconds(), "%sys")
		})
	}
}

// BenchmarkAppendSteady is BenchmarkAppendExisting without the
// series' creation and label building in the measured time: every writer's
// 1000 series get their first sample (and refs) before the timer starts, so
// it measures the steady state of a scrape or remote-write ingester. Keep
// -benchtime well under ~700x, as for BenchmarkAppendExisting (Prometheus'
// head compaction point).
func BenchmarkAppendSteady(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			db := st.open(b)
			defer db.Close()
			var writer, clock atomic.Int64
			// RunParallel starts GOMAXPROCS*benchWriters goroutines; each
			// owns one set of series.
			writers := runtime.GOMAXPROCS(0) * benchWriters
			lss := make([][]labels.Labels, writers)
			refs := make([][]promstorage.SeriesRef, writers)
			for w := range lss {
				lss[w] = make([]labels.Labels, benchBatchSeries)
				refs[w] = make([]promstorage.SeriesRef, benchBatchSeries)
				for i := range lss[w] {
					lss[w][i] = benchLabels((w+1)*benchBatchSeries + i)
				}
				if err := appendBatch(db, lss[w], refs[w], clock.Add(1)*15_000); err != nil {
					b.Fatal(err)
				}
			}
			b.SetParallelism(benchWriters)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := startCPU()
			b.RunParallel(func(pb *testing.PB) {
				w := int(writer.Add(1)) - 1
				lss, refs := lss[w], refs[w]
				for pb.Next() {
					if err := appendBatch(db, lss, refs, clock.Add(1)*15_000); err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpuUsed, _ := cpu()
			b.ReportMetric(float64(b.N*benchBatchSeries)/cpuUsed.Seconds(), "samples/cpu-s")
		})
	}
}

// BenchmarkCreateSeries commits batches of 1000 new series (12 labels,
// ~350 B) with one sample each.
func BenchmarkCreateSeries(b *testing.B) {
	for _, st := range benchStores {
		b.Run(st.name, func(b *testing.B) {
			db := st.open(b)
			defer db.Close()
			next := 0
			lss := make([]labels.Labels, benchBatchSeries)
			b.ReportAllocs()
			b.ResetTimer()
			var cpuUsed time.Duration
			for n := 0; n < b.N; n++ {
				b.StopTimer()
				for i := range lss {
					lss[i] = benchLabels(next)
					next++
				}
				b.StartTimer()
				cpu := startCPU()
				app := db.Appender(context.Background())
				for i := range lss {
					if _, err := app.Append(0, lss[i], 1000, 1); err != nil {
						b.Fatal(err)
					}
				}
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
				used, _ := cpu()
				cpuUsed += used
			}
			b.ReportMetric(float64(b.N*benchBatchSeries)/b.Elapsed().Seconds(), "series/s")
			b.ReportMetric(float64(b.N*benchBatchSeries)/cpuUsed.Seconds(), "series/cpu-s")
		})
	}
}

// BenchmarkHeadMemoryPerSeries appends 120 or 20 samples at 15 s to each of N
// series and reports heap in use after GC divided by N. Prometheus keeps
// its head chunks mmapped, as it does by default.
func BenchmarkHeadMemoryPerSeries(b *testing.B) {
	const series = 20000
	for _, st := range benchStores {
		// 120 samples fill a chunk; 20 are ten minutes at 30 s, the open
		// chunks of a head whose series are young or were just flushed.
		for _, samples := range []int64{120, 20} {
			b.Run(fmt.Sprintf("%s/samples=%d", st.name, samples), func(b *testing.B) {
				var perSeries float64
				for n := 0; n < b.N; n++ {
					lss := make([]labels.Labels, series)
					for i := range lss {
						lss[i] = benchLabels(i)
					}
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					db := st.open(b)
					refs := make([]promstorage.SeriesRef, series)
					for k := int64(0); k < samples; k++ {
						app := db.Appender(context.Background())
						for i := range lss {
							ref, err := app.Append(refs[i], lss[i], k*15_000, float64(k*7+int64(i%100)))
							if err != nil {
								b.Fatal(err)
							}
							refs[i] = ref
						}
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
					}
					lss = nil
					runtime.GC()
					runtime.GC()
					runtime.ReadMemStats(&after)
					perSeries = (float64(after.HeapInuse) - float64(before.HeapInuse)) / series
					runtime.KeepAlive(db)
					runtime.KeepAlive(refs)
					db.Close()
				}
				b.ReportMetric(perSeries, "B/series")
			})
		}
	}
}
