package index

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestDropKindBefore: one signal's retention drops its postings and forgets
// its streams, and never touches another signal's postings in the same
// partitions; a partition every kind has left goes from disk.
func TestDropKindBefore(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	ix := e.ix
	oldLog := mustCreate(t, ix, KindLog, labels.FromStrings("run_id", "r42", "stream", "old"), 0)          // hour 0 only
	movingLog := mustCreate(t, ix, KindLog, labels.FromStrings("run_id", "r42", "stream", "moving"), 0)    // hours 0 and 2
	oldMetric := mustCreate(t, ix, KindMetric, labels.FromStrings("run_id", "r42", "__name__", "up"), 0)   // hour 0 only
	onlyLogPart := mustCreate(t, ix, KindLog, labels.FromStrings("run_id", "r42", "stream", "h1"), hourMs) // hour 1 only
	ix.Touch(movingLog, 2*hourMs)
	if err := ix.Persist(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ix.DropKindBefore(t.Context(), KindLog, 2*hourMs); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ID{oldLog, onlyLogPart} {
		if _, ok := ix.Labels(id, nil); ok {
			t.Errorf("log stream %d in no remaining partition was not forgotten", id)
		}
	}
	for _, id := range []ID{movingLog, oldMetric} {
		if _, ok := ix.Labels(id, nil); !ok {
			t.Errorf("stream %d was forgotten", id)
		}
	}
	m := mustMatcher(t, labels.MatchEqual, "run_id", "r42")
	if got := mustPostings(t, ix, KindLog, 0, hourMs, m); len(got) != 0 {
		t.Errorf("log postings in dropped hours = %v, want none", got)
	}
	if got := mustPostings(t, ix, KindMetric, 0, hourMs, m); !slices.Equal(got, []ID{oldMetric}) {
		t.Errorf("metric postings in hour 0 = %v, want [%d]: another signal's retention dropped them", got, oldMetric)
	}
	if got := mustPostings(t, ix, KindLog, 2*hourMs, 2*hourMs, m); !slices.Equal(got, []ID{movingLog}) {
		t.Errorf("log postings in hour 2 = %v, want [%d]", got, movingLog)
	}
	if got, err := ix.LabelValues(t.Context(), KindLog, "stream", 0, 3*hourMs); err != nil || !slices.Equal(got, []string{"moving"}) {
		t.Errorf("log label values = %v, %v; want [moving]", got, err)
	}

	// Durable: after a reopen the same holds, and hour 1 (logs only) is
	// gone from disk while hour 0 keeps its metric postings.
	ix2 := e.reopen()
	if got := mustPostings(t, ix2, KindAny, 0, 3*hourMs, m); !slices.Equal(got, []ID{movingLog, oldMetric}) {
		t.Fatalf("postings after reopen = %v, want %v", got, []ID{movingLog, oldMetric})
	}
	if _, ok := ix2.Labels(oldLog, nil); ok {
		t.Fatal("forgotten log stream is back after reopen")
	}
	for _, tc := range []struct {
		part int64
		want bool
	}{{0, true}, {1, false}, {2, true}} {
		it, err := e.db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		lo := appendPartPrefix(nil, tc.part)
		hi := appendPartPrefix(nil, tc.part+1)
		found := it.SeekGE(lo) && string(it.Key()) < string(hi)
		_ = it.Close()
		if found != tc.want {
			t.Errorf("partition %d on disk = %v, want %v", tc.part, found, tc.want)
		}
	}

	// Metrics' own retention later drops hour 0 entirely.
	if err := ix2.DropKindBefore(t.Context(), KindMetric, hourMs); err != nil {
		t.Fatal(err)
	}
	if _, ok := ix2.Labels(oldMetric, nil); ok {
		t.Error("metric stream in no remaining partition was not forgotten")
	}
	if got := mustPostings(t, ix2, KindAny, 0, 3*hourMs, m); !slices.Equal(got, []ID{movingLog}) {
		t.Errorf("postings after the metric drop = %v, want [%d]", got, movingLog)
	}
	if err := ix2.DropKindBefore(t.Context(), KindAny, hourMs); err == nil {
		t.Error("DropKindBefore(KindAny) succeeded; want ErrInvalidKind")
	}
}

// TestDropKindBeforeUnpersisted: a stream created and not yet persisted in a
// dropped partition is not written back by the next Persist.
func TestDropKindBeforeUnpersisted(t *testing.T) {
	e := newTestEnv(t, Options{PartitionDuration: time.Hour})
	ix := e.ix
	id := mustCreate(t, ix, KindLog, labels.FromStrings("stream", "late"), 0)
	keep := mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "up"), 0)
	if err := ix.DropKindBefore(t.Context(), KindLog, hourMs); err != nil {
		t.Fatal(err)
	}
	ix2 := e.reopen()
	if _, ok := ix2.Labels(id, nil); ok {
		t.Fatal("dropped unpersisted stream was persisted")
	}
	if got := mustPostings(t, ix2, KindAny, 0, 0); !slices.Equal(got, []ID{keep}) {
		t.Fatalf("postings = %v, want [%d]", got, keep)
	}
}
