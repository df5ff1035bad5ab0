package investigate_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/storage"
)

// BenchmarkContext answers the workload context of a run with 10,000
// series in a store of WEFT_CONTEXT_BENCH_SERIES (default 1,000,000)
// series, from the index alone: the bound is 50 ms.
func BenchmarkContext(b *testing.B) {
	total := 1_000_000
	if s := os.Getenv("WEFT_CONTEXT_BENCH_SERIES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	const runSeries = 10_000
	sopts := storage.DefaultOptions()
	sopts.Logs.MaintenanceInterval = -1
	sopts.RetentionInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), b.TempDir(), sopts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Close() })
	ix := sub.Index()
	now := time.Now()
	t := now.UnixMilli()
	var lb labels.ScratchBuilder
	add := func(run string, i int) {
		lb.Reset()
		lb.Add("__name__", "metric_"+strconv.Itoa(i%40))
		lb.Add("gpu_uuid", "GPU-"+run+"-"+strconv.Itoa(i/40%64))
		lb.Add("host", run+"-node-"+strconv.Itoa(i/40%64/8))
		lb.Add("instance", strconv.Itoa(i))
		lb.Add("job", "weft-agent")
		lb.Add("model", "model-"+strconv.Itoa(len(run)%7))
		lb.Add("rank", strconv.Itoa(i/40%64))
		lb.Add("run_id", run)
		lb.Add("team", "team-"+strconv.Itoa(len(run)%5))
		lb.Sort()
		if _, _, err := ix.GetOrCreate(index.KindMetric, lb.Labels(), t); err != nil {
			b.Fatal(err)
		}
	}
	for i := range runSeries {
		add("r42", i)
	}
	for i := range total - runSeries {
		add("bg-"+strconv.Itoa(i/runSeries), i)
	}
	iv, err := investigate.New(investigate.Options{Index: ix, Metrics: sub.Metrics(), Logs: sub.Logs()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		wc, err := iv.Context(context.Background(), `{ai_run_id="r42"}`, now.Add(-time.Hour), now)
		if err != nil {
			b.Fatal(err)
		}
		if wc.Metrics.Series != runSeries || len(wc.Context["gpu_uuid"]) != 64 {
			b.Fatalf("%d series, %d GPUs", wc.Metrics.Series, len(wc.Context["gpu_uuid"]))
		}
	}
}

// BenchmarkInvestigate investigates each scenario's affected workload two
// minutes after its first symptom, as TestScenarios does: the bound
// on one investigation is 2 s. The replay is outside the timed loop. With
// WEFT_INVESTIGATE_BACKGROUND=n the store also holds n background series
// of the scenario's metric names on 1,000 other nodes (index entries: what
// an investigation of one workload must look past).
func BenchmarkInvestigate(b *testing.B) {
	background := 0
	if s := os.Getenv("WEFT_INVESTIGATE_BACKGROUND"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		background = n
	}
	for _, name := range scenario.Names() {
		b.Run(name, func(b *testing.B) {
			r := replay(b, name, scenarioOptions())
			addBackground(b, r, background)
			truth := r.data.Truth
			sym := investigate.Symptom{Selector: workloadSelector(truth.Affected), Time: firstSymptom(truth).Add(2 * time.Minute)}
			b.ResetTimer()
			for b.Loop() {
				rep, err := r.iv.Investigate(context.Background(), sym)
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Causes) == 0 || matchesTruth(rep.Causes[0], truth) != "" {
					b.Fatalf("%s: top cause wrong", name)
				}
			}
		})
	}
}

// addBackground puts n series of the replayed scenario's metric names on
// 1,000 nodes of their own into its index, created at the scenario's end.
func addBackground(b *testing.B, r *replayed, n int) {
	if n <= 0 {
		return
	}
	names := map[string]bool{}
	for _, s := range r.data.Series {
		for _, l := range s.Labels {
			if l.Name == "__name__" {
				names[l.Value] = true
			}
		}
	}
	var metrics []string
	for m := range names {
		metrics = append(metrics, m)
	}
	slices.Sort(metrics)
	t := r.opts.Start.Add(r.opts.Duration).UnixMilli()
	ix := r.sub.Index()
	before := ix.NumStreams(index.KindMetric)
	var lb labels.ScratchBuilder
	for i := range n {
		node := "bg-node-" + strconv.Itoa(i%1000)
		lb.Reset()
		lb.Add("__name__", metrics[i%len(metrics)])
		lb.Add("gpu", strconv.Itoa(i/1000%8))
		lb.Add("gpu_uuid", "GPU-bg-"+strconv.Itoa(i/len(metrics)))
		lb.Add("host", node)
		lb.Add("Hostname", node)
		lb.Add("run_id", "bg-run-"+strconv.Itoa(i%1000/8))
		lb.Add("team", "team-"+strconv.Itoa(i%7))
		lb.Sort()
		if _, _, err := ix.GetOrCreate(index.KindMetric, lb.Labels(), t); err != nil {
			b.Fatal(err)
		}
	}
	if got := ix.NumStreams(index.KindMetric) - before; got != n {
		b.Fatalf("%d background series created, want %d", got, n)
	}
}

// BenchmarkIncidents groups 10,000 kept alerts (1,000 GPUs, 100 hosts,
// 2,000 runs) by every key: one read of the incident streams and a
// decode of every record.
func BenchmarkIncidents(b *testing.B) {
	r := newWeft(b)
	ctx := context.Background()
	const n = 10_000
	t0 := time.Now().UTC().Add(-24 * time.Hour)
	for i := range n {
		if _, err := r.iv.RecordAlert(ctx, investigate.AlertIncident{
			Labels: map[string]string{"alertname": "GPUXidError", "gpu_uuid": "GPU-" + strconv.Itoa(i%1000),
				"host": "node-" + strconv.Itoa(i%1000/10), "run_id": "r" + strconv.Itoa(i%2000)},
			ActiveAt: t0.Add(time.Duration(i) * time.Second),
		}); err != nil {
			b.Fatal(err)
		}
	}
	req := investigate.IncidentsRequest{Start: t0.Add(-time.Minute), End: time.Now()}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ans, err := r.iv.Incidents(ctx, req)
		if err != nil || ans.Incidents != n || len(ans.Groups) == 0 {
			b.Fatalf("%v: %+v", err, ans)
		}
	}
}
