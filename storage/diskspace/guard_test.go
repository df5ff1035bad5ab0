package diskspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeFS is a filesystem of total bytes whose free space the test sets; the
// ballast file's bytes count as used while it exists.
type fakeFS struct {
	mu          sync.Mutex
	dir         string
	free, total int64
}

func (f *fakeFS) statFS(dir string) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	used := int64(0)
	if st, err := os.Stat(filepath.Join(f.dir, BallastName)); err == nil {
		used = st.Size()
	}
	return f.free - used, f.total, nil
}

func (f *fakeFS) set(free int64) {
	f.mu.Lock()
	f.free = free
	f.mu.Unlock()
}

func newTestGuard(t *testing.T, free int64) (*Guard, *fakeFS) {
	t.Helper()
	dir := t.TempDir()
	fs := &fakeFS{dir: dir, free: free, total: 1 << 30}
	g, err := New(dir, Options{Reserve: 8 << 20, Ballast: 2 << 20, Refresh: time.Nanosecond, StatFS: fs.statFS})
	if err != nil {
		t.Fatal(err)
	}
	return g, fs
}

func TestGuardRefusesBelowReserveAndResumes(t *testing.T) {
	g, fs := newTestGuard(t, 100<<20)
	if err := g.Check(); err != nil {
		t.Fatalf("plenty of space: %v", err)
	}
	if !g.Status().BallastHeld {
		t.Fatal("no ballast created with room for it")
	}
	fs.set(7 << 20) // below the reserve (the ballast's 2 MiB come off too)
	err := g.Check()
	var le *LowSpaceError
	if !errors.As(err, &le) || !errors.Is(err, ErrLowSpace) {
		t.Fatalf("below the reserve: %v, want a *LowSpaceError", err)
	}
	if le.Reserve != 8<<20 || le.Free >= le.Reserve {
		t.Fatalf("refusal reports free %d reserve %d", le.Free, le.Reserve)
	}
	// Hysteresis: just above the reserve is not enough to resume.
	fs.set(8<<20 + 1<<20)
	if err := g.Check(); err == nil {
		t.Fatal("resumed at the threshold; want hysteresis")
	}
	fs.set(200 << 20)
	if err := g.Check(); err != nil {
		t.Fatalf("space freed: still refusing: %v", err)
	}
	if !g.Status().BallastHeld {
		t.Fatal("ballast not re-created once space returned")
	}
}

func TestGuardReleasesBallast(t *testing.T) {
	for _, tc := range []struct {
		name string
		hit  func(g *Guard, fs *fakeFS)
	}{
		{"enospc", func(g *Guard, _ *fakeFS) {
			if !g.Note(fmt.Errorf("write: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC})) {
				t.Fatal("Note did not recognise ENOSPC")
			}
		}},
		{"below half the reserve", func(g *Guard, fs *fakeFS) {
			fs.set(3 << 20)
			_ = g.Check()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, fs := newTestGuard(t, 100<<20)
			tc.hit(g, fs)
			st := g.Status()
			if st.BallastHeld {
				t.Fatal("ballast still held")
			}
			if _, err := os.Stat(filepath.Join(g.dir, BallastName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("ballast file still there: %v", err)
			}
			if err := g.Check(); err == nil && tc.name != "enospc" {
				t.Fatal("writes admitted below the reserve")
			}
		})
	}
}

func TestGuardNoteIgnoresOtherErrors(t *testing.T) {
	g, _ := newTestGuard(t, 100<<20)
	if g.Note(errors.New("boom")) || g.Note(nil) {
		t.Fatal("Note took a non-ENOSPC error for a full disk")
	}
	if !g.Status().BallastHeld {
		t.Fatal("ballast released for a non-ENOSPC error")
	}
}

func TestGuardDisabled(t *testing.T) {
	g, err := New(t.TempDir(), Options{Reserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	if g.Check() != nil || g.Status().BallastHeld {
		t.Fatal("a disabled guard refuses or holds a ballast")
	}
	var nilGuard *Guard
	if nilGuard.Check() != nil {
		t.Fatal("nil guard refuses")
	}
}

func TestGuardDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ total, reserve int64 }{
		{64 << 20, minReserve},
		{100 << 30, maxReserve},
		{4 << 30, (4 << 30) / defaultReserveFraction},
	} {
		fs := &fakeFS{dir: dir, free: 0, total: tc.total}
		g, err := New(dir, Options{StatFS: fs.statFS})
		if err != nil {
			t.Fatal(err)
		}
		if g.Reserve() != tc.reserve || g.ballast != min(tc.reserve/2, maxBallast) {
			t.Errorf("total %d: reserve %d ballast %d, want %d and half (at most 256 MiB)", tc.total, g.Reserve(), g.ballast, tc.reserve)
		}
	}
}

// TestBallastAllocated: the ballast's blocks are allocated, so deleting it
// frees space.
func TestBallastAllocated(t *testing.T) {
	dir := t.TempDir()
	g, err := New(dir, Options{Reserve: 1 << 20, Ballast: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Status().BallastHeld {
		t.Fatal("no ballast created on the test filesystem")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, BallastName), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 < 1<<20 {
		t.Fatalf("ballast has %d bytes allocated, want 1 MiB", st.Blocks*512)
	}
}
