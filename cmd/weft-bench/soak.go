package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weftdb/weft/bench"
)

// soakFlags are -mode soak's own flags.
type soakFlags struct {
	duration, queryEvery time.Duration
	rate                 float64
	items, badEvery      int
	stalled, inFlight    int
	budget, cgroupLimit  int64
}

func (s *soakFlags) register(fs *flag.FlagSet) {
	d := bench.DefaultSoakOptions()
	fs.DurationVar(&s.duration, "soak-duration", d.Duration, "soak mode: how long the load runs (e.g. 60s for a try)")
	fs.Float64Var(&s.rate, "soak-rate", d.Rate, "soak mode: good requests per second on each ingest path")
	fs.IntVar(&s.items, "soak-items", d.ItemsPerRequest, "soak mode: samples, log lines or spans (at most 50) per request")
	fs.IntVar(&s.badEvery, "soak-bad-every", d.BadEvery, "soak mode: every n-th request of a path is a bad one (0: none)")
	fs.IntVar(&s.stalled, "soak-stalled", d.Stalled, "soak mode: stalled client connections held open")
	fs.IntVar(&s.inFlight, "soak-max-in-flight", d.MaxInFlight, "soak mode: requests in flight per path")
	fs.Int64Var(&s.budget, "soak-memory-budget", d.MemoryBudget, "soak mode: weft's -memory-budget in bytes")
	fs.Int64Var(&s.cgroupLimit, "soak-cgroup-limit", 0, "soak mode: memory cgroup limit in bytes (0: 1.5 × the budget; negative: no cgroup)")
	fs.DurationVar(&s.queryEvery, "soak-query-every", d.QueryEvery, "soak mode: interval of the queries that check weft keeps answering")
}

// runSoak is -mode soak: one weft under mixed load on every ingest path
// (bench/soak.go), report under -out.
func runSoak(ctx context.Context, o options) error {
	so := bench.DefaultSoakOptions()
	so.WeftBin, so.WeftArgs, so.WorkDir = o.weftBin, o.weftArgs, o.workDir
	s := o.soak
	so.Duration, so.Rate, so.ItemsPerRequest, so.BadEvery = s.duration, s.rate, s.items, s.badEvery
	so.Stalled, so.MaxInFlight, so.MemoryBudget, so.CgroupLimit, so.QueryEvery = s.stalled, s.inFlight, s.budget, s.cgroupLimit, s.queryEvery
	so.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := os.Stat(so.WeftBin); err != nil {
		return fmt.Errorf("weft binary %s: %w (did `go build ./cmd/weft` fail?)", so.WeftBin, err)
	}
	rep, err := bench.RunSoak(ctx, so)
	if err != nil {
		return err
	}
	fmt.Println(bench.SoakMarkdown(rep))
	path, err := bench.WriteSoak(o.out, rep, time.Now())
	if err != nil {
		return err
	}
	fmt.Println("results:", path)
	return ctx.Err()
}
