package ruler

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// BenchmarkIngestWhileRulesRun measures issue 16's "rule evaluation never
// starves ingest": a weft store holding the fleet of BenchmarkRuleEvaluation
// takes writes as fast as one writer can append them, in phases of
// WEFT_RULES_BENCH_PHASE (default 15 s), alternately alone and while the
// pack plus generated rules (WEFT_RULES_BENCH_RULES, default 200) are
// evaluated as a rules manager schedules them: every group once per 15 s,
// the groups spread evenly over the interval. The writer keeps the fleet
// live (its next scrape every 15 s of wall time, at that time, so the rules
// read series being written at their real density) and fills the rest with
// as many scrapes as it can of a second fleet of the same size under other
// metric names, which no rule reads: the saturating load of a node whose
// other targets the rules do not cover. (Saturating the fleet the rules read
// would pack thousands of samples per second into each of its series and
// multiply the rules' work by the same factor.) It reports the samples
// appended per second in each kind of phase and their ratio (rules / alone;
// the goal is at least 0.9); each op is one phase of each kind (-benchtime
// 2x alternates them twice). Append is the store's own cost: no HTTP or
// decoding, which only lowers the share rules take of a real server.
func BenchmarkIngestWhileRulesRun(b *testing.B) {
	gpus := 2048
	if v, err := strconv.Atoi(os.Getenv("WEFT_RULES_BENCH_GPUS")); err == nil && v > 0 {
		gpus = v
	}
	nrules := 200
	if v, err := strconv.Atoi(os.Getenv("WEFT_RULES_BENCH_RULES")); err == nil && v > 0 {
		nrules = v
	}
	phase := 15 * time.Second
	if v, err := time.ParseDuration(os.Getenv("WEFT_RULES_BENCH_PHASE")); err == nil && v > 0 {
		phase = v
	}
	files, err := filepath.Glob("../rules/*.yml")
	if err != nil || len(files) == 0 {
		b.Fatal("no rule pack", err)
	}
	files = append(files, benchRules(b, files, nrules))
	ctx := context.Background()
	db, err := storage.Open(ctx, b.TempDir(), storage.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	end := time.Now().Add(-time.Minute).Truncate(time.Minute)
	benchFleet(b, db, gpus, end)
	if err := db.Compact(ctx); err != nil {
		b.Fatal(err)
	}
	m := rules.NewManager(&rules.ManagerOptions{
		QueryFunc: rules.EngineQueryFunc(serverEngine(), db), AppendableV2: db, Queryable: db,
		Context: ctx, NotifyFunc: func(context.Context, string, ...*rules.Alert) {},
		Logger: slog.New(slog.DiscardHandler), Parser: query.NewParser(),
	})
	groups, errs := m.LoadGroups(15*time.Second, labels.EmptyLabels(), "", nil, false, files...)
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	order := make([]*rules.Group, 0, len(groups))
	for _, g := range groups {
		order = append(order, g)
	}
	live := fleet(gpus)
	load := fleet(gpus)
	for i := range load {
		b := labels.NewBuilder(load[i].ls)
		b.Set(labels.MetricName, "ingest_"+load[i].ls.Get(labels.MetricName))
		load[i].ls = b.Labels()
	}
	append1 := func(series []fleetSerie, t int64, scrape int) int {
		a := db.AppenderV2(ctx)
		for _, x := range series {
			if _, err := a.Append(0, x.ls, 0, t, x.next(scrape), nil, nil, promstorage.AOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.Commit(); err != nil {
			b.Fatal(err)
		}
		return len(series)
	}
	// The live fleet's next scrape is its 281st, 15 s after the loaded 70
	// minutes; the load fleet's scrapes come 1 ms apart from there, far
	// behind the wall clock, so that every sample is in order.
	liveScrape, liveAt := 281, end.Add(15*time.Second)
	loadScrape, t0 := 0, timestamp.FromTime(end)+1
	ingest := func(d time.Duration) float64 {
		n := 0
		start := time.Now()
		for now := start; now.Sub(start) < d; now = time.Now() {
			for !liveAt.After(now) {
				n += append1(live, timestamp.FromTime(liveAt), liveScrape)
				liveScrape++
				liveAt = liveAt.Add(15 * time.Second)
			}
			n += append1(load, t0+int64(loadScrape), loadScrape)
			loadScrape++
		}
		return float64(n) / time.Since(start).Seconds()
	}
	withRules := func(d time.Duration) (float64, int) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		evals := 0
		wg.Go(func() {
			tick := time.NewTicker(15 * time.Second / time.Duration(len(order)))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case now := <-tick.C:
					order[i%len(order)].Eval(ctx, now)
					evals++
				}
			}
		})
		rate := ingest(d)
		close(stop)
		wg.Wait()
		return rate, evals
	}
	b.ResetTimer()
	var alone, ruled []float64
	evals := 0
	for b.Loop() {
		alone = append(alone, ingest(phase))
		r, n := withRules(phase)
		ruled = append(ruled, r)
		evals += n
	}
	b.StopTimer()
	mean := func(x []float64) float64 {
		s := 0.0
		for _, v := range x {
			s += v
		}
		return s / float64(len(x))
	}
	b.ReportMetric(mean(alone), "samples/s-alone")
	b.ReportMetric(mean(ruled), "samples/s-rules")
	b.ReportMetric(mean(ruled)/mean(alone), "ratio")
	b.ReportMetric(float64(evals)/float64(len(ruled)), "group-evals/phase")
	for _, g := range order {
		for _, r := range g.Rules() {
			if err := r.LastError(); err != nil {
				b.Fatalf("%s: %v", r.Name(), err)
			}
		}
	}
}
