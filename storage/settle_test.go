package storage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// TestCompactSettlesClosedPartitions checks the on-disk state Compact leaves
// for closed partitions: one block per series, nothing of the replaced short
// chunks left in Pebble's files (on-disk bytes of the range no larger than
// its live keys and values), and no flushed Pebble WAL files kept for reuse.
func TestCompactSettlesClosedPartitions(t *testing.T) {
	o := gputelemetry.DefaultOptions()
	o.Nodes = 1
	o.Duration = 7 * time.Hour
	all := gputelemetry.Generate(o)
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{CheckpointInterval: -1, Retention: -1, FutureWindow: -1, PartitionDuration: 2 * time.Hour}
	db, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	appendScrapes(t, db, all, o.Interval.Milliseconds())
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	parts := db.parts.all()
	if len(parts) < 3 {
		t.Fatalf("want >= 3 partitions over 7h of 2h partitions, got %v", parts)
	}
	for _, p := range parts[:len(parts)-1] {
		lo, hi := appendChunkKey(nil, p, 0, minInt64), appendChunkKey(nil, p+1, 0, minInt64)
		blocks, live := map[uint64]int{}, 0
		it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			_, id, _, good := parseChunkKey(it.Key())
			if !good {
				t.Fatalf("partition %d: bad chunk key %x", p, it.Key())
			}
			blocks[id]++
			live += len(it.Key()) + len(it.Value())
			if v := it.Value(); len(v) == 0 || v[0] != chunkValueColumnar {
				t.Fatalf("partition %d series %d: chunk is not columnar after compaction", p, id)
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		for id, n := range blocks {
			if n != 1 {
				t.Errorf("partition %d series %d: %d blocks, want 1", p, id, n)
			}
		}
		disk, err := db.pdb.EstimateDiskUsage(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if disk > uint64(live) {
			t.Errorf("partition %d: %d bytes on disk for %d bytes of live chunks: replaced chunks not dropped", p, disk, live)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	logs, err := filepath.Glob(filepath.Join(dir, "pebble", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 {
		t.Errorf("pebble WAL files after close: %v, want only the live one", logs)
	}
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 64<<10 {
			t.Errorf("live pebble WAL %s holds %d bytes after Compact flushed", l, fi.Size())
		}
	}
}
