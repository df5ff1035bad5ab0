package blocks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// lazyReader returns a started reader of bucket that downloads only what
// reads need (no prefetch), its cache bounded by maxBytes.
func lazyReader(t *testing.T, bucket Bucket, maxBytes int64) *Reader {
	t.Helper()
	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour, MaxCacheBytes: maxBytes, DisablePrefetch: true}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func downloads(r *Reader) int { return int(testutil.ToFloat64(r.m.downloads)) }
func evictions(r *Reader) int { return int(testutil.ToFloat64(r.m.evictions)) }

// samplesIn returns the samples the reader answers for [mint, maxt] as
// rows, or the read's error.
func samplesIn(ctx context.Context, r *Reader, w [2]int64) ([]string, error) {
	q, err := r.Querier(w[0], w[1])
	if err != nil {
		return nil, err
	}
	defer q.Close()
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_util"))
	var rows []string
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			rows = append(rows, fmt.Sprintf("%s %d %g", ss.At().Labels(), ts, v))
		}
	}
	return rows, ss.Err()
}

// downloaded reports whether block id has a local copy.
func downloaded(r *Reader, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.blocks[id]
	return b != nil && b.sub != nil
}

// TestReaderLazyCache: Sync downloads nothing; a read downloads the blocks
// it overlaps; past the bound, the least recently read idle blocks are
// evicted, never one a read holds; answers after eviction and a new
// download are the same; a block whose files cannot be downloaded fails
// the read.
func TestReaderLazyCache(t *testing.T) {
	ctx := context.Background()
	bucket, metas, largest := fourBlocks(t)
	var err error
	window := func(i int) [2]int64 { return [2]int64{base + int64(i)*width + 1, base + int64(i+1)*width - 1} }
	full := lazyReader(t, bucket, -1)
	want := make([][]string, len(metas))
	for i := range metas {
		if want[i], err = samplesIn(ctx, full, window(i)); err != nil || len(want[i]) < 3*59 {
			t.Fatalf("block %d: %d samples, %v; want at least 180", i, len(want[i]), err)
		}
	}

	bound := 2*largest + largest/2 // two blocks fit, three do not
	r := lazyReader(t, bucket, bound)
	if n := len(r.Blocks()); n != 4 || downloads(r) != 0 || r.CacheBytes() != 0 {
		t.Fatalf("after sync: %d blocks listed, %d downloaded, %d bytes cached; want 4, 0, 0", n, downloads(r), r.CacheBytes())
	}
	read := func(i int) {
		t.Helper()
		got, err := samplesIn(ctx, r, window(i))
		if err != nil || !slices.Equal(got, want[i]) {
			t.Fatalf("block %d: %d samples, %v; want %d", i, len(got), err, len(want[i]))
		}
	}
	read(0)
	read(1)
	if downloads(r) != 2 || evictions(r) != 0 || !downloaded(r, metas[0].ID) || !downloaded(r, metas[1].ID) || downloaded(r, metas[2].ID) {
		t.Fatalf("after reading blocks 0 and 1: %d downloads, %d evictions", downloads(r), evictions(r))
	}
	read(0) // cached: no download; block 1 is now the least recently read
	read(2)
	if downloads(r) != 3 || evictions(r) != 1 || downloaded(r, metas[1].ID) || !downloaded(r, metas[0].ID) {
		t.Fatalf("after reading block 2: %d downloads, %d evictions; block 1 downloaded %v, block 0 %v; want 3, 1, false, true",
			downloads(r), evictions(r), downloaded(r, metas[1].ID), downloaded(r, metas[0].ID))
	}
	if r.CacheBytes() > bound {
		t.Fatalf("cache %d bytes, bound %d", r.CacheBytes(), bound)
	}

	// A querier that has read block 3 holds it: reads of every other
	// block evict around it.
	held, err := r.Querier(window(3)[0], window(3)[1])
	if err != nil {
		t.Fatal(err)
	}
	if ss := held.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_util")); !ss.Next() || ss.Err() != nil {
		t.Fatalf("held read: %v", ss.Err())
	}
	for _, i := range []int{0, 1, 2, 1, 0} {
		read(i)
		if !downloaded(r, metas[3].ID) {
			t.Fatalf("block 3, held by a read, evicted after reading block %d", i)
		}
	}
	before := downloads(r)
	read(3)
	if downloads(r) != before {
		t.Fatal("the held block was downloaded again")
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if r.CacheBytes() > bound {
		t.Fatalf("cache %d bytes after the hold ended, bound %d", r.CacheBytes(), bound)
	}
	for i := range metas { // every answer still right, re-downloaded or not
		read(i)
	}
	if evictions(r) < 4 {
		t.Fatalf("%d evictions; want at least 4", evictions(r))
	}

	// A block whose files are gone fails the reads that need it, metrics
	// and logs alike, instead of answering short.
	for _, f := range metas[1].Files {
		if err := bucket.Delete(ctx, Prefix+metas[1].ID+"/"+f.Path); err != nil {
			t.Fatal(err)
		}
	}
	r2 := lazyReader(t, bucket, bound)
	if _, err := samplesIn(ctx, r2, window(1)); err == nil || !strings.Contains(err.Error(), metas[1].ID) {
		t.Fatalf("read of a block without files: %v; want an error naming it", err)
	}
	if _, err := r2.Select(ctx, logentry.SelectParams{Start: window(1)[0] * 1e6, End: window(1)[1] * 1e6,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")}}); err == nil {
		t.Fatal("log read of a block without files: no error")
	}
	if got, err := samplesIn(ctx, r2, window(2)); err != nil || !slices.Equal(got, want[2]) {
		t.Fatalf("block 2 beside the broken one: %d samples, %v", len(got), err)
	}
}

// gatedBucket holds every Get of a store file until open is closed, and
// counts them.
type gatedBucket struct {
	Bucket
	open  chan struct{}
	mu    sync.Mutex
	store int
}

func (g *gatedBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if strings.Contains(name, "/"+storeDir+"/") {
		g.mu.Lock()
		g.store++
		g.mu.Unlock()
		<-g.open
	}
	return g.Bucket.Get(ctx, name)
}

// TestReaderSingleflight: concurrent reads of one missing block download
// it once, and a read that gives up does not stop the download for the
// others.
func TestReaderSingleflight(t *testing.T) {
	ctx := context.Background()
	fsb, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000)
	m := testBlock(t, fsb, 0, 0, base, base+60_000)
	bucket := &gatedBucket{Bucket: fsb, open: make(chan struct{})}
	r := lazyReader(t, bucket, -1)

	quit, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { _, err := samplesIn(quit, r, [2]int64{base, base + 60_000}); gaveUp <- err }()
	const readers = 8
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			rows, err := samplesIn(ctx, r, [2]int64{base, base + 60_000})
			if err == nil && len(rows) < 180 {
				err = fmt.Errorf("%d samples, want at least 180", len(rows))
			}
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond) // let them queue on the download
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a cancelled read waiting for a download: no error")
	}
	close(bucket.open)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if downloads(r) != 1 || bucket.store != len(m.Files) {
		t.Fatalf("%d downloads, %d store files read; want 1, %d", downloads(r), bucket.store, len(m.Files))
	}
}

