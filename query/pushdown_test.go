package query_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// pushdownStore fills a weft store with series that exercise the pushdown:
// gauges and counters (with resets) in groups, series without the grouping
// label, stale markers, NaN values, gaps, series that start and end inside
// the queried range, irregular intervals, and one native histogram.
func pushdownStore(t testing.TB) (*storage.DB, int64) {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.CheckpointInterval = -1
	opts.Retention = -1
	opts.SamplesPerChunk = 16 // many sealed chunks, read back from Pebble
	db, err := storage.Open(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })

	const base = int64(1_790_000_000_000) // 2026-09-21, before the store's clock
	r := rand.New(rand.NewPCG(7, 11))
	app := db.Appender(context.Background())
	add := func(ls labels.Labels, t int64, v float64) {
		if _, err := app.Append(0, ls, t, v); err != nil {
			panic(fmt.Sprintf("append %s@%d: %v", ls, t, err))
		}
	}
	teams := []string{"a", "b", "c", ""}
	for i := range 120 {
		team := teams[i%len(teams)]
		model := fmt.Sprintf("m%d", i%5)
		b := labels.NewScratchBuilder(4)
		b.Add("gpu", fmt.Sprint(i))
		b.Add("model", model)
		if team != "" {
			b.Add("team", team)
		}
		rest := b.Labels()
		gauge := labels.NewBuilder(rest).Set(labels.MetricName, "gpu_util").Labels()
		counter := labels.NewBuilder(rest).Set(labels.MetricName, "gpu_energy").Labels()
		ctr := labels.NewBuilder(rest).Set(labels.MetricName, "gpu_ops_total").Labels()
		// Series i lives in [from, to): some the whole hour, some a part.
		from, to := int64(0), int64(3600_000)
		if i%3 == 1 {
			from = int64(r.IntN(1800)) * 1000
		}
		if i%7 == 2 {
			to = from + int64(600+r.IntN(1800))*1000
		}
		step := int64(15_000 + 5_000*(i%3))
		e, ops := float64(r.IntN(1000)), 0.0
		for ts := from; ts < to; ts += step + int64(r.IntN(2000)) - 1000 {
			if r.IntN(20) == 0 {
				continue // a missed scrape
			}
			v := float64(r.IntN(100))
			if r.IntN(50) == 0 {
				v = math.NaN()
			}
			add(gauge, base+ts, v)
			e += float64(r.IntN(500))
			if r.IntN(40) == 0 {
				e = float64(r.IntN(10)) // counter reset
			}
			add(counter, base+ts, e)
			ops += 1 + float64(r.IntN(3))
			add(ctr, base+ts, ops)
		}
		if i%5 == 3 && to < 3600_000 {
			// The target went away: stale markers.
			stale := math.Float64frombits(value.StaleNaN)
			add(gauge, base+to, stale)
			add(counter, base+to, stale)
		}
	}
	h := labels.FromStrings(labels.MetricName, "gpu_latency", "team", "a")
	for ts := int64(0); ts < 3600_000; ts += 30_000 {
		hh := &histogram.Histogram{Count: uint64(ts / 1000), Sum: float64(ts), Schema: 0,
			PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{ts / 1000}}
		if _, err := app.AppendHistogram(0, h, base+ts, hh, nil); err != nil {
			t.Fatalf("append histogram: %v", err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return db, base
}

// TestAggregationPushdownMatchesEngine runs queries through the engine
// alone and through AggregationPushdown and requires the same answers, bit
// for bit, and the same annotations; and that the pushdown took place
// where it should.
func TestAggregationPushdownMatchesEngine(t *testing.T) {
	db, base := pushdownStore(t)
	at := func(s int64) time.Time { return time.UnixMilli(base + s*1000) }
	// weft's engine, and the test engine of Prometheus' own tests, which
	// delays name removal and uses start timestamps (the pushdown then
	// takes less: push is weft's).
	engines := []struct {
		name     string
		engine   promql.QueryEngine
		pushed   promql.QueryEngine
		weftOpts bool
	}{
		{"weft", weftEngine(), query.AggregationPushdown(weftEngine(), query.PushdownOptions{}), true},
		{"test_engine", promqltest.NewTestEngine(t, false, 0, 50_000_000), nil, false},
	}
	engines[1].pushed = query.AggregationPushdown(engines[1].engine, query.PushdownOptions{DelayedNameRemoval: true, StartTimestamps: true})

	for _, tc := range []struct {
		expr string
		push bool // the pushdown takes the aggregation
	}{
		{`sum(gpu_util)`, true},
		{`sum by (team) (gpu_util)`, true},
		{`count by (__name__) ({__name__=~"gpu_.*", team=~".+"})`, false}, // histogram among them
		{`count by (__name__) ({__name__=~"gpu_(util|energy)", team=~".+"})`, true},
		{`avg by (team, model) (gpu_util)`, true},
		{`min by (model) (gpu_util)`, true},
		{`max by (model) (gpu_util)`, true},
		{`group by (team) (gpu_util)`, true},
		{`count by (nope) (gpu_util)`, true},
		{`topk(3, avg by (model) (gpu_util))`, true},
		{`count by (team) (count by (team, model) (gpu_util))`, true},
		{`sum by (model) (rate(gpu_energy[5m]))`, true},
		{`sum by (model) (increase(gpu_energy[2m]))`, true},
		{`avg(rate(gpu_ops_total[1m]))`, true},
		{`sum by (__name__) (rate(gpu_ops_total[5m]))`, true}, // rate drops the name: only rate is pushed
		{`sum by (team) (rate({__name__=~"gpu_ops_total"}[5m]))`, false},
		{`sum(gpu_util offset 5m)`, false},
		{`absent(sum(nonexistent))`, true},
		{`absent(sum(gpu_util))`, true},
		{`sum without (gpu) (gpu_util)`, false},
		{`sum(gpu_latency)`, false}, // histograms: left to the engine
		{`sum by (team) (gpu_util) / on (team) count by (team) (gpu_util)`, true},
		{`max_over_time(sum(gpu_util)[10m:1m])`, false}, // subquery
		// Range functions of each series, and aggregations of them.
		{`rate(gpu_energy[5m])`, true},
		{`increase(gpu_ops_total[1h])`, true},
		{`rate(gpu_util[3m])`, true}, // not a counter: an annotation
		{`delta(gpu_util[10m])`, true},
		{`irate(gpu_energy[2m])`, true},
		{`idelta(gpu_util[90s])`, true},
		{`avg_over_time(gpu_util[5m])`, true},
		{`sum_over_time(gpu_energy[7m])`, true},
		{`min_over_time(gpu_util[5m])`, true},
		{`max_over_time(gpu_util[5m]) > 50`, true},
		{`(min_over_time(gpu_util[5m])) <= 20 or avg_over_time(gpu_util[5m]) != 30`, true},
		{`increase(gpu_energy[10m]) > bool 1000`, true}, // bool: no filter
		{`count(rate(gpu_energy[5m]) >= 10)`, true},
		{`absent(idelta(gpu_util[1m]) > 1e9)`, true},
		{`stddev_over_time(gpu_util[10m]) < -(1)`, true},
		{`count_over_time(gpu_util[4m])`, true},
		{`present_over_time(gpu_util[1m])`, true},
		{`stddev_over_time(gpu_util[10m])`, true},
		{`stdvar_over_time(gpu_energy[10m])`, true},
		{`deriv(gpu_energy[15m])`, true},
		{`predict_linear(gpu_energy[30m], 3600)`, true},
		{`predict_linear(gpu_util[10m], -(600))`, true},
		{`predict_linear(gpu_util[10m], scalar(sum(gpu_util)))`, true}, // the sum, not the function
		{`avg by (model) (avg_over_time(gpu_util[5m]))`, true},
		{`max by (team) (irate(gpu_energy[2m]))`, true},
		{`sum(predict_linear(gpu_energy[1h], 600))`, true},
		{`quantile by (team) (0.9, max_over_time(gpu_util[5m]))`, true},
		{`count by (__name__) (avg_over_time(gpu_util[5m]))`, true}, // only the function
		{`label_replace(avg_over_time(gpu_util[5m]), "x", "$1", "model", "m(.*)")`, true},
		{`timestamp(avg_over_time(gpu_util[5m]))`, true},
		{`absent(avg_over_time(gpu_util[5m]))`, true},
		{`absent(avg_over_time(nonexistent[5m]))`, true},
		{`avg_over_time({__name__=~"gpu_util"}[5m])`, false}, // the name as an equality matcher
		{`avg_over_time(gpu_util[5m] offset 1m)`, false},
		{`avg_over_time(gpu_latency[5m])`, false}, // histograms
		{`last_over_time(gpu_util[5m])`, false},   // keeps the name
		{`changes(gpu_util[5m])`, false},
		{`quantile_over_time(0.5, gpu_util[5m])`, false},
	} {
		for _, en := range engines {
			for _, q := range []struct {
				name        string
				start, end  int64
				interval    time.Duration
				instantOnly bool
			}{
				{name: "instant@3000", start: 3000, end: 3000},
				{name: "instant@3700", start: 3700, end: 3700}, // after most series ended
				{name: "range", start: 0, end: 3600, interval: time.Minute},
				{name: "range-irregular", start: 17, end: 3900, interval: 37 * time.Second},
			} {
				if !en.weftOpts && q.name != "instant@3000" && q.name != "range-irregular" {
					continue // the test engine: two shapes are enough (time under -race)
				}
				t.Run(tc.expr+"/"+en.name+"/"+q.name, func(t *testing.T) {
					// run returns the result dumped (Close recycles its memory),
					// its annotations and the statement that ran.
					run := func(e promql.QueryEngine) (res, warns, stmt string) {
						var (
							qry promql.Query
							err error
						)
						if q.interval == 0 {
							qry, err = e.NewInstantQuery(context.Background(), db, nil, tc.expr, at(q.start))
						} else {
							qry, err = e.NewRangeQuery(context.Background(), db, nil, tc.expr, at(q.start), at(q.end), q.interval)
						}
						if err != nil {
							t.Fatalf("new query: %v", err)
						}
						defer qry.Close()
						r := qry.Exec(context.Background())
						if r.Err != nil {
							t.Fatalf("exec: %v", r.Err)
						}
						return dump(r.Value), annos(r, tc.expr), qry.Statement().String()
					}
					want, wantAnnos, _ := run(en.engine)
					got, gotAnnos, stmt := run(en.pushed)
					if did := strings.Contains(stmt, "__weft_pushdown__"); en.weftOpts && did != tc.push {
						t.Errorf("pushed down = %v, want %v (statement %s)", did, tc.push, stmt)
					}
					if want != got {
						t.Errorf("results differ\n%s", firstDiff(want, got))
					}
					if wantAnnos != gotAnnos {
						t.Errorf("annotations differ\nengine:   %s\npushdown: %s", wantAnnos, gotAnnos)
					}
				})
			}
		}
	}
}

// weftEngine is Prometheus' engine as weft's server configures it, without
// weft's optimizations.
func weftEngine() promql.QueryEngine {
	return query.NewPrometheusEngine(query.DefaultEngineOptions())
}

// dump renders a result with every float's bits, series sorted.
func dump(v parser.Value) string {
	var lines []string
	switch v := v.(type) {
	case promql.Vector:
		for _, s := range v {
			lines = append(lines, fmt.Sprintf("%s %d %x", s.Metric, s.T, math.Float64bits(s.F)))
		}
	case promql.Matrix:
		for _, s := range v {
			var b strings.Builder
			fmt.Fprintf(&b, "%s", s.Metric)
			for _, p := range s.Floats {
				fmt.Fprintf(&b, " %d:%x", p.T, math.Float64bits(p.F))
			}
			if len(s.Histograms) > 0 {
				fmt.Fprintf(&b, " %d histograms", len(s.Histograms))
			}
			lines = append(lines, b.String())
		}
	case promql.Scalar:
		lines = append(lines, fmt.Sprintf("scalar %d %x", v.T, math.Float64bits(v.V)))
	default:
		lines = append(lines, fmt.Sprint(v))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func annos(r *promql.Result, q string) string {
	w, i := r.Warnings.AsStrings(q, 0, 0)
	slices.Sort(w)
	slices.Sort(i)
	return fmt.Sprint(w, i)
}

// firstDiff shows the first line where the engine's and the pushdown's
// dumps differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d\nengine:   %.600s\npushdown: %.600s", i, a, b)
		}
	}
	return ""
}

// BenchmarkAggregationPushdown compares the engine (as the server runs it,
// with latest-sample selects) with and without the pushdown on 100k GPU
// series of 10 metrics with 20 samples each: a count by over all of them
// (instant) and a sum by of rates (range, 1h at 1m).
func BenchmarkAggregationPushdown(b *testing.B) {
	opts := storage.DefaultOptions()
	opts.CheckpointInterval = -1
	db, err := storage.Open(context.Background(), b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Now().Add(-10 * time.Minute).UnixMilli()
	app := db.Appender(context.Background())
	for i := range 10_000 {
		for m := range 10 {
			ls := labels.FromStrings(labels.MetricName, fmt.Sprintf("DCGM_FI_DEV_M%d", m),
				"Hostname", fmt.Sprintf("node-%d", i/8), "gpu", fmt.Sprint(i%8),
				"model", fmt.Sprintf("model-%d", i%7), "pod", fmt.Sprintf("pod-%d", i), "team", fmt.Sprintf("team-%d", i%9))
			for s := range 20 {
				if _, err := app.Append(0, ls, now+int64(s)*30_000, float64(s*(i+m))); err != nil {
					b.Fatal(err)
				}
			}
		}
		if i%1000 == 999 {
			if err := app.Commit(); err != nil {
				b.Fatal(err)
			}
			app = db.Appender(context.Background())
		}
	}
	if err := app.Commit(); err != nil {
		b.Fatal(err)
	}
	engine := query.NewPrometheusEngine(query.DefaultEngineOptions())
	server := query.LatestSampleEngine(engine, storage.LatestSampleQueryable)
	pushed := query.AggregationPushdown(server, query.PushdownOptions{})
	serial := query.AggregationPushdown(server, query.PushdownOptions{Parallelism: 1})
	end := time.UnixMilli(now + 19*30_000)
	for _, q := range []struct {
		name, expr string
		rng        time.Duration
	}{
		{"count_by_name", `count by (__name__) ({__name__=~"DCGM_FI_DEV_.*", pod=~".+"})`, 0},
		{"sum_rate_by_model_1h", `sum by (model) (rate(DCGM_FI_DEV_M3[5m]))`, time.Hour},
	} {
		for _, e := range []struct {
			name string
			e    promql.QueryEngine
		}{{"engine", server}, {"pushdown", pushed}, {"pushdown_serial", serial}} {
			b.Run(q.name+"/"+e.name, func(b *testing.B) {
				for b.Loop() {
					var (
						qry promql.Query
						err error
					)
					if q.rng == 0 {
						qry, err = e.e.NewInstantQuery(context.Background(), db, nil, q.expr, end)
					} else {
						qry, err = e.e.NewRangeQuery(context.Background(), db, nil, q.expr, end.Add(-q.rng), end, time.Minute)
					}
					if err != nil {
						b.Fatal(err)
					}
					if r := qry.Exec(context.Background()); r.Err != nil {
						b.Fatal(r.Err)
					}
					qry.Close()
				}
			})
		}
	}
}
