package pebbleguard

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
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
