package index

// Benchmarks against Prometheus' head, each weft figure beside Prometheus'
// in the same `go test -bench` run:
//
//	go test -run '^$' -bench 'CreateSeries|GetExistingSeries' -benchtime 300000x ./index/
//	go test -run '^$' -bench ShuffledCreate -benchtime 300000x ./index/   (worst case: no locality)
//	WEFT_BENCH_SERIES=1000000 go test -run '^$' -bench MemoryPerSeries -benchtime 1x ./index/
//	WEFT_BENCH_SERIES=1000000 go test -run '^$' -bench Postings -benchtime 50x ./index/
//
// (At 5M series the postings fixture holds ~9 GiB: set GOMEMLIMIT.)
//
// Each benchmark reports wall time and "cpu-ns/op", the process CPU time
// (getrusage) per operation: on a machine shared with other work, CPU time is
// the steadier figure. Each weft benchmark reports "x_prometheus" (CPU time
// ratio) and "x_prometheus_wall": its figure divided by the Prometheus figure
// measured just before it in the same run (so run each pair together).

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"
)

// benchSeries is the fixture size: WEFT_BENCH_SERIES, default 1M (fits a
// shared machine; 5M for the report when memory allows).
func benchSeries(tb testing.TB) int {
	if s := os.Getenv("WEFT_BENCH_SERIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			tb.Fatalf("WEFT_BENCH_SERIES=%q: want a positive integer", s)
		}
		return n
	}
	return 1_000_000
}

var gpuMetrics = []string{
	"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_XID_ERRORS",
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
	"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES",
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_RETIRED_PENDING",
}

var gpuModels = []string{"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-405B", "mistralai/Mixtral-8x22B-v0.1", "Qwen/Qwen2.5-72B", "deepseek-ai/DeepSeek-V3-Base", "EleutherAI/gpt-neox-20b"}

// gpuSeries returns the labels of series i of a DCGM-like GPU workload: 12
// labels, ~350 bytes. Series are laid out metric-major within a GPU: 32
// metrics per GPU, 8 GPUs per host, 4 hosts (one pod each) per training run,
// 24 team namespaces.
func gpuSeries(b *labels.ScratchBuilder, i int) labels.Labels {
	metric := gpuMetrics[i%len(gpuMetrics)]
	g := i / len(gpuMetrics)
	host, gpu := g/8, g%8
	run := host / 4
	h := fnv.New128a()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(g))
	h.Write(buf[:])
	u := hex.EncodeToString(h.Sum(nil))
	runID := fmt.Sprintf("r%06d", run)

	b.Reset()
	b.Add("__name__", metric)
	b.Add("job", "dcgm-exporter")
	b.Add("instance", fmt.Sprintf("10.%d.%d.%d:9400", host>>16&255, host>>8&255, host&255))
	b.Add("Hostname", fmt.Sprintf("gpu-node-%06d.us-east-2.compute.internal", host))
	b.Add("gpu", strconv.Itoa(gpu))
	b.Add("UUID", "GPU-"+u[0:8]+"-"+u[8:12]+"-"+u[12:16]+"-"+u[16:20]+"-"+u[20:32])
	b.Add("modelName", "NVIDIA H100 80GB HBM3")
	b.Add("namespace", fmt.Sprintf("ml-training-team-%02d", run%24))
	b.Add("pod", fmt.Sprintf("train-%s-worker-%d", runID, host%4))
	b.Add("container", "pytorch-distributed-trainer")
	b.Add("run_id", runID)
	b.Add("model", gpuModels[run%len(gpuModels)])
	b.Sort()
	return b.Labels()
}

func labelBytes(ls labels.Labels) int {
	n := 0
	ls.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) })
	return n
}

func benchIndex(tb testing.TB) *Index {
	tb.Helper()
	ix, _, _ := testIndex(tb, DefaultOptions())
	return ix
}

