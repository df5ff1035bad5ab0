package index

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestRecStore(t *testing.T) {
	tests := []struct {
		name string
		ids  []ID
	}{
		{"one page", []ID{1, 2, 3, recPageSize - 1}},
		{"page edges", []ID{recPageSize - 1, recPageSize, recPageSize + 1, 2*recPageSize - 1}},
		{"chunk edges", []ID{recPageSize*recChunkSize - 1, recPageSize * recChunkSize, 3 * recPageSize * recChunkSize}},
		{"last directory chunk", []ID{recDirMax<<(recPageBits+recChunkBits) - 1}},
		{"overflow", []ID{recDirMax << (recPageBits + recChunkBits), 1 << 62, math.MaxUint64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newRecStore()
			for i, id := range tc.ids {
				s.put(id, streamRec{enc: fmt.Sprint(i), lastPart: int64(i), kind: KindLog})
			}
			for i, id := range tc.ids {
				r, ok := s.get(id)
				if !ok || r.enc != fmt.Sprint(i) || r.lastPart != int64(i) || r.kind != KindLog {
					t.Fatalf("get(%d) = %+v, %v", id, r, ok)
				}
				if got := s.lastPart(id); got != int64(i) {
					t.Fatalf("lastPart(%d) = %d, want %d", id, got, i)
				}
				if _, ok := s.get(id + 1); ok && !containsID(tc.ids, id+1) {
					t.Fatalf("get(%d) found a record never stored", id+1)
				}
			}
			if !s.raiseLastPart(tc.ids[0], 100) || s.lastPart(tc.ids[0]) != 100 {
				t.Fatal("raiseLastPart did not raise")
			}
			if !s.raiseLastPart(tc.ids[0], 50) || s.lastPart(tc.ids[0]) != 100 {
				t.Fatal("raiseLastPart lowered the partition")
			}
			if _, ok := s.remove(tc.ids[0], func(r streamRec) bool { return r.lastPart >= 100 }); ok {
				t.Fatal("remove ignored keep")
			}
			for _, id := range tc.ids {
				if _, ok := s.remove(id, nil); !ok {
					t.Fatalf("remove(%d) found nothing", id)
				}
				if _, ok := s.get(id); ok {
					t.Fatalf("get(%d) after remove found a record", id)
				}
				if s.lastPart(id) != math.MinInt64 || s.raiseLastPart(id, 1) {
					t.Fatalf("removed id %d still has a partition", id)
				}
			}
			// Every page and chunk went with its last record.
			for _, id := range tc.ids {
				if p, _ := s.page(id); p != nil {
					t.Fatalf("page of %d kept after its last record", id)
				}
			}
			if len(s.overflow) != 0 {
				t.Fatalf("overflow holds %d chunks after every record went", len(s.overflow))
			}
			for i := range *s.dir.Load() {
				if (*s.dir.Load())[i].Load() != nil {
					t.Fatalf("directory chunk %d kept after its last record", i)
				}
			}
			// A freed page's IDs can be restored again.
			s.put(tc.ids[0], streamRec{enc: "again", kind: KindMetric})
			if r, ok := s.get(tc.ids[0]); !ok || r.enc != "again" {
				t.Fatalf("record after page reuse = %+v, %v", r, ok)
			}
		})
	}
}

func containsID(ids []ID, id ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestRecStoreConcurrentFree creates and deletes streams from several
// goroutines (run with -race): the current page keeps emptying, so pages are
// freed and allocated again while others insert into them. The streams kept
// (each worker's last) must keep their records.
func TestRecStoreConcurrentFree(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	const workers, rounds = 4, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				ls := labels.FromStrings("w", fmt.Sprint(w), "i", fmt.Sprint(i))
				id, _, err := ix.GetOrCreate(KindMetric, ls, 0)
				if err != nil {
					errs <- err
					return
				}
				if got, ok := ix.Labels(id, nil); !ok || !labels.Equal(got, ls) {
					errs <- fmt.Errorf("Labels(%d) = %s, %v; want %s", id, got, ok, ls)
					return
				}
				if i != rounds-1 {
					if err := ix.Delete(t.Context(), bitmapOf(id)); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := ix.NumStreams(KindMetric); n != workers {
		t.Fatalf("NumStreams = %d, want %d", n, workers)
	}
	for w := 0; w < workers; w++ {
		for _, i := range []int{rounds - 1} {
			ls := labels.FromStrings("w", fmt.Sprint(w), "i", fmt.Sprint(i))
			if _, created, err := ix.GetOrCreate(KindMetric, ls, 0); err != nil || created {
				t.Fatalf("stream %s lost (created=%v, err=%v)", ls, created, err)
			}
		}
	}
}

// TestRestoreHugeID restores streams under IDs far beyond anything the
// allocator hands out (a foreign WAL): they are found by labels and by ID,
// and the allocator moves past them.
func TestRestoreHugeID(t *testing.T) {
	e := newTestEnv(t, DefaultOptions())
	a := labels.FromStrings("__name__", "up", "job", "a")
	const huge = ID(1 << 62)
	if err := e.ix.Restore(KindMetric, huge, a, 0); err != nil {
		t.Fatal(err)
	}
	for _, ix := range []*Index{e.ix, e.reopen()} {
		if got, ok := ix.Labels(huge, nil); !ok || !labels.Equal(got, a) {
			t.Fatalf("Labels(huge) = %s, %v", got, ok)
		}
		if id := mustCreate(t, ix, KindMetric, a, 0); id != huge {
			t.Fatalf("lookup = %d, want %d", id, huge)
		}
		if id := mustCreate(t, ix, KindMetric, labels.FromStrings("x", fmt.Sprint(ix.nextID.Load())), 0); id <= huge {
			t.Fatalf("allocator gave %d, not past the restored id", id)
		}
	}
}
