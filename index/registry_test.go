package index

import (
	"errors"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestGetOrCreate(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	a := labels.FromStrings("__name__", "up", "job", "a")
	b := labels.FromStrings("__name__", "up", "job", "b")

	id1, created, err := ix.GetOrCreate(KindMetric, a, 0)
	if err != nil || !created || id1 != 1 {
		t.Fatalf("first create: id=%d created=%v err=%v, want 1 true nil", id1, created, err)
	}
	id2, created, err := ix.GetOrCreate(KindMetric, a.Copy(), 10)
	if err != nil || created || id2 != id1 {
		t.Fatalf("second get: id=%d created=%v err=%v, want %d false nil", id2, created, err, id1)
	}
	id3 := mustCreate(t, ix, KindMetric, b, 0)
	id4 := mustCreate(t, ix, KindLog, a, 0) // same labels, other kind: other stream
	if id3 != 2 || id4 != 3 {
		t.Fatalf("ids = %d, %d; want 2, 3 (one monotonic ID space)", id3, id4)
	}
	for _, tc := range []struct {
		id   ID
		want labels.Labels
		kind Kind
	}{{id1, a, KindMetric}, {id3, b, KindMetric}, {id4, a, KindLog}} {
		got, ok := ix.Labels(tc.id, nil)
		if !ok || !labels.Equal(got, tc.want) {
			t.Errorf("Labels(%d) = %s, %v; want %s", tc.id, got, ok, tc.want)
		}
		if k, _ := ix.StreamKind(tc.id); k != tc.kind {
			t.Errorf("StreamKind(%d) = %v, want %v", tc.id, k, tc.kind)
		}
	}
	if _, ok := ix.Labels(99, nil); ok {
		t.Error("Labels(99) found an unknown stream")
	}
	if n := ix.NumStreams(KindAny); n != 3 {
		t.Errorf("NumStreams(any) = %d, want 3", n)
	}
	if n := ix.NumStreams(KindMetric); n != 2 {
		t.Errorf("NumStreams(metric) = %d, want 2", n)
	}
}

func TestGetOrCreateErrors(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	tests := []struct {
		name string
		kind Kind
		ls   labels.Labels
		want error
	}{
		{"any kind", KindAny, labels.FromStrings("a", "b"), ErrInvalidKind},
		{"unknown kind", Kind(9), labels.FromStrings("a", "b"), ErrInvalidKind},
		{"empty labels", KindMetric, labels.EmptyLabels(), ErrEmptyLabels},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ix.GetOrCreate(tc.kind, tc.ls, 0); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestHashCollisions forces every stream onto one hash: lookups must still
// tell label sets apart, and deleting one must keep the others.
func TestHashCollisions(t *testing.T) {
	old := streamHash
	streamHash = func(Kind, labels.Labels) uint64 { return 42 }
	t.Cleanup(func() { streamHash = old })

	ix, _, _ := testIndex(t, DefaultOptions())
	var ids []ID
	var sets []labels.Labels
	for _, v := range []string{"a", "b", "c", "d"} {
		ls := labels.FromStrings("x", v)
		sets = append(sets, ls)
		ids = append(ids, mustCreate(t, ix, KindMetric, ls, 0))
	}
	for i, ls := range sets {
		if got := mustCreate(t, ix, KindMetric, ls, 0); got != ids[i] {
			t.Fatalf("lookup %s = %d, want %d", ls, got, ids[i])
		}
	}
	if err := ix.Delete(t.Context(), bitmapOf(ids[0], ids[2])); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 3} {
		if got := mustCreate(t, ix, KindMetric, sets[i], 0); got != ids[i] {
			t.Fatalf("after delete: lookup %s = %d, want %d", sets[i], got, ids[i])
		}
	}
	if got := mustCreate(t, ix, KindMetric, sets[0], 0); got == ids[0] {
		t.Fatalf("deleted stream came back with its old id %d", got)
	}
}

func TestRestore(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	a := labels.FromStrings("__name__", "up", "job", "a")
	b := labels.FromStrings("__name__", "up", "job", "b")
	if err := ix.Restore(KindMetric, 7, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := ix.Restore(KindMetric, 7, a, hourMs); err != nil {
		t.Fatalf("idempotent restore: %v", err)
	}
	if got := mustCreate(t, ix, KindMetric, a, 0); got != 7 {
		t.Fatalf("restored stream id = %d, want 7", got)
	}
	if got := mustCreate(t, ix, KindMetric, b, 0); got != 8 {
		t.Fatalf("allocator after restore gave %d, want 8", got)
	}
	tests := []struct {
		name string
		id   ID
		ls   labels.Labels
	}{
		{"labels under other id", 9, a},
		{"id with other labels", 7, labels.FromStrings("other", "x")},
		{"zero id", 0, labels.FromStrings("z", "z")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ix.Restore(KindMetric, tc.id, tc.ls, 0); !errors.Is(err, ErrIDConflict) {
				t.Fatalf("err = %v, want ErrIDConflict", err)
			}
		})
	}
	if got := mustPostings(t, ix, KindMetric, 0, 2*hourMs, mustMatcher(t, labels.MatchEqual, "job", "a")); len(got) != 1 || got[0] != 7 {
		t.Fatalf("postings of restored stream = %v, want [7]", got)
	}
}

// TestGetOrCreateFunc: the check runs only for label sets the index does not
// know (per kind), its error comes back unwrapped, and a rejected set is not
// created (no stream counted, no postings).
func TestGetOrCreateFunc(t *testing.T) {
	errReject := errors.New("rejected")
	known := labels.FromStrings("__name__", "up", "job", "a")
	tests := []struct {
		name        string
		kind        Kind
		ls          labels.Labels
		reject      bool
		wantChecked bool
		wantCreated bool
	}{
		{"known stream", KindMetric, known, true, false, false},
		{"known labels, other kind", KindLog, known, false, true, true},
		{"new stream accepted", KindMetric, labels.FromStrings("__name__", "up", "job", "b"), false, true, true},
		{"new stream rejected", KindMetric, labels.FromStrings("__name__", "up", "job", "c"), true, true, false},
	}
	ix, _, _ := testIndex(t, DefaultOptions())
	knownID := mustCreate(t, ix, KindMetric, known, 0)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := ix.NumStreams(KindAny)
			checked := false
			check := func(ls labels.Labels) error {
				checked = true
				if !labels.Equal(ls, tc.ls) {
					t.Errorf("check got %s, want %s", ls, tc.ls)
				}
				if tc.reject {
					return errReject
				}
				return nil
			}
			id, created, err := ix.GetOrCreateFunc(tc.kind, tc.ls, 0, check)
			if checked != tc.wantChecked {
				t.Fatalf("check called: %v, want %v", checked, tc.wantChecked)
			}
			if tc.reject && tc.wantChecked {
				if err != errReject || id != 0 || created {
					t.Fatalf("rejected: id=%d created=%v err=%v, want 0 false %v", id, created, err, errReject)
				}
				if n := ix.NumStreams(KindAny); n != before {
					t.Fatalf("streams %d after a rejected create, want %d", n, before)
				}
				if ids := mustPostings(t, ix, tc.kind, 0, 0, labels.MustNewMatcher(labels.MatchEqual, "job", "c")); len(ids) != 0 {
					t.Fatalf("rejected stream has postings %v", ids)
				}
				return
			}
			if err != nil || created != tc.wantCreated {
				t.Fatalf("id=%d created=%v err=%v, want created %v", id, created, err, tc.wantCreated)
			}
			if !created && id != knownID {
				t.Fatalf("id = %d, want %d", id, knownID)
			}
		})
	}
}

