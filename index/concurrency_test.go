package index

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

// TestConcurrentUse runs writers, readers, Persist and Delete at once (run
// with -race) and then checks that every label set has exactly one live ID
// and that the postings agree with the registry.
func TestConcurrentUse(t *testing.T) {
	ix, _, _ := testIndex(t, Options{PartitionDuration: time.Hour})
	const writers, perWriter, distinct = 4, 600, 500
	lsOf := func(i int) labels.Labels {
		return labels.FromStrings("__name__", fmt.Sprintf("m%d", i%7), "pod", fmt.Sprintf("p%d", i), "zone", fmt.Sprintf("z%d", i%3))
	}
	var (
		mu      sync.Mutex
		deleted = roaring64.New()
		wg      sync.WaitGroup
		errs    = make(chan error, 16)
	)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				n := (i*7 + w*13) % distinct
				id, _, err := ix.GetOrCreate(KindMetric, lsOf(n), int64(i%3)*hourMs)
				if err != nil {
					errs <- err
					return
				}
				ix.Touch(id, int64(w%3)*hourMs)
			}
		}()
	}
	wg.Add(3)
	go func() { // readers
		defer wg.Done()
		for i := 0; i < 100; i++ {
			m := mustMatcher(t, labels.MatchRegexp, "pod", "p1.*")
			if _, err := ix.Postings(t.Context(), KindAny, 0, 3*hourMs, m); err != nil {
				errs <- err
				return
			}
			if _, err := ix.LabelValues(t.Context(), KindMetric, "zone", 0, 3*hourMs, m); err != nil {
				errs <- err
				return
			}
			if _, err := ix.Stats(t.Context(), KindAny, 0, 3*hourMs, 5); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // persister
		defer wg.Done()
		for i := 0; i < 10; i++ {
			if err := ix.Persist(t.Context()); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // deleter: removes whatever pod p3 currently is, a few times
		defer wg.Done()
		for i := 0; i < 10; i++ {
			bm, err := ix.Postings(t.Context(), KindMetric, 0, 3*hourMs, mustMatcher(t, labels.MatchEqual, "pod", "p3"))
			if err != nil {
				errs <- err
				return
			}
			if err := ix.Delete(t.Context(), bm); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			deleted.Or(bm)
			mu.Unlock()
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	seen := map[ID]bool{}
	for n := 0; n < distinct; n++ {
		id, created, err := ix.GetOrCreate(KindMetric, lsOf(n), 0)
		if err != nil {
			t.Fatal(err)
		}
		if created && n != 3 {
			t.Fatalf("label set %d had no stream after concurrent creation", n)
		}
		if seen[id] {
			t.Fatalf("id %d serves two label sets", id)
		}
		seen[id] = true
		if deleted.Contains(uint64(id)) {
			t.Fatalf("deleted id %d is live again", id)
		}
	}
	all := mustPostings(t, ix, KindMetric, 0, 3*hourMs)
	if len(all) != distinct {
		t.Fatalf("postings hold %d streams, registry %d", len(all), distinct)
	}
	for _, id := range all {
		if !seen[id] {
			t.Fatalf("postings hold id %d unknown to the registry", id)
		}
	}
}
