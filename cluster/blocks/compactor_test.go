package blocks

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// testBlock uploads a level-1 block of partition p holding offsets
// [first, first+10) and record window [wStart, wEnd) (unix ms) with, for
// every second of its window, a sample of three gpu_util series, one of
// a native histogram, and a log line; gpu 0 also repeats its sample at
// wEnd (the next block's first second), as a replayed record would.
func testBlock(t *testing.T, bucket Bucket, p int32, first, wStart, wEnd int64) Meta {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	opts := storage.DefaultOptions()
	opts.RetentionInterval, opts.CheckpointInterval, opts.DiskReserve, opts.Retention = -1, -1, -1, -1
	sub, err := storage.OpenSubstrate(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	app := sub.Metrics().AppenderV2(ctx)
	var stream logstore.PushStream
	stream.Labels = labels.FromStrings("job", "train", "partition", fmt.Sprint(p))
	h := &histogram.Histogram{Count: 3, Sum: 1.5, Schema: 0, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{3}}
	stats := Stats{Records: 10}
	for ts := wStart; ts < wEnd; ts += 1000 {
		for g := range 3 {
			ls := labels.FromStrings("__name__", "gpu_util", "gpu", fmt.Sprint(g), "partition", fmt.Sprint(p))
			if _, err := app.Append(0, ls, 0, ts, float64(ts/1000%97+int64(g)), nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
			stats.Samples++
		}
		if _, err := app.Append(0, labels.FromStrings("__name__", "step_seconds", "partition", fmt.Sprint(p)), 0, ts, 0, h, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		stats.Histograms++
		stream.Entries = append(stream.Entries, logentry.Entry{Timestamp: ts * 1e6, Line: fmt.Sprintf("step at %d", ts)})
		stats.Entries++
	}
	dup := labels.FromStrings("__name__", "gpu_util", "gpu", "0", "partition", fmt.Sprint(p))
	if _, err := app.Append(0, dup, 0, wEnd, float64(wEnd/1000%97), nil, nil, promstorage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	stats.Samples++
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Logs().Push(ctx, []logstore.PushStream{stream}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	m := Meta{Version: MetaVersion, ID: BlockID(p, first), Partition: p, Offsets: OffsetRange{Start: first, End: first + 10},
		Window: TimeRange{Start: wStart, End: wEnd}, MinTime: wStart, MaxTime: wEnd, Stats: stats, Compaction: Compaction{Level: 1}, Created: time.Now().UTC()}
	if err := upload(ctx, bucket, dir, &m, ""); err != nil {
		t.Fatal(err)
	}
	return m
}

// readAll returns every sample (as "labels t v" rows, histograms by their
// count) and every log line the bucket's blocks answer, through a Reader.
func readAll(t *testing.T, bucket Bucket) (samples, lines []string) {
	t.Helper()
	ctx := context.Background()
	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	q, err := r.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				ts, v := it.At()
				samples = append(samples, fmt.Sprintf("%s %d %g", s.Labels(), ts, v))
			case chunkenc.ValHistogram:
				ts, h := it.AtHistogram(nil)
				samples = append(samples, fmt.Sprintf("%s %d h%d/%g", s.Labels(), ts, h.Count, h.Sum))
			default:
				t.Fatalf("value type %v", vt)
			}
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	it, err := r.Select(ctx, logentry.SelectParams{Start: math.MinInt64, End: math.MaxInt64,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.Next() {
		ls, e := it.At()
		lines = append(lines, fmt.Sprintf("%s %d %s", ls, e.Timestamp, e.Line))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return samples, lines
}

// TestCompaction: the blocks of a closed span of one partition become one
// block that answers exactly what they answered (series merged across
// them, the repeated sample once, histograms and log lines kept), the
// sources are deleted, another partition's blocks and a span still open
// are left alone, a second pass does nothing, and a merge whose sources
// were not deleted yet (a compactor that died) is never read twice and is
// cleaned up by the next pass.
func TestCompaction(t *testing.T) {
	ctx := context.Background()
	bucket, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const span = int64(60_000)
	base := (time.Now().Add(-time.Hour).UnixMilli() / span) * span
	var ours []string
	for i := range int64(3) {
		ours = append(ours, testBlock(t, bucket, 0, 10*i, base+20_000*i, base+20_000*(i+1)).ID)
	}
	otherPartition := testBlock(t, bucket, 1, 0, base, base+20_000).ID
	otherPartition2 := testBlock(t, bucket, 1, 10, base+20_000, base+40_000).ID
	openSpan := testBlock(t, bucket, 0, 30, base+span, base+span+20_000).ID
	openSpan2 := testBlock(t, bucket, 0, 40, base+span+20_000, base+span+40_000).ID
	wantSamples, wantLines := readAll(t, bucket)
	if len(wantSamples) == 0 || len(wantLines) == 0 {
		t.Fatal("the test blocks answer nothing")
	}

	now := time.UnixMilli(base + span + 5_000) // the first span closed 5 s ago
	c, err := NewCompactor(CompactorOptions{Partitions: []int32{0}, Ranges: []time.Duration{time.Minute}, Grace: time.Second,
		ScratchDir: t.TempDir(), Now: func() time.Time { return now }}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Compact(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Compact = %d, %v; want 1 block written", n, err)
	}
	ids, err := listBlocks(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	merged := CompactedID(0, 0, 2)
	if want := []string{merged, openSpan, openSpan2, otherPartition, otherPartition2}; !slices.Equal(ids, want) {
		t.Fatalf("blocks after compaction %v, want %v", ids, want)
	}
	m, err := readMeta(ctx, bucket, merged)
	if err != nil {
		t.Fatal(err)
	}
	if m.Compaction.Level != 2 || !slices.Equal(m.Compaction.Sources, ours) || m.Offsets != (OffsetRange{0, 30}) ||
		m.Window != (TimeRange{base, base + span}) || m.MinTime != base || m.MaxTime != base+span || m.Stats.Records != 30 {
		t.Fatalf("merged meta: %+v", m)
	}
	// 3 series × 60 s + gpu 0's repeats of the 20 s and 40 s samples
	// dropped, its repeat of the 60 s one kept: 181 floats.
	if m.Stats.Samples != 181 || m.Stats.Histograms != 60 || m.Stats.Entries != 60 || m.Stats.Series != 4 || m.Stats.Streams != 1 {
		t.Fatalf("merged stats: %+v", m.Stats)
	}
	if files, _ := bucket.List(ctx, Prefix+ours[0]+"/"); len(files) != 0 {
		t.Fatalf("source %s left files: %v", ours[0], files)
	}
	gotSamples, gotLines := readAll(t, bucket)
	if !slices.Equal(gotSamples, wantSamples) {
		t.Fatalf("samples after compaction differ: %d rows, want %d", len(gotSamples), len(wantSamples))
	}
	if !slices.Equal(gotLines, wantLines) {
		t.Fatalf("lines after compaction differ: %d, want %d", len(gotLines), len(wantLines))
	}
	if n, err := c.Compact(ctx); err != nil || n != 0 {
		t.Fatalf("second Compact = %d, %v; want nothing to do", n, err)
	}

	// The open span closes; a compactor merges it and dies before deleting
	// the sources: readers skip them, the next pass deletes them.
	now = time.UnixMilli(base + 2*span + 5_000)
	metas, err := c.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := plan(metas, 2, span, now.UnixMilli()-1000)
	if len(groups) != 1 || len(groups[0]) != 2 {
		t.Fatalf("plan: %v", groups)
	}
	if _, err := c.merge(ctx, groups[0], 2); err != nil {
		t.Fatal(err)
	}
	if s, l := readAll(t, bucket); !slices.Equal(s, wantSamples) || !slices.Equal(l, wantLines) {
		t.Fatalf("with a merged block and its sources both listed: %d samples, %d lines; want %d, %d", len(s), len(l), len(wantSamples), len(wantLines))
	}
	if n, err := c.Compact(ctx); err != nil || n != 0 {
		t.Fatalf("Compact after the cut-short merge = %d, %v", n, err)
	}
	ids, _ = listBlocks(ctx, bucket)
	if want := []string{merged, CompactedID(0, 30, 2), otherPartition, otherPartition2}; !slices.Equal(ids, want) {
		t.Fatalf("blocks after the cleanup %v, want %v", ids, want)
	}
	if p, ok := partitionOfID(CompactedID(7, 30, 2)); !ok || p != 7 {
		t.Fatalf("partitionOfID(compacted) = %d, %v", p, ok)
	}
}
