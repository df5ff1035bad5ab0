package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

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
		opts.WALSegmentSize = 4 << 10
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