// TestAdmitNew: Options.AdmitNew refuses new streams of any kind with its
// error, nothing created, and is never asked about a stream that exists.
func TestAdmitNew(t *testing.T) {
	refuse := errors.New("over budget")
	var full bool
	var asked []Kind
	opts := DefaultOptions()
	opts.AdmitNew = func(k Kind) error {
		asked = append(asked, k)
		if full {
			return refuse
		}
		return nil
	}
	ix, _, _ := testIndex(t, opts)
	a := labels.FromStrings("__name__", "up", "job", "a")
	id := mustCreate(t, ix, KindMetric, a, 0)
	full = true
	asked = nil
	if got, created, err := ix.GetOrCreate(KindMetric, a.Copy(), 10); err != nil || created || got != id {
		t.Fatalf("existing stream while refusing: %d %v %v", got, created, err)
	}
	if len(asked) != 0 {
		t.Fatalf("AdmitNew asked about an existing stream: %v", asked)
	}
	for _, k := range []Kind{KindMetric, KindLog, KindTrace} {
		_, created, err := ix.GetOrCreate(k, labels.FromStrings("__name__", "up", "job", "new"), 0)
		if err != refuse || created {
			t.Fatalf("new %v stream while refusing: created=%v err=%v, want the refusal unwrapped", k, created, err)
		}
	}
	if n := ix.NumStreams(KindAny); n != 1 {
		t.Fatalf("%d streams after refusals, want 1", n)
	}
	full = false
	if _, created, err := ix.GetOrCreate(KindLog, labels.FromStrings("job", "new"), 0); err != nil || !created {
		t.Fatalf("after the refusal ended: created=%v err=%v", created, err)
	}
}
