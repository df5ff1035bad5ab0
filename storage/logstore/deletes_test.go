package logstore

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

var (
	delA = labels.FromStrings("app", "a", "run_id", "r1")
	delB = labels.FromStrings("app", "b")
)

// deleteFixture pushes two streams around base: a's lines 0..9 (odd ones
// say "secret"), b's lines 0..4, one second apart.
func deleteFixture(tb testing.TB, s *Store, base int64) {
	tb.Helper()
	var as, bs []logentry.Entry
	for i := range int64(10) {
		line := "ok"
		if i%2 == 1 {
			line = "secret token"
		}
		as = append(as, ent(base+i*1e9, line))
		if i < 5 {
			bs = append(bs, ent(base+i*1e9, "secret elsewhere"))
		}
	}
	push(tb, s, delA, as...)
	push(tb, s, delB, bs...)
}

func lines(got []gotEntry, stream labels.Labels) []int64 {
	var ts []int64
	for _, g := range got {
		if g.stream == stream.String() {
			ts = append(ts, g.Timestamp)
		}
	}
	return ts
}

func countTimestamps(tb testing.TB, s *Store, p logentry.SelectParams) int {
	tb.Helper()
	n := 0
	err := s.SelectTimestamps(context.Background(), p, func(_ labels.Labels, _ []string, _, _ int64, k int, load func() ([]int64, error)) error {
		ts, err := load()
		if err != nil || len(ts) != k {
			tb.Fatalf("load %v %d != %d", err, len(ts), k)
		}
		n += k
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestDeleteRequestHidesAndCancels(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "head", true: "chunks"}[sealed], func(t *testing.T) {
			db := openTestDB(t, t.TempDir())
			defer db.close(t)
			s := openTestStore(t, db, testOptions())
			base := time.Now().Add(-time.Hour).UnixNano()
			deleteFixture(t, s, base)
			if sealed {
				if err := s.Seal(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
			// Delete "secret" lines of app a in seconds 2..7 (inclusive).
			req, err := s.AddDeleteRequest(context.Background(), DeleteRequest{
				Query:    `{app="a"} |= "secret"`,
				Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "app", "a")},
				Filters:  []DeleteFilter{{Op: DeleteLineContains, Values: []string{"secret"}}},
				Start:    base + 2e9, End: base + 7e9,
			})
			if err != nil {
				t.Fatal(err)
			}
			if req.ID == "" || req.CreatedAt == 0 || req.Processed {
				t.Fatalf("stored %+v", req)
			}
			got := selectAll(t, s, all())
			want := []int64{base, base + 1e9, base + 2e9, base + 4e9, base + 6e9, base + 8e9, base + 9e9}
			if a := lines(got, delA); !slices.Equal(a, want) {
				t.Fatalf("a after delete: %v, want %v", a, want)
			}
			if b := lines(got, delB); len(b) != 5 {
				t.Fatalf("b touched: %v", b)
			}
			// Counting and stats see what Select sees.
			if n := countTimestamps(t, s, all()); n != 12 {
				t.Errorf("SelectTimestamps counts %d, want 12", n)
			}
			if st, err := s.Stats(context.Background(), 0, 1<<62); err != nil || st.Entries != 12 {
				t.Errorf("stats %+v %v, want 12 entries", st, err)
			}
			if got := s.DeleteRequests(); len(got) != 1 || got[0].ID != req.ID {
				t.Fatalf("list %+v", got)
			}
			if err := s.CancelDeleteRequest(context.Background(), "nope"); !errors.Is(err, ErrDeleteNotFound) {
				t.Fatalf("cancel unknown: %v", err)
			}
			if err := s.CancelDeleteRequest(context.Background(), req.ID); err != nil {
				t.Fatal(err)
			}
			if a := lines(selectAll(t, s, all()), delA); len(a) != 10 {
				t.Fatalf("after cancel: %v", a)
			}
		})
	}
}

