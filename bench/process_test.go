package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestProcReaders(t *testing.T) {
	pid := os.Getpid()
	st, err := ReadProcStatus(pid)
	if err != nil {
		t.Fatal(err)
	}
	if st.RSS <= 0 || st.HWM < st.RSS {
		t.Errorf("status %+v: want 0 < RSS <= HWM", st)
	}
	// Burn a little CPU so the counter cannot be zero.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	_ = x
	c, err := ReadCPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	if c <= 0 {
		t.Errorf("cpu seconds %v, want > 0", c)
	}
	if _, err := ReadCPUSeconds(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]int{"a": 10, "wal/000001": 5000, "wal/000002": 0}
	want := int64(0)
	for name, n := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		want += int64(n)
	}
	// weft's disk ballast is a reserve, not data.
	if err := os.WriteFile(filepath.Join(dir, "disk-ballast"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	alloc, apparent, err := DirSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	if apparent != want {
		t.Errorf("apparent %d, want %d", apparent, want)
	}
	if alloc < 4096 {
		t.Errorf("allocated %d, want at least one block", alloc)
	}
	if a, b, err := DirSize(filepath.Join(dir, "missing")); err != nil || a != 0 || b != 0 {
		t.Errorf("missing dir: %d %d %v", a, b, err)
	}
}
