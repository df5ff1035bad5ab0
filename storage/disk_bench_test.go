package storage

import (
	"context"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// Disk footprint after compaction, weft beside Prometheus' TSDB on the same
// generated GPU telemetry (issue 2's target: weft's whole data directory at
// most 0.5x Prometheus'):
//
//	go test -run '^$' -bench BenchmarkDiskBytesPerSample -benchtime 1x ./storage/
//
// WEFT_DISK_NODES (default 4: 4 nodes x 8 GPUs x 13 metrics, ~420 live
// series plus run churn) and WEFT_DISK_HOURS (default 24) size the data set.

// diskWorkload generates the telemetry of nodes GPU nodes over d.
func diskWorkload(nodes int, d time.Duration) []gputelemetry.Series {
	o := gputelemetry.DefaultOptions()
	o.Nodes = nodes
	o.Duration = d
	return gputelemetry.Generate(o)
}

func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// appendScrapes appends every sample of all to a, one commit per scrape
// interval across all series, in time order as a scraper would.
func appendScrapes(tb testing.TB, a promstorage.Appendable, all []gputelemetry.Series, interval int64) int {
	tb.Helper()
	mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range all {
		if len(s.T) > 0 {
			mint = min(mint, s.T[0])
			maxt = max(maxt, s.T[len(s.T)-1])
		}
	}
	next := make([]int, len(all))
	refs := make([]promstorage.SeriesRef, len(all))
	n := 0
	for w := mint + interval; w-interval <= maxt; w += interval {
		app := a.Appender(context.Background())
		for i, s := range all {
			for ; next[i] < len(s.T) && s.T[next[i]] < w; next[i]++ {
				ref, err := app.Append(refs[i], s.Labels, s.T[next[i]], s.V[next[i]])
				if err != nil {
					tb.Fatalf("append %s@%d: %v", s.Labels, s.T[next[i]], err)
				}
				refs[i] = ref
				n++
			}
		}
		if err := app.Commit(); err != nil {
			tb.Fatalf("commit: %v", err)
		}
	}
	return n
}

// dirUsage sums the sizes of the regular files under dir by category;
// "total" is the sum of apparent sizes, "allocated" of allocated blocks.
func dirUsage(tb testing.TB, dir string, category func(rel string) string) map[string]int64 {
	tb.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[category(filepath.ToSlash(rel))] += info.Size()
		out["total"] += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			out["allocated"] += st.Blocks * 512 // what du counts: preallocation included
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

func weftFileCategory(rel string) string {
	switch {
	case strings.HasPrefix(rel, "wal/"):
		return "wal"
	case strings.HasSuffix(rel, ".sst"):
		return "pebble_sst"
	case strings.HasSuffix(rel, ".log"):
		return "pebble_wal"
	case strings.HasPrefix(rel, "pebble/"):
		return "pebble_other"
	}
	return "other"
}

func promFileCategory(rel string) string {
	switch {
	case strings.HasPrefix(rel, "wal/"):
		return "wal"
	case strings.HasPrefix(rel, "chunks_head/"):
		return "chunks_head"
	case strings.Contains(rel, "/chunks/"):
		return "block_chunks"
	case strings.HasSuffix(rel, "/index"):
		return "block_index"
	}
	return "other"
}

// keyspaceBytes sums key and value lengths per keyspace tag (first key byte)
// as Pebble iterates them: the logical, uncompressed bytes weft stores.
func keyspaceBytes(tb testing.TB, pdb *pebble.DB) (bytes, keys map[byte]int64) {
	tb.Helper()
	bytes, keys = map[byte]int64{}, map[byte]int64{}
	it, err := pdb.NewIter(nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			tb.Fatal(err)
		}
		bytes[k[0]] += int64(len(k) + len(v))
		keys[k[0]]++
	}
	return bytes, keys
}

// diskResult is one store's footprint.
type diskResult struct {
	files      map[string]int64
	chunkBytes int64 // weft: 0x02 keys+values; Prometheus: block chunk files
	// weft only: Pebble's estimate of the on-disk (compressed) bytes of the
	// chunk and index keyspaces.
	chunkDisk, indexDisk uint64
}

// weftDiskRun appends all to a fresh weft store in dir, stops it gracefully
// (Flush, then Compact when compact is set, then Close) and measures it.
func weftDiskRun(tb testing.TB, dir string, all []gputelemetry.Series, interval int64, compact bool) diskResult {
	tb.Helper()
	ctx := context.Background()
	db, err := Open(ctx, dir, Options{CheckpointInterval: -1, Retention: -1, FutureWindow: -1})
	if err != nil {
		tb.Fatal(err)
	}
	appendScrapes(tb, db, all, interval)
	if err := db.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	if compact {
		if err := db.Compact(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	files := dirUsage(tb, dir, weftFileCategory)
	// Reopen (after measuring the directory) to break the bytes down by
	// keyspace as they are at rest.
	db, err = Open(ctx, dir, Options{CheckpointInterval: -1, Retention: -1, FutureWindow: -1})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	bytes, keys := keyspaceBytes(tb, db.pdb)
	chunkDisk, err := db.pdb.EstimateDiskUsage([]byte{tagChunk}, []byte{tagChunk + 1})
	if err != nil {
		tb.Fatal(err)
	}
	indexDisk, err := db.pdb.EstimateDiskUsage([]byte{0x01}, []byte{0x02})
	if err != nil {
		tb.Fatal(err)
	}
	if testing.Verbose() {
		tb.Logf("weft keyspaces (logical key+value bytes, keys): %v, %v; on disk: chunks %d, index %d",
			bytes, keys, chunkDisk, indexDisk)
		tb.Logf("weft pebble metrics:\n%s", db.pdb.Metrics())
	}
	return diskResult{files: files, chunkBytes: bytes[tagChunk], chunkDisk: chunkDisk, indexDisk: indexDisk}
}

// promDiskRun appends all to a fresh Prometheus TSDB in dir and, when
// compact is set, compacts the whole head into one block (the most compact
// state Prometheus reaches: one index for the whole window) and truncates its
// WAL; then it closes it and measures it.
func promDiskRun(tb testing.TB, dir string, all []gputelemetry.Series, interval int64, compact bool) diskResult {
	tb.Helper()
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = 0
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		tb.Fatal(err)
	}
	db.DisableCompactions() // no background compaction racing the manual one
	appendScrapes(tb, db, all, interval)
	if compact {
		h := db.Head()
		if err := db.CompactHead(tsdb.NewRangeHead(h, h.MinTime(), h.MaxTime()+1)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	files := dirUsage(tb, dir, promFileCategory)
	return diskResult{files: files, chunkBytes: files["block_chunks"]}
}

func BenchmarkDiskBytesPerSample(b *testing.B) {
	nodes := envInt(b, "WEFT_DISK_NODES", 4)
	hours := envInt(b, "WEFT_DISK_HOURS", 25)
	all := diskWorkload(nodes, time.Duration(hours)*time.Hour)
	samples := 0
	for _, s := range all {
		samples += len(s.T)
	}
	interval := gputelemetry.DefaultOptions().Interval.Milliseconds()
	for _, mode := range []struct {
		name    string
		compact bool
	}{
		// Issue 2's target state: weft Flush + Compact, Prometheus' head
		// compacted into a block with its WAL truncated.
		{"compacted", true},
		// A graceful stop without compaction (weft Flush + Close,
		// Prometheus Close), as the side-by-side harness measures.
		{"graceful_stop", false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				w := weftDiskRun(b, b.TempDir(), all, interval, mode.compact)
				p := promDiskRun(b, b.TempDir(), all, interval, mode.compact)
				reportDisk(b, w, p, samples)
				b.Logf("%d series, %d samples; weft files %v; prometheus files %v", len(all), samples, w.files, p.files)
			}
		})
	}
}

func reportDisk(b *testing.B, w, p diskResult, samples int) {
	perSample := func(n int64) float64 { return float64(n) / float64(samples) }
	// Prometheus never checkpoints its newest WAL segment (128 MiB), so on
	// a data set this small its WAL keeps every sample; its blocks (chunks
	// + index) are the state it converges to, and the strict comparator:
	// weft's whole directory against them.
	promBlocks := p.files["block_chunks"] + p.files["block_index"]
	b.ReportMetric(perSample(w.files["total"]), "weft_B/sample")
	b.ReportMetric(perSample(w.files["allocated"]), "weft_du_B/sample")
	b.ReportMetric(perSample(w.chunkBytes), "weft_chunk_B/sample")
	b.ReportMetric(perSample(int64(w.chunkDisk)), "weft_chunk_disk_B/sample")
	b.ReportMetric(perSample(int64(w.indexDisk)), "weft_index_disk_B/sample")
	b.ReportMetric(perSample(w.files["wal"]), "weft_wal_B/sample")
	b.ReportMetric(perSample(p.files["total"]), "prom_B/sample")
	b.ReportMetric(perSample(p.files["allocated"]), "prom_du_B/sample")
	b.ReportMetric(float64(w.files["total"])/float64(p.files["total"]), "dir_ratio")
	if promBlocks > 0 {
		b.ReportMetric(perSample(promBlocks), "prom_blocks_B/sample")
		b.ReportMetric(perSample(p.chunkBytes), "prom_chunk_B/sample")
		b.ReportMetric(float64(w.files["total"])/float64(promBlocks), "dir_vs_blocks_ratio")
		b.ReportMetric(float64(w.files["total"])/float64(p.chunkBytes), "dir_vs_chunks_ratio")
		b.ReportMetric(float64(w.chunkBytes)/float64(p.chunkBytes), "chunk_ratio")
	}
	b.ReportMetric(0, "ns/op")
}

// TestDiskRoundTripTelemetry writes generated telemetry, flushes, compacts,
// reopens and reads every sample back through a Querier: values must match
// bit for bit (stale markers included) and timestamps exactly. Partitions
// of 6h over 14h of data exercise both the closed-partition merge and the
// newest partition's re-encode.
func TestDiskRoundTripTelemetry(t *testing.T) {
	o := gputelemetry.DefaultOptions()
	o.Nodes = 1
	o.Duration = 14 * time.Hour
	o.MeanRun = 4 * time.Hour
	all := gputelemetry.Generate(o)
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{CheckpointInterval: -1, Retention: -1, FutureWindow: -1, PartitionDuration: 6 * time.Hour}
	db, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	n := appendScrapes(t, db, all, o.Interval.Milliseconds())
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	read := queryAll(t, db, math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	if len(read) != len(all) {
		t.Fatalf("read %d series, wrote %d", len(read), len(all))
	}
	checked := 0
	for _, s := range all {
		got, ok := read[s.Labels.String()]
		if !ok {
			t.Fatalf("series %s missing", s.Labels)
		}
		if len(got) != len(s.T) {
			t.Fatalf("series %s: read %d samples, wrote %d", s.Labels, len(got), len(s.T))
		}
		for i := range got {
			if got[i].T != s.T[i] || math.Float64bits(got[i].V) != math.Float64bits(s.V[i]) {
				t.Fatalf("series %s sample %d: read (%d, %x), wrote (%d, %x)", s.Labels, i,
					got[i].T, math.Float64bits(got[i].V), s.T[i], math.Float64bits(s.V[i]))
			}
			checked++
		}
	}
	if checked != n {
		t.Fatalf("checked %d samples, appended %d", checked, n)
	}
}