// A request survives a restart; processing it removes the entries from
// the chunks for good; a processed request cannot be cancelled.
func TestDeleteRequestPersistsAndReclaims(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour).UnixNano()
	db := openTestDB(t, dir)
	s, err := Open(context.Background(), db.db, db.ix, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	deleteFixture(t, s, base)
	req, err := s.AddDeleteRequest(context.Background(), DeleteRequest{
		Query:    `{run_id="r1"} |~ "sec.et" != "nothing"`,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "run_id", "r1")},
		Filters: []DeleteFilter{
			{Op: DeleteLineMatches, Values: []string{"sec.et"}},
			{Op: DeleteLineNotContains, Values: []string{"nothing", "at all"}},
		},
		Start: base, End: base + 9e9,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db.close(t)

	db = openTestDB(t, dir)
	defer db.close(t)
	s = openTestStore(t, db, testOptions())
	reqs := s.DeleteRequests()
	if len(reqs) != 1 || reqs[0].Query != req.Query || !reflect.DeepEqual(reqs[0].Filters[1].Values, []string{"nothing", "at all"}) || reqs[0].Start != req.Start {
		t.Fatalf("reloaded %+v", reqs)
	}
	if a := lines(selectAll(t, s, all()), delA); len(a) != 5 {
		t.Fatalf("after reopen %d of a's lines visible, want 5", len(a))
	}
	// Not due yet: nothing happens.
	if err := s.ReclaimDeletes(context.Background(), req.CreatedAt-1); err != nil || s.DeleteRequests()[0].Processed {
		t.Fatalf("reclaim before the cutoff: %v %+v", err, s.DeleteRequests())
	}
	if err := s.ReclaimDeletes(context.Background(), req.CreatedAt); err != nil {
		t.Fatal(err)
	}
	if !s.DeleteRequests()[0].Processed {
		t.Fatal("request not marked processed")
	}
	// The chunks themselves hold 5 of a's 10 lines now.
	if n := rawEntries(t, s, delA); n != 5 {
		t.Fatalf("chunks of a hold %d entries, want 5", n)
	}
	if n := rawEntries(t, s, delB); n != 5 {
		t.Fatalf("chunks of b hold %d entries, want 5 (untouched)", n)
	}
	if got := lines(selectAll(t, s, all()), delA); len(got) != 5 {
		t.Fatalf("after reclaim %v", got)
	}
	// A processed request still hides lines pushed into its range later.
	push(t, s, delA, ent(base+3e9+1, "late secret"))
	if got := lines(selectAll(t, s, all()), delA); len(got) != 5 {
		t.Fatalf("late line in the range visible: %v", got)
	}
	if err := s.CancelDeleteRequest(context.Background(), req.ID); !errors.Is(err, ErrDeleteProcessed) {
		t.Fatalf("cancel processed: %v", err)
	}
}

// rawEntries counts the entries in the chunks and head of stream ls,
// without applying delete requests.
func rawEntries(tb testing.TB, s *Store, ls labels.Labels) int {
	tb.Helper()
	s.mu.RLock()
	var st *stream
	for _, x := range s.streams {
		if labels.Equal(x.ls, ls) {
			st = x
		}
	}
	s.mu.RUnlock()
	if st == nil {
		tb.Fatalf("no stream %s", ls)
	}
	snap := s.db.NewSnapshot()
	defer snap.Close()
	rd := &iterator{ctx: context.Background(), s: s, snap: snap}
	s.sealMu.RLock()
	defer s.sealMu.RUnlock()
	st.mu.Lock()
	n := len(st.entries)
	st.mu.Unlock()
	for _, refs := range st.chunks {
		for _, r := range refs {
			es, err := rd.readChunk(r.key, r.meta)
			if err != nil {
				tb.Fatal(err)
			}
			n += len(es)
		}
	}
	return n
}

func TestDeleteRequestValidation(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	m := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "app", "a")}
	for name, r := range map[string]DeleteRequest{
		"no selector":  {Start: 0, End: 1},
		"end first":    {Matchers: m, Start: 2, End: 1},
		"bad regexp":   {Matchers: m, Filters: []DeleteFilter{{Op: DeleteLineMatches, Values: []string{"("}}}},
		"pattern":      {Matchers: m, Filters: []DeleteFilter{{Op: "|>", Values: []string{"<_>"}}}},
		"empty filter": {Matchers: m, Filters: []DeleteFilter{{Op: DeleteLineContains}}},
	} {
		if _, err := s.AddDeleteRequest(context.Background(), r); !errors.Is(err, ErrInvalidDelete) {
			t.Errorf("%s: %v, want ErrInvalidDelete", name, err)
		}
	}
	if len(s.DeleteRequests()) != 0 {
		t.Fatal("an invalid request was stored")
	}
}

func FuzzDecodeDeleteRecord(f *testing.F) {
	r := DeleteRequest{ID: "abc", Query: `{a="b"} |= "x"`, Start: -5, End: 7, CreatedAt: 9, Processed: true,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "a", "b.*")},
		Filters:  []DeleteFilter{{Op: DeleteLineMatches, Values: []string{"x+", "y"}}}}
	f.Add(appendDeleteRecord(nil, &r))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeDeleteRecord(b)
		if err != nil {
			return
		}
		// What decodes encodes to a record that decodes to the same
		// request (the input may use longer varints than the encoder).
		enc := appendDeleteRecord(nil, got)
		back, err := decodeDeleteRecord(enc)
		if err != nil {
			t.Fatalf("re-decode %x: %v", enc, err)
		}
		if again := appendDeleteRecord(nil, back); string(again) != string(enc) {
			t.Fatalf("round trip: %x -> %x", enc, again)
		}
	})
}
