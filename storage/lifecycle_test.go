package storage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

const step = int64(15_000)

// fill appends n samples per series (value = t/step + series index) in
// batches of one sample per series.
func fill(tb testing.TB, db *DB, series, n int, from int64) {
	tb.Helper()
	for k := 0; k < n; k++ {
		app := db.Appender(context.Background())
		t := from + int64(k)*step
		for i := 0; i < series; i++ {
			ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
			if _, err := app.Append(0, ls, t, float64(t/step)+float64(i)); err != nil {
				tb.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

func checkFill(tb testing.TB, db *DB, series, n int, from int64) {
	tb.Helper()
	res := queryAll(tb, db, from, from+int64(n)*step)
	if len(res) != series {
		tb.Fatalf("%d series, want %d", len(res), series)
	}
	for i := 0; i < series; i++ {
		ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
		ss := res[ls.String()]
		if len(ss) != n {
			tb.Fatalf("series %d: %d samples, want %d", i, len(ss), n)
		}
		for k, g := range ss {
			t := from + int64(k)*step
			if g.T != t || g.V != float64(t/step)+float64(i) {
				tb.Fatalf("series %d sample %d = %+v, want t=%d", i, k, g, t)
			}
		}
	}
}

func TestReopenReplaysAndFlushes(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions()
	opts.Retention = -1
	opts.WALSyncInterval = -1 // fsync per commit, so WALFsyncs counts them now
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, db, 10, 300, 0) // two sealed chunks + an open one per series
	st := db.Stats()
	if st.ActiveSeries != 10 || st.SeriesCreated != 10 || st.SamplesAppended != 3000 || st.HeadChunks != 10 || st.WALBytes == 0 || st.WALFsyncs == 0 {
		t.Fatalf("stats after fill: %+v", st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFill(t, db, 10, 300, 0)
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.HeadChunks != 0 || st.PendingChunks != 0 {
		t.Fatalf("after flush: %+v", st)
	}
	checkFill(t, db, 10, 300, 0)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkFill(t, db, 10, 300, 0)
	names, _, err := mustQuerier(t, db).LabelValues(context.Background(), "i", nil, labels.MustNewMatcher(labels.MatchRegexp, "i", "[12]"))
	if err != nil || !slices.Equal(names, []string{"1", "2"}) {
		t.Fatalf("label values = %v, %v", names, err)
	}
}

func mustQuerier(tb testing.TB, db *DB) promstorage.Querier {
	tb.Helper()
	q, err := db.Querier(0, 1<<62)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}

func TestOutOfOrderMergedIntoPebble(t *testing.T) {
	db := openTestDB(t, testOptions())
	ls := labels.FromStrings("__name__", "ooo")
	for k := int64(0); k < 130; k += 2 { // even steps in order
		mustAppend(t, db, ls, k*1000, float64(k))
	}
	for k := int64(1); k < 130; k += 2 { // odd steps late, within the 10m window
		mustAppend(t, db, ls, k*1000, float64(k))
	}
	check := func(when string) {
		res := queryAll(t, db, 0, 200_000)[ls.String()]
		if len(res) != 130 {
			t.Fatalf("%s: %d samples, want 130", when, len(res))
		}
		for k, g := range res {
			if g.T != int64(k)*1000 || g.V != float64(k) {
				t.Fatalf("%s: sample %d = %+v", when, k, g)
			}
		}
	}
	check("head")
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("pebble")
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("compacted")
}

func TestCompactionMergesPartition(t *testing.T) {
	opts := testOptions()
	opts.PartitionDuration = time.Hour
	opts.Retention = -1
	db := openTestDB(t, opts)
	fill(t, db, 3, 600, 0) // 2.5 h at 15 s: partitions 0,1 full, 2 is the head's
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	countChunks := func(p int64) int {
		r, err := db.newChunkReader()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cs, err := r.read(1, minInt64, maxInt64, []int64{p}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	if n := countChunks(0); n < 2 {
		t.Fatalf("partition 0 has %d chunks before compaction", n)
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countChunks(0); n != 1 {
		t.Fatalf("partition 0 has %d chunks after compaction, want 1 block", n)
	}
	if db.Stats().CompactionsRun != 1 {
		t.Fatal("compaction not counted")
	}
	checkFill(t, db, 3, 600, 0)
}

func TestRetentionDropsPartitions(t *testing.T) {
	opts := testOptions()
	opts.PartitionDuration = time.Hour
	opts.Retention = 90 * time.Minute
	opts.FutureWindow = -1
	var clock atomic.Int64 // wall clock, ms: 1970 while filling
	opts.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	db := openTestDB(t, opts)
	fill(t, db, 2, 4*240, 0) // 4 hours
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.Store(4 * 3600_000)
	if err := db.ApplyRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	// now 4h: cutoff 2.5h, partitions 0 and 1 dropped.
	res := queryAll(t, db, 0, 5*3600_000)
	for _, ss := range res {
		if len(ss) == 0 || ss[0].T != 2*3600_000 {
			t.Fatalf("oldest sample after retention at %d, want %d", ss[0].T, 2*3600_000)
		}
	}
	if st, _ := db.StartTime(); st != 2*3600_000 {
		t.Fatalf("StartTime = %d", st)
	}
}

func TestDeleteSeriesAndClean(t *testing.T) {
	db := openTestDB(t, testOptions())
	fill(t, db, 3, 300, 0)
	ms := labels.MustNewMatcher(labels.MatchEqual, "i", "1")
	if err := db.DeleteSeries(context.Background(), 100*step, 199*step, ms); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		ls := labels.FromStrings("__name__", "m", "i", "1")
		res := queryAll(t, db, 0, 400*step)
		if n := len(res[ls.String()]); n != 200 {
			t.Fatalf("%s: %d samples of deleted series, want 200", when, n)
		}
		for _, g := range res[ls.String()] {
			if g.T >= 100*step && g.T <= 199*step {
				t.Fatalf("%s: deleted sample at %d visible", when, g.T)
			}
		}
		if n := len(res[labels.FromStrings("__name__", "m", "i", "0").String()]); n != 300 {
			t.Fatalf("%s: other series has %d samples", when, n)
		}
	}
	check("tombstoned")
	if err := db.CleanTombstones(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(db.tombs.snapshot()) != 0 {
		t.Fatal("tombstones left after clean")
	}
	check("cleaned")
	// Whole-series deletion removes the series.
	if err := db.DeleteSeries(context.Background(), minInt64, maxInt64, labels.MustNewMatcher(labels.MatchEqual, "i", "2")); err != nil {
		t.Fatal(err)
	}
	if err := db.CleanTombstones(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := queryAll(t, db, 0, 400*step); len(res) != 2 {
		t.Fatalf("%d series after deleting one of 3", len(res))
	}
}

func TestConcurrentAppendQueryFlush(t *testing.T) {
	db := openTestDB(t, testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				q, err := db.Querier(0, 1<<62)
				if err != nil {
					return
				}
				ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
				for ss.Next() {
					it := ss.At().Iterator(nil)
					prev := int64(minInt64)
					for it.Next() != chunkenc.ValNone {
						if it.AtT() <= prev {
							t.Errorf("timestamps not increasing: %d after %d", it.AtT(), prev)
						}
						prev = it.AtT()
					}
				}
				q.Close()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_ = db.Flush(ctx)
			_ = db.Compact(ctx)
			time.Sleep(time.Millisecond)
		}
	}()
	fill(t, db, 20, 400, 0)
	cancel()
	wg.Wait()
	checkFill(t, db, 20, 400, 0)
}

func TestChunkQuerier(t *testing.T) {
	db := openTestDB(t, testOptions())
	fill(t, db, 2, 130, 0)
	cq, err := db.ChunkQuerier(0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	css := cq.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"))
	n, total := 0, 0
	for css.Next() {
		n++
		it := css.At().Iterator(nil)
		for it.Next() {
			total += it.At().Chunk.NumSamples()
		}
	}
	if n != 2 || total != 260 {
		t.Fatalf("chunk querier: %d series, %d samples", n, total)
	}
}

func TestCompactionConvertsHeadPartition(t *testing.T) {
	db := openTestDB(t, testOptions())
	fill(t, db, 2, 500, 0) // one partition (day); 4 sealed chunks per series
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	versions := func() map[byte]int {
		out := map[byte]int{}
		it, err := db.pdb.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for ok := it.SeekGE([]byte{tagChunk}); ok && it.Key()[0] == tagChunk; ok = it.Next() {
			v, _ := it.ValueAndErr()
			out[v[0]]++
		}
		return out
	}
	if v := versions(); v[chunkValueXOR] == 0 {
		t.Fatalf("before compaction: %v, want Prometheus chunks", v)
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := versions(); v[chunkValueXOR] != 0 || v[chunkValueColumnar] != 2 {
		t.Fatalf("after compaction: %v, want one columnar block per series", v)
	}
	checkFill(t, db, 2, 500, 0)
	fill(t, db, 2, 200, 500*step)
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := versions(); v[chunkValueXOR] != 0 {
		t.Fatalf("after second compaction: %v", v)
	}
	checkFill(t, db, 2, 700, 0)
}
