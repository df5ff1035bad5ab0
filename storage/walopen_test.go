package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/internal/record"
	"github.com/weftdb/weft/storage/internal/wal"
)

func walSegments(tb testing.TB, dir string) []string {
	tb.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "0*"))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(segs)
	return segs
}

// TestOpenWALDamage checks the two replay outcomes at the store level: a torn
// tail of the last segment loses only the torn record, damage in an earlier
// segment refuses to open and names the segment and offset.
func TestOpenWALDamage(t *testing.T) {
	open := func(dir string) (*DB, error) {
		opts := testOptions()
		opts.WALSegmentSize = 1 << 10 // several segments for 20 series x 50 samples
		return Open(context.Background(), dir, opts)
	}
	write := func(t *testing.T) string {
		dir := t.TempDir()
		db, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		fill(t, db, 20, 50, 0)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("torn tail", func(t *testing.T) {
		dir := write(t)
		segs := walSegments(t, dir)
		var last string
		for _, s := range segs {
			if st, _ := os.Stat(s); st.Size() > 0 {
				last = s
			}
		}
		f, err := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0, 0, 1, 0, 1, 2}) // half a record header and payload
		f.Close()
		db, err := open(dir)
		if err != nil {
			t.Fatalf("open with torn tail: %v", err)
		}
		defer db.Close()
		checkFill(t, db, 20, 50, 0)
	})
	t.Run("corrupt middle", func(t *testing.T) {
		dir := write(t)
		segs := walSegments(t, dir)
		if len(segs) < 3 {
			t.Fatalf("want several segments, got %d", len(segs))
		}
		b, err := os.ReadFile(segs[1])
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x55
		if err := os.WriteFile(segs[1], b, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := open(dir)
		var ce *wal.CorruptionError
		if !errors.As(err, &ce) || ce.Segment != filepath.Base(segs[1]) {
			if db != nil {
				db.Close()
			}
			t.Fatalf("open err = %v, want corruption in %s", err, filepath.Base(segs[1]))
		}
	})
}

// TestOpenReplaysEverySamplesRecord checks that a store replays float
// samples from both record types: the legacy one (type 2, what commits wrote
// before the compact record and what checkpoints write) and the compact one
// (type 8), so stores written by earlier versions open with their data.
func TestOpenReplaysEverySamplesRecord(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	a, b := labels.FromStrings("__name__", "m", "i", "a"), labels.FromStrings("__name__", "m", "i", "b")
	app := db.Appender(context.Background())
	ra, err := app.Append(0, a, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := app.Append(0, b, 1000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Records as an earlier version (type 2) and this one (type 8) write
	// them, appended to the newest segment.
	var frame []byte
	frame = wal.AppendRecord(frame, record.AppendSamples(nil, []record.Sample{
		{ID: uint64(ra), T: 2000, V: 3}, {ID: uint64(rb), ST: 500, T: 2000, V: 4},
	}))
	frame = wal.AppendRecord(frame, record.AppendCompactSamples(nil, []record.Sample{
		{ID: uint64(ra), T: 3000, V: 5}, {ID: uint64(rb), ST: 500, T: 3000, V: 6},
	}))
	segs := walSegments(t, dir)
	f, err := os.OpenFile(segs[len(segs)-1], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(frame); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(context.Background(), dir, testOptions())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	res := queryAll(t, db, 0, 10_000)
	want := map[string][]got{
		a.String(): {{T: 1000, V: 1}, {T: 2000, V: 3}, {T: 3000, V: 5}},
		b.String(): {{T: 1000, V: 2}, {ST: 500, T: 2000, V: 4}, {ST: 500, T: 3000, V: 6}},
	}
	requireSamples(t, res, want)
}