func benchHead(tb testing.TB) *tsdb.Head {
	tb.Helper()
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = tb.TempDir()
	h, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := h.Init(0); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// promAppendBatch is how many series one Prometheus commit carries (a scrape
// or remote-write request's worth).
const promAppendBatch = 5000

// genBatch is how many label sets are generated, untimed, at a time.
const genBatch = 10000

// cpuTime returns the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// opTimer measures wall and CPU time of the measured sections only.
type opTimer struct {
	wall, cpu time.Duration
	w0        time.Time
	c0        time.Duration
}

func (t *opTimer) start() { t.w0, t.c0 = time.Now(), cpuTime() }
func (t *opTimer) stop() {
	t.wall += time.Since(t.w0)
	t.cpu += cpuTime() - t.c0
}

// promFigures holds the Prometheus figures (wall, cpu ns/op) each weft
// benchmark of a pair divides by.
var promFigures = map[string][2]float64{}

// report records a pair member's figures; prometheus members store them,
// weft members report the ratios.
func report(b *testing.B, key string, prometheus bool, t *opTimer) {
	wall := float64(t.wall.Nanoseconds()) / float64(b.N)
	cpu := float64(t.cpu.Nanoseconds()) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	if prometheus {
		promFigures[key] = [2]float64{wall, cpu}
		return
	}
	if p, ok := promFigures[key]; ok && p[0] > 0 && p[1] > 0 {
		b.ReportMetric(wall/p[0], "x_prometheus_wall")
		b.ReportMetric(cpu/p[1], "x_prometheus")
	}
}

// BenchmarkCreateSeries: new 12-label series per second. Prometheus: head
// appender creating the series with one sample each, committing every
// promAppendBatch. weft: Index.GetOrCreate. Series arrive target by target,
// as scrapes and remote-write requests deliver them.
func BenchmarkCreateSeries(b *testing.B) {
	benchCreate(b, "create", func(n int) func(int) int { return func(i int) int { return i } })
}

// BenchmarkShuffledCreate is BenchmarkCreateSeries with the series in random
// order: no two consecutive series share a target, so the index's shortcuts
// for streams that share values with the previous one (hot values in
// interning and postings) never help. It is the worst case for weft's write
// path, not a realistic one.
func BenchmarkShuffledCreate(b *testing.B) {
	benchCreate(b, "create_shuffled", func(n int) func(int) int {
		perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
		return func(i int) int { return perm[i] }
	})
}

// benchCreate runs the create pair; order(b.N) maps the i-th created series
// to the gpuSeries index it creates.
func benchCreate(b *testing.B, key string, order func(n int) func(int) int) {
	run := func(b *testing.B, prometheus bool, create func(ls []labels.Labels)) {
		var sb labels.ScratchBuilder
		var t opTimer
		batch := make([]labels.Labels, 0, genBatch)
		at := order(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			b.StopTimer()
			batch = batch[:0]
			for j := 0; j < genBatch && done+j < b.N; j++ {
				batch = append(batch, gpuSeries(&sb, at(done+j)))
			}
			b.StartTimer()
			t.start()
			create(batch)
			t.stop()
			done += len(batch)
		}
		b.StopTimer()
		report(b, key, prometheus, &t)
	}
	b.Run("prometheus_head", func(b *testing.B) {
		h := benchHead(b)
		run(b, true, func(batch []labels.Labels) {
			for i := 0; i < len(batch); i += promAppendBatch {
				app := h.Appender(context.Background())
				for _, ls := range batch[i:min(i+promAppendBatch, len(batch))] {
					if _, err := app.Append(0, ls, 1000, 1); err != nil {
						b.Fatal(err)
					}
				}
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("weft_index", func(b *testing.B) {
		ix := benchIndex(b)
		run(b, false, func(batch []labels.Labels) {
			for _, ls := range batch {
				if _, _, err := ix.GetOrCreate(KindMetric, ls, 1000); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkGetExistingSeries: the write path for a known series (hash lookup).
func BenchmarkGetExistingSeries(b *testing.B) {
	const n = 100_000
	var sb labels.ScratchBuilder
	sets := make([]labels.Labels, n)
	for i := range sets {
		sets[i] = gpuSeries(&sb, i)
	}
	b.Run("prometheus_head", func(b *testing.B) {
		h := benchHead(b)
		app := h.Appender(context.Background())
		for _, ls := range sets {
			if _, err := app.Append(0, ls, 1000, 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		var t opTimer
		t.start()
		app = h.Appender(context.Background())
		for i := 0; i < b.N; i++ {
			if i%promAppendBatch == promAppendBatch-1 {
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
				app = h.Appender(context.Background())
			}
			// ref 0: Prometheus looks the series up by labels, like a remote-write receiver.
			if _, err := app.Append(0, sets[i%n], int64(2000+i/n), 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
		t.stop()
		report(b, "existing", true, &t)
	})
	b.Run("weft_index", func(b *testing.B) {
		ix := benchIndex(b)
		for _, ls := range sets {
			mustCreate(b, ix, KindMetric, ls, 1000)
		}
		b.ReportAllocs()
		b.ResetTimer()
		var t opTimer
		t.start()
		for i := 0; i < b.N; i++ {
			if _, _, err := ix.GetOrCreate(KindMetric, sets[i%n], 2000); err != nil {
				b.Fatal(err)
			}
		}
		t.stop()
		report(b, "existing", false, &t)
	})
}

// heapInuse returns HeapInuse after two GCs.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// BenchmarkMemoryPerSeries: retained heap per active series after creating
// WEFT_BENCH_SERIES series (label sets built fresh per series, as decoded
// from requests, so each system pays for what it keeps). Run with -benchtime 1x.
func BenchmarkMemoryPerSeries(b *testing.B) {
	n := benchSeries(b)
	var sb labels.ScratchBuilder
	total := 0
	for i := 0; i < 1000; i++ {
		total += labelBytes(gpuSeries(&sb, i*997%n))
	}
	measure := func(b *testing.B, setup func() (add func(ls labels.Labels), done func(), keep any)) {
		for i := 0; i < b.N; i++ {
			before := heapInuse()
			add, done, keep := setup()
			for j := 0; j < n; j++ {
				add(gpuSeries(&sb, j))
			}
			done()
			after := heapInuse()
			runtime.KeepAlive(keep)
			per := float64(int64(after)-int64(before)) / float64(n)
			lastMetric = per
			b.ReportMetric(per, "B/series")
			b.ReportMetric(float64(total)/1000, "label_B/series")
		}
	}
	b.Run("prometheus_head", func(b *testing.B) {
		measure(b, func() (func(labels.Labels), func(), any) {
			h := benchHead(b)
			app := h.Appender(context.Background())
			k := 0
			return func(ls labels.Labels) {
					if _, err := app.Append(0, ls, 1000, 1); err != nil {
						b.Fatal(err)
					}
					if k++; k%promAppendBatch == 0 {
						if err := app.Commit(); err != nil {
							b.Fatal(err)
						}
						app = h.Appender(context.Background())
					}
				}, func() {
					if err := app.Commit(); err != nil {
						b.Fatal(err)
					}
				}, h
		})
		promMemory = lastMetric
	})
	b.Run("weft_index", func(b *testing.B) {
		measure(b, func() (func(labels.Labels), func(), any) {
			ix := benchIndex(b)
			return func(ls labels.Labels) {
				if _, _, err := ix.GetOrCreate(KindMetric, ls, 1000); err != nil {
					b.Fatal(err)
				}
			}, func() {}, ix
		})
		if promMemory > 0 {
			b.ReportMetric(lastMetric/promMemory, "x_prometheus")
		}
	})
}

// lastMetric is the last B/series measured, promMemory Prometheus' (shared by
// the two sub-benchmarks).
var lastMetric, promMemory float64

// postingsFixture holds N series in both indexes, built once per run.
type postingsFixture struct {
	ix   *Index
	head *tsdb.Head
	ir   tsdb.IndexReader
	// close releases the fixture; TestMain calls it after every benchmark.
	close func()
}

func closePostingsFixture() {
	if fixture.close != nil {
		fixture.close()
	}
}

var (
	fixtureOnce sync.Once
	fixture     postingsFixture
)

func getPostingsFixture(b *testing.B) *postingsFixture {
	fixtureOnce.Do(func() {
		n := benchSeries(b)
		// Not b.TempDir: the fixture outlives this sub-benchmark.
		dir, err := os.MkdirTemp("", "weft-index-bench")
		if err != nil {
			b.Fatal(err)
		}
		db := openTestDB(b, dir)
		ix, err := Open(db, DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		hopts := tsdb.DefaultHeadOptions()
		hopts.ChunkDirRoot = dir + "/head"
		head, err := tsdb.NewHead(nil, nil, nil, nil, hopts, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := head.Init(0); err != nil {
			b.Fatal(err)
		}
		var sb labels.ScratchBuilder
		app := head.Appender(context.Background())
		for i := 0; i < n; i++ {
			ls := gpuSeries(&sb, i)
			if _, err := app.Append(0, ls, 1000, 1); err != nil {
				b.Fatal(err)
			}
			if _, _, err := ix.GetOrCreate(KindMetric, ls, 1000); err != nil {
				b.Fatal(err)
			}
			if i%promAppendBatch == promAppendBatch-1 {
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
				app = head.Appender(context.Background())
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
		ir, err := head.Index()
		if err != nil {
			b.Fatal(err)
		}
		fixture = postingsFixture{ix: ix, head: head, ir: ir, close: func() {
			_ = ir.Close()
			_ = head.Close()
			_ = ix.Close()
			_ = db.Close()
			_ = os.RemoveAll(dir)
		}}
	})
	return &fixture
}

// BenchmarkPostings: matcher resolution over WEFT_BENCH_SERIES series.
// Prometheus: tsdb.PostingsForMatchers on the head's index, expanded; weft:
// Index.Postings (a materialized bitmap).
func BenchmarkPostings(b *testing.B) {
	cases := []struct {
		name string
		ms   []*labels.Matcher
	}{
		{"pod=~.+", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "pod", ".+")}},
		{"namespace=x,pod=~y.*", []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "namespace", "ml-training-team-03"),
			labels.MustNewMatcher(labels.MatchRegexp, "pod", "train-r0001.*"),
		}},
		{"__name__=x,gpu=~0|1", []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "__name__", "DCGM_FI_DEV_GPU_UTIL"),
			labels.MustNewMatcher(labels.MatchRegexp, "gpu", "0|1"),
		}},
		{"run_id=x,__name__!~DCGM_FI_PROF.*", []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "run_id", "r000042"),
			labels.MustNewMatcher(labels.MatchNotRegexp, "__name__", "DCGM_FI_PROF.*"),
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			f := getPostingsFixture(b)
			var promCount, weftCount int
			b.Run("prometheus_head", func(b *testing.B) {
				ctx := context.Background()
				var t opTimer
				t.start()
				for i := 0; i < b.N; i++ {
					p, err := tsdb.PostingsForMatchers(ctx, f.ir, tc.ms...)
					if err != nil {
						b.Fatal(err)
					}
					refs, err := index.ExpandPostings(p)
					if err != nil {
						b.Fatal(err)
					}
					promCount = len(refs)
				}
				t.stop()
				b.ReportMetric(float64(promCount), "series")
				report(b, "postings", true, &t)
			})
			b.Run("weft_index", func(b *testing.B) {
				ctx := context.Background()
				var t opTimer
				t.start()
				for i := 0; i < b.N; i++ {
					bm, err := f.ix.Postings(ctx, KindMetric, 0, 2000, tc.ms...)
					if err != nil {
						b.Fatal(err)
					}
					weftCount = int(bm.GetCardinality())
				}
				t.stop()
				b.ReportMetric(float64(weftCount), "series")
				report(b, "postings", false, &t)
			})
			if promCount != weftCount {
				b.Fatalf("Prometheus found %d series, weft %d", promCount, weftCount)
			}
		})
	}
}

// uniqueSeries returns the labels of series i of the storage engine's
// benchmark workload (storage/bench_test.go benchLabels): one metric, a unique
// gpu_uuid and instance per series, a new pod every 8 series and a new run_id
// every 64, so ~2.1 label values per series are new to the index.
func uniqueSeries(b *labels.ScratchBuilder, i int) labels.Labels {
	b.Reset()
	b.Add("__name__", "DCGM_FI_DEV_GPU_UTIL")
	b.Add("cluster", "gpu-cluster-eu-west-4-prod")
	b.Add("container", "trainer-main-container")
	b.Add("gpu", strconv.Itoa(i%8))
	b.Add("gpu_uuid", fmt.Sprintf("GPU-%08x-4e1f-9c2a-7b3d-%012x", i*2654435761%(1<<32), i))
	b.Add("instance", fmt.Sprintf("10.%d.%d.%d:9400", i/65536%256, i/256%256, i%256))
	b.Add("job", "dcgm-exporter-daemonset")
	b.Add("model", "llama-3-70b-instruct-finetune")
	b.Add("namespace", "ml-training-production")
	b.Add("pod", fmt.Sprintf("trainer-job-7f9c4d5b8-worker-%06d", i/8))
	b.Add("run_id", fmt.Sprintf("run-2026-11-30-%06d", i/64))
	b.Add("team", "foundation-models-research")
	b.Sort()
	return b.Labels()
}

// BenchmarkCreateUniqueValues: Index.GetOrCreate on uniqueSeries, where most
// postings lists hold one or a few IDs. It reports cpu-ns/op and the retained
// heap per series (B/series):
//
//	go test -run '^$' -bench CreateUniqueValues -benchtime 100000x -cpu 1 ./index/
func BenchmarkCreateUniqueValues(b *testing.B) {
	var sb labels.ScratchBuilder
	ix := benchIndex(b)
	batch := make([]labels.Labels, 0, genBatch)
	var t opTimer
	before := heapInuse()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		batch = batch[:0]
		for j := 0; j < genBatch && done+j < b.N; j++ {
			batch = append(batch, uniqueSeries(&sb, done+j))
		}
		b.StartTimer()
		t.start()
		for _, ls := range batch {
			if _, _, err := ix.GetOrCreate(KindMetric, ls, 1000); err != nil {
				b.Fatal(err)
			}
		}
		t.stop()
		done += len(batch)
	}
	b.StopTimer()
	batch = nil
	after := heapInuse()
	runtime.KeepAlive(ix)
	report(b, "create_unique", false, &t)
	b.ReportMetric(float64(int64(after)-int64(before))/float64(b.N), "B/series")
}

// BenchmarkPostingsUniqueValues: matchers over labels whose values are mostly
// carried by one or a few streams (uniqueSeries), the read side of
// BenchmarkCreateUniqueValues:
//
//	go test -run '^$' -bench PostingsUniqueValues -benchtime 50x -cpu 1 ./index/
func BenchmarkPostingsUniqueValues(b *testing.B) {
	const n = 100_000
	var sb labels.ScratchBuilder
	ix := benchIndex(b)
	for i := 0; i < n; i++ {
		if _, _, err := ix.GetOrCreate(KindMetric, uniqueSeries(&sb, i), 1000); err != nil {
			b.Fatal(err)
		}
	}
	cases := []struct {
		name string
		ms   []*labels.Matcher
	}{
		{"instance=x", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "instance", "10.0.1.7:9400")}},
		{"instance=~prefix", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "instance", "10.1.2.*")}},
		{"pod=~set", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "pod", "trainer-job-7f9c4d5b8-worker-00000[0-9]")}},
		{"gpu_uuid=~scan", []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "gpu_uuid", ".*-0000000000[0-9]{2}")}},
		{"run_id=x,instance!=y", []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "run_id", "run-2026-11-30-000100"),
			labels.MustNewMatcher(labels.MatchNotEqual, "instance", "10.0.25.1:9400"),
		}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var t opTimer
			count := 0
			b.ReportAllocs()
			t.start()
			for i := 0; i < b.N; i++ {
				bm, err := ix.Postings(ctx, KindMetric, 0, 2000, tc.ms...)
				if err != nil {
					b.Fatal(err)
				}
				count = int(bm.GetCardinality())
			}
			t.stop()
			if count == 0 {
				b.Fatal("no series matched")
			}
			b.ReportMetric(float64(count), "series")
			report(b, "postings_unique", false, &t)
		})
	}
}

