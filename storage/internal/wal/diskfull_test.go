package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// fullDisk is a segment file that accepts writes up to its room and then
// fails with ENOSPC after a partial write, as write(2) on a full disk does.
type fullDisk struct {
	*os.File
	mu   *sync.Mutex
	room *int64
}

func (f fullDisk) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int64(len(p)) <= *f.room {
		*f.room -= int64(len(p))
		return f.File.Write(p)
	}
	n := int(*f.room)
	*f.room = 0
	m, err := f.File.Write(p[:n])
	if err != nil {
		return m, err
	}
	return m, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func withFullDisk(w *WAL, room *int64) *sync.Mutex {
	var mu sync.Mutex
	w.wrap = func(f *os.File) segmentFile { return fullDisk{File: f, mu: &mu, room: room} }
	return &mu
}

func logOne(w *WAL, rec string) error {
	seq, err := w.Log(AppendRecord(nil, []byte(rec)))
	if err != nil {
		return err
	}
	return w.Sync(seq)
}

// TestWriteErrorNotSticky: a write that fails for a full disk fails the
// waiting Sync with a retryable *WriteError, keeps the file a prefix of the
// log (no torn record before good ones), and once there is room again the
// WAL writes the buffered bytes and every later batch by itself.
func TestWriteErrorNotSticky(t *testing.T) {
	dir := t.TempDir()
	room := int64(1 << 30)
	w, err := Open(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	mu := withFullDisk(w, &room)
	if err := w.Replay(func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	w.Start()
	if err := logOne(w, "a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	room = 5 // part of the next record's header
	mu.Unlock()
	err = logOne(w, "b")
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("sync on a full disk: %v, want a *WriteError wrapping ENOSPC", err)
	}
	if w.Err() != nil {
		t.Fatalf("a write error must not be sticky: Err() = %v", w.Err())
	}
	// What is on disk now is a prefix: replaying a copy finds "a" and a
	// torn tail, never a corruption.
	cp := t.TempDir()
	copySegments(t, dir, cp)
	w2, err := Open(cp, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := w2.Replay(func(r []byte) error { got = append(got, string(r)); return nil }); err != nil {
		t.Fatalf("replay of the disk-full state: %v", err)
	}
	_ = w2.Close()
	if fmt.Sprint(got) != "[a]" {
		t.Fatalf("disk-full state replays %q, want [a]", got)
	}

	mu.Lock()
	room = 1 << 30
	mu.Unlock()
	if err := logOne(w, "c"); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, recs := openStarted(t, dir, DefaultOptions())
	// "b" was refused to its caller but stays in order: a retry of it is a
	// duplicate the store drops.
	if fmt.Sprint(asStrings(recs)) != "[a b c]" {
		t.Fatalf("replayed %q, want [a b c]", recs)
	}
}

// TestLogRefusesPastPendingLimit: while writes fail, Log buffers at most
// maxPendingBytes; LogForce always buffers.
func TestLogRefusesPastPendingLimit(t *testing.T) {
	room := int64(0)
	w, err := Open(t.TempDir(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	withFullDisk(w, &room)
	if err := w.Replay(func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	w.Start()
	defer w.Close()
	if err := logOne(w, "x"); err == nil {
		t.Fatal("sync succeeded on a full disk")
	}
	big := AppendRecord(nil, make([]byte, maxPendingBytes))
	if _, err := w.Log(big); err == nil {
		t.Fatal("Log buffered past maxPendingBytes while writes fail")
	} else if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("refusal %v does not name the cause", err)
	}
	if _, err := w.LogForce(AppendRecord(nil, []byte("series"))); err != nil {
		t.Fatalf("LogForce: %v", err)
	}
}

func copySegments(tb testing.TB, from, to string) {
	tb.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
