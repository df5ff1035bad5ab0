package storage

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// copyDir copies the regular files under src to dst: the crash image of a
// store whose process dies now (every acknowledged commit is fsynced to the
// WAL; nothing is sealed or checkpointed while it copies).
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatalf("copy %s: %v", src, err)
	}
}

// TestCrashAfterFlushKeepsSamplesOfOldSeries: a checkpoint leaves out the
// records of series with nothing in the head, so after a Flush and a
// restart, samples appended to such a series are in the WAL without a series
// record. A crash must not lose them: Open recreates head entries from the
// index before replaying.
func TestCrashAfterFlushKeepsSamplesOfOldSeries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := testOptions()
	db, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	lss := []labels.Labels{
		labels.FromStrings("__name__", "m", "i", "0"),
		labels.FromStrings("__name__", "m", "i", "1"),
	}
	for k := int64(0); k < 10; k++ {
		for i, ls := range lss {
			mustAppend(t, db, ls, k*step, float64(k+int64(i)))
		}
	}
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for k := int64(10); k < 15; k++ {
		for i, ls := range lss {
			mustAppend(t, db, ls, k*step, float64(k+int64(i)))
		}
	}
	crash := t.TempDir()
	copyDir(t, dir, crash)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, crash, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res := queryAll(t, db, 0, 100*step)
	for i, ls := range lss {
		got := res[ls.String()]
		if len(got) != 15 {
			t.Fatalf("%s: %d samples after crash, want 15", ls, len(got))
		}
		for k, g := range got {
			if g.T != int64(k)*step || g.V != float64(k+i) {
				t.Fatalf("%s sample %d: (%d, %g), want (%d, %d)", ls, k, g.T, g.V, int64(k)*step, k+i)
			}
		}
	}
}
