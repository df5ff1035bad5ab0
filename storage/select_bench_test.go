package storage

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Query latency over many series (issue 7: the high-cardinality PromQL
// suite of weft-bench), weft beside Prometheus' TSDB loaded with the same
// data in the same run, through the same upstream PromQL engine:
//
//	go test -run '^$' -bench BenchmarkSelect -benchtime 5x ./storage/
//
// WEFT_SELECT_SERIES (default 200000) sizes the data set: GPU nodes of 8
// GPUs x 17 DCGM metrics with weft-bench's label shape (19 labels), one
// sample per 30 s for 20 minutes; a tenth of the runs end halfway and a
// successor run starts on their nodes (churn). weft holds the first half of
// every series in Pebble (flushed) and the rest in its head (everything in
// its head with WEFT_SELECT_FLUSH=2, as in a 10-minute weft-bench run);
// Prometheus holds everything in its head, as it does for the first two
// hours.
//
// Every sub-benchmark runs the weft query and then the Prometheus query in
// each iteration and reports the process CPU time of each (weft-cpu-ms,
// prom-cpu-ms), their ratio (weft/prom, below 1 is better for weft) and the
// bytes each allocated. The answers of the two stores must match.

var selectBenchMetrics = []string{
	"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_TEMP",
	"DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_XID_ERRORS",
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
	"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
}

const (
	selectBenchInterval = 30_000 // ms
	selectBenchSamples  = 40     // per series: 20 minutes
	selectBenchNodesRun = 4      // nodes per training run
)

var (
	selectBenchModels = []string{"llama-3-70b", "llama-3-8b", "mixtral-8x22b", "qwen2-72b", "gpt-neox-20b", "dit-xl", "whisper-large"}
	selectBenchTeams  = []string{"pretrain", "post-train", "multimodal", "speech", "research", "eval", "infra"}
)

// selectBenchSeries is one generated series: labels and the sample range
// [from, to) of the scrape steps it has samples at.
type selectBenchSeries struct {
	ls       labels.Labels
	from, to int
}

// genSelectBench returns the series of nodes GPU nodes with the label shape
// of weft-bench's fleet.
func genSelectBench(nodes int) []selectBenchSeries {
	var out []selectBenchSeries
	runSeq := 0
	for first := 0; first < nodes; first += selectBenchNodesRun {
		last := min(first+selectBenchNodesRun, nodes)
		// Every tenth run ends halfway; a successor takes its nodes.
		spans := [][2]int{{0, selectBenchSamples}}
		if (first/selectBenchNodesRun)%10 == 9 {
			spans = [][2]int{{0, selectBenchSamples / 2}, {selectBenchSamples / 2, selectBenchSamples}}
		}
		for _, sp := range spans {
			runSeq++
			run := fmt.Sprintf("r%d", runSeq)
			model := selectBenchModels[runSeq%len(selectBenchModels)]
			team := selectBenchTeams[(runSeq/3)%len(selectBenchTeams)]
			for n := first; n < last; n++ {
				host := fmt.Sprintf("gpu-node-%05d", n)
				for g := 0; g < 8; g++ {
					for _, m := range selectBenchMetrics {
						out = append(out, selectBenchSeries{from: sp[0], to: sp[1], ls: labels.FromStrings(
							"__name__", m,
							"Hostname", host,
							"UUID", fmt.Sprintf("GPU-%08x-%04x-%04x", uint32(n*2654435761+g*40503), g*7919&0xffff, n&0xffff),
							"cluster", fmt.Sprintf("gpu-east-%d", n%3),
							"container", "trainer",
							"dataset", "fineweb-edu",
							"device", fmt.Sprintf("nvidia%d", g),
							"gpu", fmt.Sprint(g),
							"instance", host+":9400",
							"job", "dcgm-exporter",
							"model", model,
							"modelName", "NVIDIA H100 80GB HBM3",
							"namespace", team,
							"pod", fmt.Sprintf("%s-worker-%d", run, n-first),
							"rank", fmt.Sprint((n-first)*8+g),
							"run_id", run,
							"team", team,
							"tenant", fmt.Sprintf("tenant-%d", runSeq%3),
						)})
					}
				}
			}
		}
	}
	return out
}

// selectBenchValue is a deterministic sample value: counters grow, gauges
// wander.
func selectBenchValue(i, step int) float64 {
	if strings.HasSuffix(selectBenchMetrics[i%len(selectBenchMetrics)], "TOTAL_ENERGY_CONSUMPTION") {
		return float64(i%1000)*1e6 + float64(step)*21000
	}
	return float64((i*7+step*13)%100) + 0.5
}

// loadSelectBench appends steps [from, to) of all to a, one commit per
// scrape step of 10,000 series. The last sample of a series whose run ended
// is a staleness marker, as Prometheus writes.
func loadSelectBench(tb testing.TB, a promstorage.Appendable, all []selectBenchSeries, refs []promstorage.SeriesRef, base int64, from, to int) {
	tb.Helper()
	const batch = 10_000
	for step := from; step < to; step++ {
		t := base + int64(step)*selectBenchInterval
		for lo := 0; lo < len(all); lo += batch {
			app := a.Appender(context.Background())
			for i := lo; i < min(lo+batch, len(all)); i++ {
				s := all[i]
				if step < s.from || step >= s.to {
					continue
				}
				v := selectBenchValue(i, step)
				if step == s.to-1 && s.to < selectBenchSamples {
					v = math.Float64frombits(value.StaleNaN)
				}
				ref, err := app.Append(refs[i], s.ls, t+int64(i%1000), v)
				if err != nil {
					tb.Fatalf("append %s: %v", s.ls, err)
				}
				refs[i] = ref
			}
			if err := app.Commit(); err != nil {
				tb.Fatalf("commit: %v", err)
			}
		}
	}
}

type selectBenchFixture struct {
	weft   *DB
	prom   *tsdb.DB
	engine *promql.Engine
	end    int64 // evaluation time of instant queries (ms)
	series int
}

func newSelectBenchFixture(b *testing.B) *selectBenchFixture {
	n := envInt(b, "WEFT_SELECT_SERIES", 200_000)
	nodes := max(1, n/(8*len(selectBenchMetrics)))
	all := genSelectBench(nodes)
	base := time.Now().Add(-30 * time.Minute).Truncate(time.Minute).UnixMilli()
	f := &selectBenchFixture{series: len(all), end: base + selectBenchSamples*selectBenchInterval}

	opts := DefaultOptions()
	opts.CheckpointInterval = -1
	opts.FutureWindow = -1
	w, err := Open(context.Background(), b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	f.weft = w
	popts := tsdb.DefaultOptions()
	popts.RetentionDuration = 0
	p, err := tsdb.Open(b.TempDir(), nil, nil, popts, nil)
	if err != nil {
		b.Fatal(err)
	}
	f.prom = p
	b.Cleanup(func() {
		_ = f.weft.Close()
		_ = f.prom.Close()
	})

	refs := make([]promstorage.SeriesRef, len(all))
	loadSelectBench(b, f.weft, all, refs, base, 0, selectBenchSamples/2)
	if envInt(b, "WEFT_SELECT_FLUSH", 1) == 1 {
		if err := f.weft.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	loadSelectBench(b, f.weft, all, refs, base, selectBenchSamples/2, selectBenchSamples)
	clear(refs)
	loadSelectBench(b, f.prom, all, refs, base, 0, selectBenchSamples)

	f.engine = promql.NewEngine(promql.EngineOpts{
		MaxSamples:           50_000_000,
		Timeout:              2 * time.Minute,
		LookbackDelta:        5 * time.Minute,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		Parser:               parser.NewParser(parser.Options{}),
	})
	runtime.GC()
	return f
}

// selectBenchCase is one query of the suite; run returns a canonical form of
// the answer for comparing the stores.
type selectBenchCase struct {
	name string
	run  func(tb testing.TB, f *selectBenchFixture, st promstorage.Queryable) string
}

func instantCase(name, expr string) selectBenchCase {
	return selectBenchCase{name, func(tb testing.TB, f *selectBenchFixture, st promstorage.Queryable) string {
		q, err := f.engine.NewInstantQuery(context.Background(), st, nil, expr, time.UnixMilli(f.end))
		if err != nil {
			tb.Fatal(err)
		}
		defer q.Close()
		return canonicalResult(tb, q.Exec(context.Background()))
	}}
}

func rangeCase(name, expr string, rng, step time.Duration) selectBenchCase {
	return selectBenchCase{name, func(tb testing.TB, f *selectBenchFixture, st promstorage.Queryable) string {
		end := time.UnixMilli(f.end).Truncate(step)
		q, err := f.engine.NewRangeQuery(context.Background(), st, nil, expr, end.Add(-rng), end, step)
		if err != nil {
			tb.Fatal(err)
		}
		defer q.Close()
		return canonicalResult(tb, q.Exec(context.Background()))
	}}
}

// seriesCase is what /api/v1/series does with one matcher set.
func seriesCase(name string, rng time.Duration, ms ...*labels.Matcher) selectBenchCase {
	return selectBenchCase{name, func(tb testing.TB, f *selectBenchFixture, st promstorage.Queryable) string {
		mint := f.end - rng.Milliseconds()
		q, err := st.Querier(mint, f.end)
		if err != nil {
			tb.Fatal(err)
		}
		defer q.Close()
		ss := q.Select(context.Background(), false, &promstorage.SelectHints{Start: mint, End: f.end, Func: "series"}, ms...)
		// The API encodes each series' labels; a hash reads them all too,
		// and its sum does not depend on the order.
		n, sum := 0, uint64(0)
		for ss.Next() {
			n++
			sum += ss.At().Labels().Hash()
		}
		if err := ss.Err(); err != nil {
			tb.Fatal(err)
		}
		return fmt.Sprintf("%d series, label hash sum %x", n, sum)
	}}
}

// rawCase selects and reads every sample of the last rng (storage only, no
// engine), as a selector's expansion does.
func rawCase(name string, rng time.Duration, ms ...*labels.Matcher) selectBenchCase {
	return selectBenchCase{name, func(tb testing.TB, f *selectBenchFixture, st promstorage.Queryable) string {
		mint := f.end - rng.Milliseconds()
		q, err := st.Querier(mint, f.end)
		if err != nil {
			tb.Fatal(err)
		}
		defer q.Close()
		ss := q.Select(context.Background(), false, &promstorage.SelectHints{Start: mint, End: f.end}, ms...)
		var it chunkenc.Iterator
		n, sum := 0, 0.0
		for ss.Next() {
			it = ss.At().Iterator(it)
			for vt := it.Seek(mint); vt != chunkenc.ValNone; vt = it.Next() {
				t, v := it.At()
				if t > f.end {
					break
				}
				n++
				if !math.IsNaN(v) {
					sum += v
				}
			}
			if err := it.Err(); err != nil {
				tb.Fatal(err)
			}
		}
		if err := ss.Err(); err != nil {
			tb.Fatal(err)
		}
		return fmt.Sprintf("%d samples, sum %.6g", n, sum)
	}}
}

func canonicalResult(tb testing.TB, r *promql.Result) string {
	tb.Helper()
	if r.Err != nil {
		tb.Fatal(r.Err)
	}
	var lines []string
	switch v := r.Value.(type) {
	case promql.Vector:
		for _, s := range v {
			lines = append(lines, fmt.Sprintf("%s %d %.6g", s.Metric, s.T, s.F))
		}
	case promql.Matrix:
		for _, s := range v {
			var b strings.Builder
			fmt.Fprintf(&b, "%s", s.Metric)
			for _, p := range s.Floats {
				fmt.Fprintf(&b, " %d:%.6g", p.T, p.F)
			}
			lines = append(lines, b.String())
		}
	default:
		lines = append(lines, v.String())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

var selectBenchCases = []selectBenchCase{
	rawCase("raw_regex_5m", 5*time.Minute,
		labels.MustNewMatcher(labels.MatchRegexp, "__name__", "DCGM_FI_DEV_.*"),
		labels.MustNewMatcher(labels.MatchRegexp, "pod", ".+")),
	instantCase("gpu_pods_all", `count by (__name__) ({__name__=~"DCGM_FI_DEV_.*", pod=~".+"})`),
	instantCase("power_by_pod", `DCGM_FI_DEV_POWER_USAGE{pod=~".+"}`),
	instantCase("util_run_regex", `sum by (run_id) (max_over_time(DCGM_FI_DEV_GPU_UTIL{run_id=~"r1.*"}[1h]))`),
	rangeCase("energy_rate_by_model_1h", `sum by (model) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))`, time.Hour, time.Minute),
	rangeCase("util_by_team_1h", `avg by (team) (DCGM_FI_DEV_GPU_UTIL)`, time.Hour, time.Minute),
	instantCase("runs_per_team", `count by (team) (count by (team, run_id) (DCGM_FI_DEV_GPU_UTIL))`),
	instantCase("gpus_by_tenant", `count by (tenant) (DCGM_FI_DEV_GPU_UTIL)`),
	seriesCase("series_util", 24*time.Hour, labels.MustNewMatcher(labels.MatchEqual, "__name__", "DCGM_FI_DEV_GPU_UTIL")),
	seriesCase("series_xid_runs", time.Hour,
		labels.MustNewMatcher(labels.MatchEqual, "__name__", "DCGM_FI_DEV_XID_ERRORS"),
		labels.MustNewMatcher(labels.MatchRegexp, "run_id", "r1.*")),
}

// measureQuery runs fn once and returns the process CPU time and the bytes
// allocated meanwhile.
func measureQuery(fn func()) (cpu time.Duration, alloc uint64) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	done := startCPU()
	fn()
	cpu, _ = done()
	runtime.ReadMemStats(&m1)
	return cpu, m1.TotalAlloc - m0.TotalAlloc
}

func BenchmarkSelect(b *testing.B) {
	f := newSelectBenchFixture(b)
	b.Logf("%d series", f.series)
	for _, c := range selectBenchCases {
		b.Run(c.name, func(b *testing.B) {
			var wCPU, pCPU time.Duration
			var wAlloc, pAlloc uint64
			var wAns, pAns string
			for i := 0; i < b.N; i++ {
				// The pprof labels let a -cpuprofile be split per store
				// (go tool pprof -tagfocus store=weft).
				cpu, alloc := measureQuery(func() {
					pprof.Do(context.Background(), pprof.Labels("store", "weft", "query", c.name), func(context.Context) { wAns = c.run(b, f, f.weft) })
				})
				wCPU, wAlloc = wCPU+cpu, wAlloc+alloc
				cpu, alloc = measureQuery(func() {
					pprof.Do(context.Background(), pprof.Labels("store", "prometheus", "query", c.name), func(context.Context) { pAns = c.run(b, f, f.prom) })
				})
				pCPU, pAlloc = pCPU+cpu, pAlloc+alloc
				if wAns != pAns {
					b.Fatalf("answers differ:\nweft: %.500s\nprometheus: %.500s", wAns, pAns)
				}
			}
			n := float64(b.N)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(wCPU.Seconds()*1e3/n, "weft-cpu-ms")
			b.ReportMetric(pCPU.Seconds()*1e3/n, "prom-cpu-ms")
			b.ReportMetric(wCPU.Seconds()/pCPU.Seconds(), "weft/prom")
			b.ReportMetric(float64(wAlloc)/n/(1<<20), "weft-MB")
			b.ReportMetric(float64(pAlloc)/n/(1<<20), "prom-MB")
		})
	}
}
