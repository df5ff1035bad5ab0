package storage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// selectSamples reads every sample of s.
func selectSamples(tb testing.TB, s promstorage.Series) []int64 {
	tb.Helper()
	var ts []int64
	it := s.Iterator(nil)
	for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
		ts = append(ts, it.AtT())
	}
	if err := it.Err(); err != nil {
		tb.Fatalf("iterate %s: %v", s.Labels(), err)
	}
	return ts
}

// selectSet runs one Select and returns the series' label strings in the
// order returned and each series' samples.
func selectSet(tb testing.TB, db *DB, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) ([]string, map[string][]int64) {
	tb.Helper()
	q, err := db.Querier(minInt64, maxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), sortSeries, hints, ms...)
	var order []string
	samples := map[string][]int64{}
	for ss.Next() {
		k := ss.At().Labels().String()
		order = append(order, k)
		samples[k] = selectSamples(tb, ss.At())
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	return order, samples
}

// TestSelectModes checks that the batched Select returns the same series and
// samples sorted or not and in labels-only mode (the series API), over
// series in Pebble, in the head or both, across several batches, with a
// deleted series and a limit.
func TestSelectModes(t *testing.T) {
	opts := testOptions()
	opts.SamplesPerChunk = 10
	db := openTestDB(t, opts)
	const n = 2*selectBatch + 37
	name := labels.MustNewMatcher(labels.MatchEqual, "__name__", "m")
	lsOf := func(i int) labels.Labels { return labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)) }
	// Series i%3==0 end at t=23 (sealed and flushed to Pebble), i%3==1
	// start at t=36 (head only), the others span both.
	for k := int64(0); k < 60; k++ {
		app := db.Appender(context.Background())
		for i := 0; i < n; i++ {
			if (i%3 == 0 && k >= 24) || (i%3 == 1 && k < 36) {
				continue
			}
			if _, err := app.Append(0, lsOf(i), k*step, float64(k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if k == 30 {
			if err := db.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.DeleteSeries(context.Background(), minInt64, maxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "5")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		mint, maxt int64
	}{
		{"all", minInt64, maxInt64},
		{"old only", 0, 18 * step},         // i%3 != 1
		{"new only", 42 * step, 59 * step}, // i%3 != 0
		{"gap", 27 * step, 33 * step},      // i%3 == 2
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for i := 0; i < n; i++ {
				first, last := int64(0), int64(59)
				switch i % 3 {
				case 0:
					last = 23
				case 1:
					first = 36
				}
				if i != 5 && first*step <= tc.maxt && last*step >= tc.mint {
					want = append(want, lsOf(i).String())
				}
			}
			slices.Sort(want)
			hints := &promstorage.SelectHints{Start: tc.mint, End: tc.maxt}
			sorted, full := selectSet(t, db, true, hints, name)
			if !slices.Equal(sorted, want) {
				t.Fatalf("sorted select: %d series, want %d", len(sorted), len(want))
			}
			unsorted, full2 := selectSet(t, db, false, hints, name)
			slices.Sort(unsorted)
			if !slices.Equal(unsorted, want) {
				t.Fatalf("unsorted select: %d series, want %d", len(unsorted), len(want))
			}
			lhints := *hints
			lhints.Func = "series"
			lonly, lazy := selectSet(t, db, false, &lhints, name)
			slices.Sort(lonly)
			if !slices.Equal(lonly, want) {
				t.Fatalf("labels-only select: %d series, want %d", len(lonly), len(want))
			}
			for k, ts := range full {
				if !slices.Equal(full2[k], ts) || !slices.Equal(lazy[k], ts) {
					t.Fatalf("%s: samples differ between modes: %v / %v / %v", k, ts, full2[k], lazy[k])
				}
			}
			lhints.Limit = 7
			if got, _ := selectSet(t, db, false, &lhints, name); len(got) != min(7, len(want)) {
				t.Fatalf("limit 7: %d series", len(got))
			}
		})
	}
	// An empty range (start after end, days apart) selects nothing.
	if got, _ := selectSet(t, db, false, &promstorage.SelectHints{Start: 3 * 86_400_000, End: 0}, name); len(got) != 0 {
		t.Fatalf("empty range: %d series", len(got))
	}
}

// TestSelectConcurrentFlushNeverMisses iterates unsorted selects over more
// than one batch while chunks are sealed, written to Pebble, compacted and
// dropped from the head (in the background and, at a known point, between
// the first batch and the next): every sample committed before Select must
// be returned, once and in order.
func TestSelectConcurrentFlushNeverMisses(t *testing.T) {
	opts := testOptions()
	opts.SamplesPerChunk = 4
	db := openTestDB(t, opts)
	const n = selectBatch + 300
	lsOf := func(i int) labels.Labels { return labels.FromStrings("__name__", "m", "i", fmt.Sprint(i)) }
	appendStep := func(k int64) {
		app := db.Appender(context.Background())
		for i := 0; i < n; i++ {
			if _, err := app.Append(0, lsOf(i), k*step, float64(k)); err != nil {
				t.Error(err)
				return
			}
		}
		if err := app.Commit(); err != nil {
			t.Error(err)
		}
	}
	var committed int64
	for ; committed < 10; committed++ {
		appendStep(committed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex // guards committed
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := int64(10); ctx.Err() == nil && k < 400; k++ {
			appendStep(k)
			mu.Lock()
			committed = k + 1
			mu.Unlock()
			if k%3 == 0 {
				_ = db.Flush(ctx)
			}
			if k%7 == 0 {
				_ = db.Compact(ctx)
			}
		}
	}()
	for round := 0; round < 20; round++ {
		mu.Lock()
		before := committed
		mu.Unlock()
		q, err := db.Querier(minInt64, maxInt64)
		if err != nil {
			t.Fatal(err)
		}
		ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
		seen := 0
		for ss.Next() {
			seen++
			if seen == 1 {
				// Move everything to Pebble while the first batch is
				// loaded: the later batches must find it there.
				if err := db.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ts := selectSamples(t, ss.At())
			if int64(len(ts)) < before {
				t.Fatalf("round %d: %s has %d samples, %d were committed before Select", round, ss.At().Labels(), len(ts), before)
			}
			for k, x := range ts {
				if x != int64(k)*step {
					t.Fatalf("round %d: %s sample %d at %d, want %d", round, ss.At().Labels(), k, x, int64(k)*step)
				}
			}
		}
		if err := ss.Err(); err != nil {
			t.Fatal(err)
		}
		if seen != n {
			t.Fatalf("round %d: %d series, want %d", round, seen, n)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
}

// TestHeadOnlyReads checks the reads that skip Pebble because the head
// holds every sample from the range's start (headHoldsLocked): for every
// start of a range over a series whose chunks were sealed into Pebble and
// whose out-of-order samples were merged into Pebble chunks, before and
// after more of both, the samples are exactly those appended; the head is
// found to hold the newest ranges (so the skip is taken) but not those
// reaching into chunks written to Pebble, nor any after a restart (the
// series is not the process's own).
func TestHeadOnlyReads(t *testing.T) {
	opts := testOptions()
	opts.SamplesPerChunk = 8
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("__name__", "m")
	want := map[int64]float64{}
	add := func(k int64) {
		mustAppend(t, db, ls, k*1000, float64(k))
		want[k*1000] = float64(k)
	}
	// check reads [mint, end] for every mint; the head must hold the
	// ranges from newest on and not those from oldest.
	check := func(db *DB, when string, end int64, newest, oldest int64) {
		t.Helper()
		for mint := int64(0); mint <= end; mint += 1000 {
			var w []got
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if k >= mint && k <= end {
					w = append(w, got{T: k, V: want[k]})
				}
			}
			res := queryAll(t, db, mint, end)
			requireSamples(t, res, map[string][]got{ls.String(): w})
			if len(res[ls.String()]) != len(w) {
				t.Fatalf("%s from %d: %d samples, want %d", when, mint, len(res[ls.String()]), len(w))
			}
			s := db.series.get(1)
			if s == nil {
				t.Fatalf("%s: series not in the head", when)
			}
			s.mu.Lock()
			holds := db.headHoldsLocked(s, mint)
			s.mu.Unlock()
			if (mint >= newest && !holds) || (mint <= oldest && holds) {
				t.Fatalf("%s from %d: head holds = %v", when, mint, holds)
			}
		}
	}
	for k := int64(0); k < 60; k += 2 {
		add(k)
	}
	for k := int64(1); k < 60; k += 2 { // late, within the out-of-order window
		add(k)
	}
	check(db, "appended", 60_000, 56_000, -1) // the open chunk of 8 even samples starts at 56 s
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	check(db, "flushed", 60_000, 1<<62, 60_000) // Flush seals the open chunk
	for k := int64(60); k < 100; k++ {
		add(k)
	}
	for _, k := range []int64{57, 59} { // late again: the open chunk's range
		mustAppend(t, db, ls, k*1000+500, -float64(k))
		want[k*1000+500] = -float64(k)
	}
	check(db, "more", 100_000, 92_000, 59_000) // open chunk 92-99 s
	// The sealed chunks and the late samples into Pebble, the open chunk
	// staying: what the background checkpoint does between Flushes.
	s := db.series.get(1)
	if err := db.writePending([]*memSeries{s}); err != nil {
		t.Fatal(err)
	}
	if err := db.flushOOO(s); err != nil {
		t.Fatal(err)
	}
	if s.ext != nil && (len(s.ext.ooo) > 0 || len(s.ext.pending) > 0) {
		t.Fatalf("late samples or sealed chunks left in the head")
	}
	check(db, "merged", 100_000, 92_000, 91_000)
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	check(db, "flushed again", 100_000, 1<<62, 100_000)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k := int64(100); k < 104; k++ {
		add(k)
	}
	check(db, "reopened", 103_000, 1<<62, 103_000) // an open chunk from 100 s, but not this process's series
}