// traceBlock uploads a block of partition p at offset first holding
// spans, with a trace-ID filter when filter is set.
func traceBlock(t *testing.T, bucket Bucket, p int32, first int64, filter bool, spans ...func() (labels.Labels, traceentry.Span)) Meta {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	sub, err := storage.OpenSubstrate(ctx, dir, blockStore(storage.DefaultOptions(), nil))
	if err != nil {
		t.Fatal(err)
	}
	m := Meta{Version: MetaVersion, ID: BlockID(p, first), Partition: p, Offsets: OffsetRange{Start: first, End: first + 1},
		MinTime: math.MaxInt64, MaxTime: math.MinInt64, Compaction: Compaction{Level: 1}, Created: time.Now().UTC()}
	var batch []tracestore.ResourceSpans
	for _, f := range spans {
		ls, sp := f()
		batch = append(batch, tracestoreResource(ls, sp))
		m.MinTime, m.MaxTime = min(m.MinTime, sp.StartUnixNano/1e6), max(m.MaxTime, sp.EndUnixNano/1e6)
		m.Stats.Spans++
	}
	if _, err := sub.Traces().Push(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ids := ""
	if filter {
		ids = traceIDsPath(dir)
		if m.TraceIDs, err = writeTraceIDs(ctx, sub, ids); err != nil {
			t.Fatal(err)
		}
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := upload(ctx, bucket, dir, &m, ids); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReaderTracesDownloadHolders: a trace by ID, bounded or not,
// downloads only the blocks whose trace-ID filter holds it; a search
// downloads the blocks of its range, then for each trace found only the
// other blocks holding it; a block without a filter (built before them)
// is read as one that may hold any trace.
func TestReaderTracesDownloadHolders(t *testing.T) {
	ctx := context.Background()
	bucket, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-24 * time.Hour).Truncate(time.Hour)
	s := func(tr, n byte, svc string, at time.Time) func() (labels.Labels, traceentry.Span) {
		return func() (labels.Labels, traceentry.Span) { return testSpan(tr, n, svc, at) }
	}
	// Trace 1 has spans in blocks a and b of partition 0, hours apart (a
	// long trace); c, d and e (partition 1) hold other traces; f holds no
	// spans at all.
	a := traceBlock(t, bucket, 0, 0, true, s(1, 1, "router", t0), s(2, 1, "router", t0.Add(time.Second)))
	b := traceBlock(t, bucket, 0, 10, true, s(1, 2, "worker", t0.Add(3*time.Hour)))
	traceBlock(t, bucket, 0, 20, true, s(3, 1, "router", t0.Add(6*time.Hour)))
	traceBlock(t, bucket, 0, 30, true, s(4, 1, "router", t0.Add(9*time.Hour)))
	traceBlock(t, bucket, 1, 0, true, s(5, 1, "router", t0.Add(time.Minute)))
	traceBlock(t, bucket, 0, 40, true)
	_, sp1 := s(1, 1, "router", t0)()
	trace1 := []string{}
	for _, f := range []func() (labels.Labels, traceentry.Span){s(1, 1, "router", t0), s(1, 2, "worker", t0.Add(3*time.Hour))} {
		_, sp := f()
		trace1 = append(trace1, spanRows(&traceentry.Trace{TraceID: sp.TraceID, Spans: []traceentry.Span{sp}})...)
	}
	slices.Sort(trace1)
	byID := func(t *testing.T, r *Reader, start, end int64) {
		t.Helper()
		tr, err := r.FindTraceByID(ctx, sp1.TraceID, start, end)
		if err != nil || tr == nil {
			t.Fatalf("trace 1 by ID: %v, %v", tr, err)
		}
		if got := spanRows(tr); !slices.Equal(got, trace1) {
			t.Fatalf("trace 1 by ID:\n got %q\nwant %q", got, trace1)
		}
	}
	search := func(t *testing.T, r *Reader) {
		t.Helper()
		it, err := r.Fetch(ctx, traceentry.FetchRequest{Start: t0.Add(-time.Minute).UnixNano(), End: t0.Add(30 * time.Second).UnixNano()})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		found := map[traceentry.TraceID][]string{}
		for it.Next() {
			found[it.At().TraceID] = spanRows(it.At())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if len(found) != 3 || !slices.Equal(found[sp1.TraceID], trace1) {
			t.Fatalf("search of block a's range: %q; want traces 1 (whole), 2 and 5", found)
		}
	}

	t.Run("by ID unbounded", func(t *testing.T) {
		r := lazyReader(t, bucket, -1)
		byID(t, r, 0, 0)
		if downloads(r) != 2 || !downloaded(r, a.ID) || !downloaded(r, b.ID) {
			t.Fatalf("%d downloads; want 2 (blocks a and b)", downloads(r))
		}
	})
	t.Run("by ID bounded", func(t *testing.T) {
		r := lazyReader(t, bucket, -1)
		tr, err := r.FindTraceByID(ctx, sp1.TraceID, t0.Add(2*time.Hour).UnixNano(), t0.Add(4*time.Hour).UnixNano())
		if err != nil || tr == nil || len(tr.Spans) != 1 || downloads(r) != 1 {
			t.Fatalf("trace 1 in b's range: %v, %v, %d downloads; want its span of b, 1 download", tr, err, downloads(r))
		}
	})
	t.Run("search", func(t *testing.T) {
		r := lazyReader(t, bucket, -1)
		search(t, r)
		// a and e overlap the range; b holds the rest of trace 1.
		if downloads(r) != 3 || !downloaded(r, b.ID) {
			t.Fatalf("%d downloads; want 3 (a, e, and b for trace 1)", downloads(r))
		}
		if _, _, err := r.TagNames(ctx, t0.Add(8*time.Hour).UnixNano(), t0.Add(10*time.Hour).UnixNano()); err != nil || downloads(r) != 4 {
			t.Fatalf("tag names of d's range: %v, %d downloads; want 4", err, downloads(r))
		}
	})
	t.Run("without filter", func(t *testing.T) {
		// Block b as a weft before filters built it.
		old := b
		old.TraceIDs = nil
		if err := bucket.Delete(ctx, Prefix+b.ID+"/"+TraceIDsName); err != nil {
			t.Fatal(err)
		}
		mb, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		if err := bucket.Upload(ctx, metaPath(b.ID), bytes.NewReader(mb), int64(len(mb))); err != nil {
			t.Fatal(err)
		}
		r := lazyReader(t, bucket, -1)
		byID(t, r, 0, 0)
		if downloads(r) != 2 || !downloaded(r, b.ID) {
			t.Fatalf("%d downloads; want 2 (a, and b that may hold any trace)", downloads(r))
		}
		r = lazyReader(t, bucket, -1)
		search(t, r)
		if downloads(r) != 3 {
			t.Fatalf("search: %d downloads; want 3", downloads(r))
		}
	})
}

// TestTraceIDFilter: the filter holds what was added, rarely anything
// else, and its encoding round-trips and refuses corruption.
func TestTraceIDFilter(t *testing.T) {
	f := newTraceIDFilter(1000)
	for i := range 1000 {
		f.add(traceentry.TraceID{0: byte(i), 1: byte(i >> 8), 15: 1})
	}
	g, err := decodeTraceIDFilter(f.appendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	falsePos := 0
	for i := range 2000 {
		id := traceentry.TraceID{0: byte(i), 1: byte(i >> 8), 15: 1}
		if i < 1000 && !g.mayHold(id) {
			t.Fatalf("trace %d added, not held", i)
		}
		if i >= 1000 && g.mayHold(id) {
			falsePos++
		}
	}
	if falsePos > 30 {
		t.Fatalf("%d false positives of 1000; want about 5", falsePos)
	}
	if empty := newTraceIDFilter(0); empty.mayHold(traceentry.TraceID{1}) {
		t.Fatal("an empty filter holds a trace")
	}
	if (*traceIDFilter)(nil).mayHold(traceentry.TraceID{1}) != true {
		t.Fatal("no filter must hold any trace")
	}
	enc := f.appendTo(nil)
	for _, bad := range [][]byte{nil, enc[:20], append(slices.Clone(enc[:len(enc)-1]), enc[len(enc)-1]^1)} {
		if _, err := decodeTraceIDFilter(bad); err == nil {
			t.Fatalf("decoded %d corrupt bytes", len(bad))
		}
	}
}

func FuzzDecodeTraceIDFilter(f *testing.F) {
	f.Add(newTraceIDFilter(3).appendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if g, err := decodeTraceIDFilter(b); err == nil {
			g.mayHold(traceentry.TraceID{1})
		}
	})
}

// TestReaderCompactedAway: a read of a listed block whose files were
// deleted since the last sync (compacted into a block the reader has not
// listed yet) syncs and answers from the merged block.
func TestReaderCompactedAway(t *testing.T) {
	ctx := context.Background()
	bucket, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const base = int64(1_700_000_000_000)
	src := testBlock(t, bucket, 0, 0, base, base+60_000)
	r := lazyReader(t, bucket, -1)
	want, err := samplesIn(ctx, r, [2]int64{base, base + 60_000})
	if err != nil || len(want) == 0 {
		t.Fatalf("source block: %d samples, %v", len(want), err)
	}
	r = lazyReader(t, bucket, -1) // lists src, has downloaded nothing
	merged := testBlock(t, bucket, 0, 100, base, base+60_000)
	merged.Compaction = Compaction{Level: 2, Sources: []string{src.ID}}
	mb, err := json.Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	if err := bucket.Upload(ctx, metaPath(merged.ID), bytes.NewReader(mb), int64(len(mb))); err != nil {
		t.Fatal(err)
	}
	if err := deleteBlock(ctx, bucket, &src); err != nil {
		t.Fatal(err)
	}
	got, err := samplesIn(ctx, r, [2]int64{base, base + 60_000})
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after the source was compacted away: %d samples, %v; want %d", len(got), err, len(want))
	}
	if ids := r.Blocks(); len(ids) != 1 || ids[0].ID != merged.ID || downloads(r) != 1 {
		t.Fatalf("blocks %+v, %d downloads; want the merged block alone, downloaded once", ids, downloads(r))
	}
}

// TestReaderConcurrentChurn: reads of random windows under a bound that
// holds one block, while the bucket is synced, answer what an unbounded
// reader answers (run with -race).
func TestReaderConcurrentChurn(t *testing.T) {
	ctx := context.Background()
	bucket, _, largest := fourBlocks(t)
	var err error
	window := func(i int) [2]int64 { return [2]int64{base + int64(i)*width + 1, base + int64(i+1)*width - 1} }
	full := lazyReader(t, bucket, -1)
	want := make([][]string, 4)
	for i := range want {
		if want[i], err = samplesIn(ctx, full, window(i)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: 5 * time.Millisecond, MaxCacheBytes: largest}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for n := range 12 {
				i := (g + n) % 4
				got, err := samplesIn(ctx, r, window(i))
				if err == nil && !slices.Equal(got, want[i]) {
					err = fmt.Errorf("block %d: %d samples, want %d", i, len(got), len(want[i]))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if evictions(r) == 0 {
		t.Fatal("no evictions under a one-block bound")
	}
	r.Stop()
	if r.CacheBytes() != 0 {
		t.Fatalf("%d bytes cached after Stop", r.CacheBytes())
	}
}

// TestReaderPrefetch: after Start the most recent blocks that fit are
// downloaded without evicting, the oldest of them first in LRU order; a
// sync prefetches nothing when the cache has no room.
func TestReaderPrefetch(t *testing.T) {
	ctx := context.Background()
	bucket, metas, largest := fourBlocks(t)
	var err error
	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour, MaxCacheBytes: 2*largest + largest/2}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for downloads(r) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d blocks prefetched, want 2", downloads(r))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !downloaded(r, metas[3].ID) || !downloaded(r, metas[2].ID) || downloaded(r, metas[1].ID) || evictions(r) != 0 {
		t.Fatalf("prefetched: %v %v %v %v, %d evictions; want the two most recent blocks, none evicted",
			downloaded(r, metas[0].ID), downloaded(r, metas[1].ID), downloaded(r, metas[2].ID), downloaded(r, metas[3].ID), evictions(r))
	}
	if _, err := samplesIn(ctx, r, [2]int64{base + 1, base + width - 1}); err != nil {
		t.Fatal(err)
	}
	if !downloaded(r, metas[0].ID) || downloaded(r, metas[2].ID) || !downloaded(r, metas[3].ID) || evictions(r) != 1 {
		t.Fatalf("after reading block 0: block 2 (the older prefetched) should be evicted; %d evictions", evictions(r))
	}
	testBlock(t, bucket, 0, 40, base+4*width, base+5*width)
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Blocks()); n != 5 || downloads(r) != 3 || evictions(r) != 1 {
		t.Fatalf("sync with a full cache: %d blocks, %d downloads, %d evictions; want 5, 3, 1", n, downloads(r), evictions(r))
	}
}

// Four consecutive blocks of partition 0 (fourBlocks), each width ms wide
// from base.
const base, width = int64(1_700_000_000_000), int64(60_000)

// fourBlocks uploads four consecutive test blocks of partition 0 to a new
// filesystem bucket; largest is the largest block's size.
func fourBlocks(t *testing.T) (bucket Bucket, metas []Meta, largest int64) {
	t.Helper()
	b, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(4) {
		m := testBlock(t, b, 0, i*10, base+i*width, base+(i+1)*width)
		metas = append(metas, m)
		largest = max(largest, m.Stats.Bytes)
	}
	return b, metas, largest
}