// BenchmarkLabels measures Index.Labels, which queries call once for every
// matching series: the direct encoding (the default label build) beside the
// labels.ScratchBuilder path the other label builds use.
//
//	go test ./index -run '^$' -bench BenchmarkLabels -cpu 1
func BenchmarkLabels(b *testing.B) {
	ix, _, _ := testIndex(b, DefaultOptions())
	sb := labels.NewScratchBuilder(16)
	const n = 10000
	ids := make([]ID, n)
	for i := range ids {
		ids[i] = mustCreate(b, ix, KindMetric, gpuSeries(&sb, i), 1000)
	}
	r, _ := ix.rec(ids[0])
	want, err := ix.syms.buildLabelsScratch(r.enc, &sb)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []struct {
		name  string
		build func(enc string) (labels.Labels, error)
	}{
		{"direct", ix.syms.encodeLabels},
		{"scratch", func(enc string) (labels.Labels, error) { return ix.syms.buildLabelsScratch(enc, &sb) }},
	} {
		b.Run(m.name, func(b *testing.B) {
			if got, err := m.build(r.enc); err != nil || !labels.Equal(got, want) {
				b.Fatalf("built %s (%v), want %s", got, err, want)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r, _ := ix.rec(ids[i%n])
				if _, err := m.build(r.enc); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
