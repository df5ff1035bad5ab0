package logstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// SelectTimestamps reports exactly the timestamps Select returns, per
// stream, with sealed, overlapping, duplicated and head entries, for ranges
// that cut chunks.
func TestSelectTimestampsMatchesSelect(t *testing.T) {
	cases := []struct {
		name    string
		overlap bool // later pushes go back in time (chunks overlap)
		retries bool // pushes repeated, as by a retrying client
	}{
		{"ordered", false, false},
		{"retries", false, true},
		{"overlap", true, false},
		{"overlap_retries", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openTestDB(t, t.TempDir())
			defer db.close(t)
			o := testOptions()
			o.SealEntries = 40
			s := openTestStore(t, db, o)
			r := rand.New(rand.NewPCG(7, 8))
			streams := []labels.Labels{labels.FromStrings("app", "a"), labels.FromStrings("app", "b")}
			next := []int64{1000, 1000}
			for round := range 30 {
				for si, ls := range streams {
					es := make([]logentry.Entry, 1+r.IntN(25))
					for i := range es {
						next[si] += int64(r.IntN(3)) // equal timestamps happen
						md := []string{"detected_level", "info"}
						if r.IntN(4) == 0 {
							md = append(md, "trace_id", fmt.Sprint(r.IntN(5)))
						}
						es[i] = ent(next[si], fmt.Sprintf("line %d", r.IntN(3)), md...)
					}
					if tc.overlap && round%5 == 4 {
						for i := range es {
							es[i].Timestamp -= 200
						}
					}
					push(t, s, ls, es...)
					if tc.retries && r.IntN(3) == 0 {
						push(t, s, ls, es...)
					}
				}
				if round%7 == 6 {
					if err := s.Seal(context.Background(), true); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, rg := range [][2]int64{{0, 1 << 40}, {1100, 1300}, {1000, 1001}, {1234, 1500}} {
				p := logentry.SelectParams{Start: rg[0], End: rg[1]}
				want := map[string][]int64{}
				for _, e := range selectAll(t, s, p) {
					want[e.stream] = append(want[e.stream], e.Timestamp)
				}
				got := map[string][]int64{}
				err := s.SelectTimestamps(context.Background(), p, func(ls labels.Labels, names []string, minT, maxT int64, n int, load func() ([]int64, error)) error {
					ts, err := load()
					if err != nil {
						return err
					}
					if len(ts) != n || ts[0] != minT || ts[n-1] != maxT || minT < p.Start || maxT >= p.End {
						t.Fatalf("block n=%d [%d, %d] with timestamps %v", n, minT, maxT, ts)
					}
					if !slices.IsSorted(ts) || !slices.IsSorted(names) || !slices.Contains(names, "detected_level") {
						t.Fatalf("block timestamps %v names %q", ts, names)
					}
					got[ls.String()] = append(got[ls.String()], ts...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for k := range want {
					slices.Sort(got[k])
					if !slices.Equal(got[k], want[k]) {
						t.Fatalf("range %v stream %s: %d timestamps, want %d", rg, k, len(got[k]), len(want[k]))
					}
				}
				if len(got) != len(want) {
					t.Fatalf("range %v: streams %d, want %d", rg, len(got), len(want))
				}
			}
		})
	}
}

// A chunk inside the range is counted from its header: its data is not read.
func TestSelectTimestampsHeaderOnly(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.SealEntries = 10
	s := openTestStore(t, db, o)
	ls := labels.FromStrings("app", "a")
	for c := range 5 {
		es := make([]logentry.Entry, 10)
		for i := range es {
			es[i] = ent(int64(c*100+i), "x")
		}
		push(t, s, ls, es...)
	}
	if err := s.Seal(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	total, blocks := 0, 0
	err := s.SelectTimestamps(context.Background(), logentry.SelectParams{Start: 0, End: 1000}, func(_ labels.Labels, names []string, _, _ int64, n int, _ func() ([]int64, error)) error {
		total += n
		blocks++
		if len(names) != 0 {
			t.Fatalf("names %q", names)
		}
		return nil
	})
	if err != nil || total != 50 || blocks != 5 {
		t.Fatalf("total %d in %d blocks (%v), want 50 in 5", total, blocks, err)
	}
}

// Unsealed heads are filtered too: segment filters and the literal line
// filters leave only the matching entries, and every match is found.
func TestHeadFilter(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	ls := labels.FromStrings("app", "api")
	for c := range 4 {
		push(t, s, ls, benchLines(c*300, 300)...)
	}
	for _, j := range []int{5, 700, 1199} { // in a filtered segment and in the unfiltered rest
		line := benchLines(j, 1)[0].Line
		needle := line[len(line)-32:]
		p := logentry.SelectParams{Start: 0, End: 1 << 62, LineFilters: []logentry.LineFilter{{Op: logentry.LineContains, Value: needle}}}
		got := selectAll(t, s, p)
		if len(got) != 1 || got[0].Line != line {
			t.Fatalf("needle of line %d: got %v", j, got)
		}
		it, err := s.SelectWithHints(context.Background(), p, Hints{MetadataEqual: []labels.Label{{Name: "detected_level", Value: "info"}}})
		if err != nil {
			t.Fatal(err)
		}
		if h := it.(*iterator).streams[0].head; len(h) != 1 {
			t.Fatalf("needle of line %d: %d head entries selected", j, len(h))
		}
		it.Close()
	}
	// A metadata hint no entry has leaves the filtered segments out.
	it, err := s.SelectWithHints(context.Background(), all(), Hints{MetadataEqual: []labels.Label{{Name: "detected_level", Value: "error"}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := it.(*iterator).streams[0].head; len(h) != 1200%headSegLen {
		t.Fatalf("%d head entries selected, want the %d unfiltered ones", len(h), 1200%headSegLen)
	}
	it.Close()
}

// Close seals the heads: nothing is left to replay, and the data reads the
// same after reopening.
func TestSealOnClose(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	o := testOptions()
	o.NoSealOnClose = false
	s, err := Open(context.Background(), db.db, db.ix, o)
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("app", "x")
	push(t, s, ls, benchLines(0, 300)...)
	want := selectAll(t, s, all())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lo, hi := tagBound(tagRecent)
	n := 0
	if err := s.scan(lo, hi, func(_, _ []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d recent records after Close (%v)", n, err)
	}
	db.close(t)
	db = openTestDB(t, dir)
	defer db.close(t)
	s = openTestStore(t, db, testOptions())
	got := selectAll(t, s, all())
	if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
		t.Fatalf("after reopen %d entries, want %d", len(got), len(want))
	}
}

func TestFilterCacheBudget(t *testing.T) {
	c := filterCache{max: 100}
	for i := range 10 {
		c.put([]byte{byte(i)}, make([]byte, 30))
		if c.bytes > c.max {
			t.Fatalf("after %d puts: %d bytes cached, budget %d", i+1, c.bytes, c.max)
		}
		if _, ok := c.get([]byte{byte(i)}); !ok {
			t.Fatalf("entry %d not cached right after put", i)
		}
	}
	c.put([]byte{99}, make([]byte, 101)) // over the budget alone: not kept
	if _, ok := c.get([]byte{99}); ok {
		t.Fatal("entry larger than the budget cached")
	}
	c.clear()
	if _, ok := c.get([]byte{9}); ok || c.bytes != 0 {
		t.Fatal("entries after clear")
	}
}

// Needle queries read chunk filters through the cache, and a reopened store
// finds its chunks from the headers it loads.
func TestChunkRefsAfterReopen(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	o := testOptions()
	o.SealEntries = 100
	s, err := Open(context.Background(), db.db, db.ix, o)
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("app", "api")
	for c := range 5 {
		push(t, s, ls, benchLines(c*100, 100)...)
	}
	line := benchLines(321, 1)[0].Line
	p := logentry.SelectParams{Start: 0, End: 1 << 62, LineFilters: []logentry.LineFilter{{Op: logentry.LineContains, Value: line[len(line)-32:]}}}
	for range 2 { // the second reads the filters from the cache
		got := selectAll(t, s, p) // the store skips chunks; the engine filters lines
		if len(got) != 100 || !slices.ContainsFunc(got, func(e gotEntry) bool { return e.Line == line }) {
			t.Fatalf("needle: %d entries without the line", len(got))
		}
	}
	if s.filters.bytes == 0 {
		t.Fatal("no filter cached")
	}
	s.Close()
	db.close(t)
	db = openTestDB(t, dir)
	defer db.close(t)
	s = openTestStore(t, db, o)
	it, err := s.Select(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		if _, e := it.At(); e.Line == line {
			n++
		}
	}
	ii := it.(*iterator)
	it.Close()
	if n != 1 || ii.chunksRead != 1 || ii.chunksSkipped != 4 {
		t.Fatalf("after reopen: %d entries, %d chunks read, %d skipped; want 1, 1, 4", n, ii.chunksRead, ii.chunksSkipped)
	}
}

// Head lines are copied out of what the pusher passed: changing its
// buffer afterwards does not change stored lines.
func TestHeadLinesCopied(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	buf := []byte("first line")
	line := unsafe.String(&buf[0], len(buf)) // aliases buf, as decoders' lines alias bodies
	push(t, s, labels.FromStrings("app", "a"), ent(1, line), ent(2, strings.Repeat("x", 3000)))
	copy(buf, "XXXXX")
	got := selectAll(t, s, all())
	if len(got) != 2 || got[0].Line != "first line" || len(got[1].Line) != 3000 {
		t.Fatalf("got %v", got)
	}
}
