package index

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// churnClock is the wall clock the index dates creation by.
type churnClock struct{ ms atomic.Int64 }

func (c *churnClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// TestChurn: streams created per hour and, per day partition, active,
// created and ended, for the whole index, a selector and a tenant, and the
// same after a restart (the hour marks are durable).
func TestChurn(t *testing.T) {
	day0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	clock := &churnClock{}
	clock.ms.Store(day0 + 5*60*1000) // 00:05
	e := newTestEnv(t, Options{Now: clock.now})
	series := func(job string, i int) labels.Labels {
		return labels.FromStrings("__name__", "up", "job", job, "i", strconv.Itoa(i))
	}
	var a []ID
	for i := range 10 { // hour 0: ten of job a
		a = append(a, mustCreate(t, e.ix, KindMetric, series("a", i), day0))
	}
	clock.ms.Add(hourMs) // hour 1: five of job b
	for i := range 5 {
		mustCreate(t, e.ix, KindMetric, series("b", i), day0+hourMs)
	}
	// A log stream is not a metric series.
	mustCreate(t, e.ix, KindLog, labels.FromStrings("job", "a"), day0+hourMs)
	// Another tenant's series, created in hour 25 below, and the rest of
	// job a: seven go on into the next day, three end, two are new.
	if err := e.ix.Persist(context.Background()); err != nil { // durable mid-hour
		t.Fatal(err)
	}
	clock.ms.Add(24 * hourMs) // hour 25
	for i := range 7 {
		mustCreate(t, e.ix, KindMetric, series("a", i), day0+25*hourMs)
	}
	for i := 10; i < 12; i++ {
		mustCreate(t, e.ix, KindMetric, series("a", i), day0+25*hourMs)
	}
	if _, _, err := e.ix.GetOrCreateTenant(KindMetric, "team-x", series("a", 0), day0+25*hourMs, nil); err != nil {
		t.Fatal(err)
	}

	check := func(name string, ix *Index) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			jobA := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "a")}
			for _, c := range []struct {
				name      string
				ctx       context.Context
				sets      [][]*labels.Matcher
				hours     map[int]uint64 // hour → created; every other hour 0
				parts     [2]PartitionChurn
				wantHours int
			}{
				{"all", ctx, nil, map[int]uint64{0: 10, 1: 5, 25: 3}, [2]PartitionChurn{{Active: 15, Created: 15, Ended: 8}, {Active: 10, Created: 3}}, 26},
				{"job a", ctx, [][]*labels.Matcher{jobA}, map[int]uint64{0: 10, 25: 3}, [2]PartitionChurn{{Active: 10, Created: 10, Ended: 3}, {Active: 10, Created: 3}}, 26},
				{"anonymous only", tenant.WithSet(ctx, tenant.NewSet(tenant.Anonymous)), [][]*labels.Matcher{jobA}, map[int]uint64{0: 10, 25: 2}, [2]PartitionChurn{{Active: 10, Created: 10, Ended: 3}, {Active: 9, Created: 2}}, 26},
				{"team-x", tenant.WithSet(ctx, tenant.NewSet("team-x")), nil, map[int]uint64{25: 1}, [2]PartitionChurn{{}, {Active: 1, Created: 1}}, 26},
			} {
				ch, err := ix.Churn(c.ctx, KindMetric, day0, day0+25*hourMs+1, c.sets...)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if len(ch.Hours) != c.wantHours {
					t.Fatalf("%s: %d hours, want %d", c.name, len(ch.Hours), c.wantHours)
				}
				for h, hc := range ch.Hours {
					if hc.Start != day0+int64(h)*hourMs || hc.Created != c.hours[h] {
						t.Errorf("%s: hour %d = %+v, want created %d", c.name, h, hc, c.hours[h])
					}
				}
				if len(ch.Partitions) != 2 {
					t.Fatalf("%s: partitions %+v, want 2", c.name, ch.Partitions)
				}
				for i, want := range c.parts {
					got := ch.Partitions[i]
					want.Start, want.End = day0+int64(i)*dayMs, day0+int64(i+1)*dayMs
					want.CreatedKnown, want.EndedKnown = true, i == 0
					if got != want {
						t.Errorf("%s: partition %d = %+v, want %+v", c.name, i, got, want)
					}
				}
			}
		})
	}
	check("live", e.ix)
	check("after a restart", e.reopen())

	if _, err := e.ix.Churn(context.Background(), KindMetric, day0, day0+200*dayMs); err == nil {
		t.Error("a churn range of 200 days was answered")
	}
}

// TestChurnConcurrentCreators: creators racing across an hour boundary
// leave every created stream counted exactly once.
func TestChurnConcurrentCreators(t *testing.T) {
	day0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	clock := &churnClock{}
	clock.ms.Store(day0 + hourMs - 50)
	ix, _, _ := testIndex(t, Options{Now: clock.now})
	const workers, each = 4, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if w == 0 {
					clock.ms.Add(1)
				}
				mustCreate(t, ix, KindMetric, labels.FromStrings("w", strconv.Itoa(w), "i", strconv.Itoa(i)), day0+hourMs)
			}
		})
	}
	wg.Wait()
	ch, err := ix.Churn(context.Background(), KindMetric, day0, day0+2*hourMs)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, h := range ch.Hours {
		total += h.Created
	}
	if total != workers*each {
		t.Fatalf("hours count %d created, want %d: %+v", total, workers*each, ch.Hours)
	}
}
