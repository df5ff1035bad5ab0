package pebbleguard

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestFatalfParksAndReportsOnce(t *testing.T) {
	var fatals, nospace atomic.Int32
	var got atomic.Pointer[error]
	l := New(Options{
		OnFatal:   func(err error) { fatals.Add(1); got.Store(&err) },
		OnNoSpace: func() { nospace.Add(1) },
	})
	parked := make(chan struct{}, 2)
	release := make(chan struct{})
	l.park = func() { parked <- struct{}{}; <-release }
	returned := make(chan struct{}, 2)
	for range 2 {
		go func() {
			l.Fatalf("pebble: fatal commit error: %v", errors.New("write 000004.log: no space left on device"))
			returned <- struct{}{}
		}()
	}
	for range 2 {
		select {
		case <-parked:
		case <-time.After(5 * time.Second):
			t.Fatal("Fatalf did not park")
		}
	}
	select {
	case <-returned:
		t.Fatal("Fatalf returned before the park ended")
	default:
	}
	if fatals.Load() != 1 {
		t.Fatalf("OnFatal called %d times, want once", fatals.Load())
	}
	if nospace.Load() == 0 {
		t.Fatal("a fatal full disk was not reported to OnNoSpace")
	}
	err := l.Err()
	if !errors.Is(err, ErrFailed) || err.Error() != "storage failed: pebble: fatal commit error: write 000004.log: no space left on device" {
		t.Fatalf("Err() = %v", err)
	}
	if p := got.Load(); p == nil || *p != err {
		t.Fatal("OnFatal got a different error than Err reports")
	}
	close(release)
}

func TestErrorfReportsNoSpace(t *testing.T) {
	var nospace atomic.Int32
	l := New(Options{OnNoSpace: func() { nospace.Add(1) }})
	l.Errorf("background error: %s", "flush: compaction: boom")
	if nospace.Load() != 0 {
		t.Fatal("an unrelated error counted as a full disk")
	}
	l.Errorf("background error: %s", "write 000009.sst: no space left on device")
	if nospace.Load() != 1 {
		t.Fatal("a full disk in Errorf was not reported")
	}
	if l.Err() != nil {
		t.Fatal("Errorf made the store failed")
	}
	l.Infof("dropped %d", 1)
}

// TestCommitTurnsPanicIntoFatal: Pebble panics inside Batch.Commit where it
// cannot go on (a failed write to its WAL; here, more simply, a closed
// database). Commit returns the failure as a *FatalError and reports it,
// instead of letting the panic unwind through the caller.
func TestCommitTurnsPanicIntoFatal(t *testing.T) {
	var fatals atomic.Int32
	l := New(Options{OnFatal: func(error) { fatals.Add(1) }})
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: l})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	if err := b.Set([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(b, pebble.Sync); err != nil {
		t.Fatalf("commit on an open database: %v", err)
	}
	if fatals.Load() != 0 {
		t.Fatal("a good commit was reported fatal")
	}
	b = db.NewBatch()
	if err := b.Set([]byte("k2"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	err = l.Commit(b, pebble.Sync)
	var fe *FatalError
	if !errors.As(err, &fe) || !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("commit that panicked: %v, want a *FatalError naming the cause", err)
	}
	if fatals.Load() != 1 || l.Err() != error(fe) {
		t.Fatalf("OnFatal called %d times, Err() = %v; want once, the same error", fatals.Load(), l.Err())
	}
}
