package index

import (
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

func TestPersistRoundTrip(t *testing.T) {
	opts := Options{PartitionDuration: time.Hour, HotPartitions: 1}
	e := newTestEnv(t, opts)
	ix := e.ix
	type s struct {
		kind Kind
		ls   labels.Labels
		ts   []int64
	}
	streams := []s{
		{KindMetric, labels.FromStrings("__name__", "up", "job", "a"), []int64{0}},
		{KindMetric, labels.FromStrings("__name__", "up", "job", "b"), []int64{0, 2 * hourMs}},
		{KindLog, labels.FromStrings("job", "a", "stream", "stderr"), []int64{hourMs}},
		{KindTrace, labels.FromStrings("service_name", "api"), []int64{3 * hourMs}},
	}
	ids := make([]ID, len(streams))
	for i, st := range streams {
		for j, ts := range st.ts {
			if j == 0 {
				ids[i] = mustCreate(t, ix, st.kind, st.ls, ts)
			} else {
				ix.Touch(ids[i], ts)
			}
		}
	}
	// Persist twice with more in between: the second batch holds only deltas,
	// merged on disk with the first.
	if err := ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	late := mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "up", "job", "c"), 0)
	ix.Touch(ids[0], 3*hourMs)

	ix2 := e.reopen()
	for i, st := range streams {
		got, ok := ix2.Labels(ids[i], nil)
		if !ok || !labels.Equal(got, st.ls) {
			t.Fatalf("Labels(%d) after reopen = %s, %v; want %s", ids[i], got, ok, st.ls)
		}
		if id := mustCreate(t, ix2, st.kind, st.ls, st.ts[0]); id != ids[i] {
			t.Fatalf("GetOrCreate(%s) after reopen = %d, want %d", st.ls, id, ids[i])
		}
	}
	// Cold partitions (only the newest is hot) load on demand.
	ix2.partsMu.RLock()
	cold := 0
	for _, p := range ix2.parts {
		if !p.loaded {
			cold++
		}
	}
	ix2.partsMu.RUnlock()
	if cold == 0 {
		t.Fatal("expected partitions older than the newest to stay on disk after Open")
	}
	tests := []struct {
		name       string
		kind       Kind
		mint, maxt int64
		m          *labels.Matcher
		want       []ID
	}{
		{"hour 0 up", KindMetric, 0, hourMs - 1, mustMatcher(t, labels.MatchEqual, "__name__", "up"), []ID{ids[0], ids[1], late}},
		{"hour 2 up", KindMetric, 2 * hourMs, 2*hourMs + 1, mustMatcher(t, labels.MatchEqual, "__name__", "up"), []ID{ids[1]}},
		{"hour 3 any", KindAny, 3 * hourMs, 3 * hourMs, nil, []ID{ids[0], ids[3]}},
		{"job a any kind", KindAny, 0, 4 * hourMs, mustMatcher(t, labels.MatchEqual, "job", "a"), []ID{ids[0], ids[2]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ms []*labels.Matcher
			if tc.m != nil {
				ms = append(ms, tc.m)
			}
			if got := mustPostings(t, ix2, tc.kind, tc.mint, tc.maxt, ms...); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	// IDs are never reused after reopen.
	if id := mustCreate(t, ix2, KindMetric, labels.FromStrings("new", "one"), 0); id <= late {
		t.Fatalf("new id after reopen = %d, want > %d", id, late)
	}
}

func TestPersistKeepsAllocatorPastDeletedStreams(t *testing.T) {
	opts := DefaultOptions()
	e := newTestEnv(t, opts)
	ix := e.ix
	a := mustCreate(t, ix, KindMetric, labels.FromStrings("a", "1"), 0)
	b := mustCreate(t, ix, KindMetric, labels.FromStrings("a", "2"), 0)
	if err := ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(t.Context(), bitmapOf(b)); err != nil {
		t.Fatal(err)
	}
	ix2 := e.reopen()
	if _, ok := ix2.Labels(b, nil); ok {
		t.Fatal("deleted stream is back after reopen")
	}
	if _, ok := ix2.Labels(a, nil); !ok {
		t.Fatal("kept stream is gone after reopen")
	}
	if got := mustPostings(t, ix2, KindMetric, 0, 0, mustMatcher(t, labels.MatchRegexp, "a", ".+")); !slices.Equal(got, []ID{a}) {
		t.Fatalf("postings after delete+reopen = %v, want [%d]", got, a)
	}
	if id := mustCreate(t, ix2, KindMetric, labels.FromStrings("a", "2"), 0); id <= b {
		t.Fatalf("re-created stream got id %d, want > %d (never reuse)", id, b)
	}
}

func TestDropPartitionsBefore(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	ix := e.ix
	old := mustCreate(t, ix, KindMetric, labels.FromStrings("s", "old"), 0)            // only hour 0
	moving := mustCreate(t, ix, KindLog, labels.FromStrings("s", "moving"), 0)         // hours 0 and 2
	fresh := mustCreate(t, ix, KindMetric, labels.FromStrings("s", "fresh"), 2*hourMs) // only hour 2
	ix.Touch(moving, 2*hourMs)
	if err := ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	unpersisted := mustCreate(t, ix, KindMetric, labels.FromStrings("s", "unpersisted"), hourMs) // hour 1, pending
	if err := ix.DropPartitionsBefore(t.Context(), 2*hourMs); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{old, unpersisted} {
		if _, ok := ix.Labels(id, nil); ok {
			t.Errorf("stream %d in no remaining partition was not forgotten", id)
		}
	}
	for _, id := range []ID{moving, fresh} {
		if _, ok := ix.Labels(id, nil); !ok {
			t.Errorf("stream %d still in partition 2 was forgotten", id)
		}
	}
	if got := mustPostings(t, ix, KindAny, 0, 3*hourMs); !slices.Equal(got, []ID{moving, fresh}) {
		t.Fatalf("postings after drop = %v, want %v", got, []ID{moving, fresh})
	}
	// A late write into a dropped partition marks the oldest remaining one.
	again := mustCreate(t, ix, KindMetric, labels.FromStrings("s", "old"), 0)
	if again == old {
		t.Fatal("forgotten stream reused its id")
	}
	if got := mustPostings(t, ix, KindMetric, 2*hourMs, 2*hourMs, mustMatcher(t, labels.MatchEqual, "s", "old")); !slices.Equal(got, []ID{again}) {
		t.Fatalf("late write: postings = %v, want [%d]", got, again)
	}
	if n := ix.NumStreams(KindAny); n != 3 {
		t.Fatalf("NumStreams = %d, want 3", n)
	}
	ix2 := e.reopen()
	if got := mustPostings(t, ix2, KindAny, 0, 3*hourMs); !slices.Equal(got, []ID{moving, fresh, again}) {
		t.Fatalf("postings after reopen = %v, want %v", got, []ID{moving, fresh, again})
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: appendPartPrefix(nil, minPartNum), UpperBound: appendPartPrefix(nil, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Fatalf("key %q of a dropped partition is still on disk", it.Key())
	}
	if _, ok := ix2.Labels(old, nil); ok {
		t.Fatal("forgotten stream is back after reopen")
	}
}

func TestDeleteColdPartition(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour, HotPartitions: 1})
	ix := e.ix
	a := mustCreate(t, ix, KindMetric, labels.FromStrings("job", "x", "i", "1"), 0)
	b := mustCreate(t, ix, KindMetric, labels.FromStrings("job", "x", "i", "2"), 0)
	mustCreate(t, ix, KindMetric, labels.FromStrings("job", "y"), 5*hourMs)
	ix2 := e.reopen()
	// Partition 0 is cold now; delete from it without loading it.
	if err := ix2.Delete(t.Context(), bitmapOf(a)); err != nil {
		t.Fatal(err)
	}
	if got := mustPostings(t, ix2, KindMetric, 0, 0, mustMatcher(t, labels.MatchEqual, "job", "x")); !slices.Equal(got, []ID{b}) {
		t.Fatalf("postings after delete = %v, want [%d]", got, b)
	}
	ix3 := e.reopen()
	if got := mustPostings(t, ix3, KindMetric, 0, 0, mustMatcher(t, labels.MatchEqual, "job", "x")); !slices.Equal(got, []ID{b}) {
		t.Fatalf("postings after delete and reopen = %v, want [%d]", got, b)
	}
	if got, err := ix3.LabelValues(t.Context(), KindMetric, "i", 0, 0); err != nil || !slices.Equal(got, []string{"2"}) {
		t.Fatalf("LabelValues(i) = %v, %v; want [2]", got, err)
	}
}

func TestRestoreAfterReopen(t *testing.T) {
	e := newTestEnv(t, DefaultOptions())
	a := labels.FromStrings("a", "1")
	id := mustCreate(t, e.ix, KindMetric, a, 0)
	ix2 := e.reopen()
	// WAL replay: the persisted stream, and one the WAL knows but Pebble not.
	if err := ix2.Restore(KindMetric, id, a, 0); err != nil {
		t.Fatalf("restore persisted stream: %v", err)
	}
	if err := ix2.Restore(KindMetric, 100, labels.FromStrings("a", "2"), dayMs); err != nil {
		t.Fatalf("restore WAL-only stream: %v", err)
	}
	if got := mustPostings(t, ix2, KindMetric, 0, 2*dayMs, mustMatcher(t, labels.MatchRegexp, "a", ".+")); !slices.Equal(got, []ID{id, 100}) {
		t.Fatalf("postings = %v, want [%d 100]", got, id)
	}
	if got := mustCreate(t, ix2, KindMetric, labels.FromStrings("a", "3"), 0); got != 101 {
		t.Fatalf("next id = %d, want 101", got)
	}
}
