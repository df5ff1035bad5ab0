package querier

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/weftdb/weft/cluster/readapi"
)

// ingester is one ingester as the querier knows it.
type ingester struct {
	base   string
	client *readapi.Client
	stream *readapi.Client // for tail streams: no request timeout

	mu     sync.Mutex
	status readapi.Status
	seen   time.Time // last successful status; zero: never
	err    error     // last status error
}

func (in *ingester) snapshot() (readapi.Status, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.status, in.err == nil && !in.seen.IsZero() && in.status.Ready
}

// topology polls the ingesters' statuses and plans which ingester answers
// for which partitions. Safe for concurrent use.
type topology struct {
	ingesters []*ingester
	total     int32 // configured partition count; 0: the ingesters'
	interval  time.Duration
}

// refresh asks every ingester for its status, concurrently.
func (t *topology) refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for _, in := range t.ingesters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, t.interval)
			defer cancel()
			st, err := in.client.Status(ctx)
			in.mu.Lock()
			defer in.mu.Unlock()
			in.err = err
			if err == nil {
				in.status, in.seen = st, time.Now()
			}
		})
	}
	wg.Wait()
}

// run refreshes every interval until ctx ends.
func (t *topology) run(ctx context.Context) {
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.refresh(ctx)
		}
	}
}

// totalPartitions is the configured count, else the largest an ingester
// reported.
func (t *topology) totalPartitions() int32 {
	if t.total > 0 {
		return t.total
	}
	var n int32
	for _, in := range t.ingesters {
		st, _ := in.snapshot()
		n = max(n, st.TotalPartitions)
	}
	return n
}

// assignment is one ingester's share of a query: the partitions it answers.
type assignment struct {
	in         *ingester
	partitions []int32
}

// plan assigns each partition of 0..total-1 not in exclude to one ready
// ingester that owns it, preferring ingesters that own more of the
// partitions still unassigned (fewer requests), and skipping ingesters in
// avoid. It returns the partitions no ready ingester owns.
func (t *topology) plan(total int32, want []int32, avoid map[*ingester]bool) ([]assignment, []int32) {
	owners := map[int32][]*ingester{}
	for _, in := range t.ingesters {
		if avoid[in] {
			continue
		}
		st, ok := in.snapshot()
		if !ok {
			continue
		}
		for _, p := range st.Partitions {
			if p < total {
				owners[p] = append(owners[p], in)
			}
		}
	}
	todo := map[int32]bool{}
	for _, p := range want {
		todo[p] = true
	}
	var out []assignment
	for len(todo) > 0 {
		var best *ingester
		bestN := 0
		for _, in := range t.ingesters { // in configuration order: deterministic
			n := 0
			for p := range todo {
				if slices.Contains(owners[p], in) {
					n++
				}
			}
			if n > bestN {
				best, bestN = in, n
			}
		}
		if best == nil {
			break
		}
		a := assignment{in: best}
		for p := range todo {
			if slices.Contains(owners[p], best) {
				a.partitions = append(a.partitions, p)
				delete(todo, p)
			}
		}
		slices.Sort(a.partitions)
		out = append(out, a)
	}
	var missing []int32
	for p := range todo {
		missing = append(missing, p)
	}
	slices.Sort(missing)
	return out, missing
}

// all returns 0..n-1.
func all(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}
