package storage

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weftdb/weft/storage/diskspace"
	"github.com/weftdb/weft/storage/internal/pebbleguard"
	"github.com/weftdb/weft/storage/internal/wal"
)

// Storage refusals. Every write a store refuses for a condition that passes
// matches ErrUnavailable (and its cause: ErrLowDiskSpace, ErrStoreFailed or
// a failed WAL write); the API answers 503 with Retry-After and the reason.
var (
	// ErrUnavailable: the store cannot take writes now; retry later.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrLowDiskSpace: the data directory's filesystem is below its free
	// space reserve (a *diskspace.LowSpaceError has the figures). Writes
	// resume by themselves once space is freed.
	ErrLowDiskSpace = diskspace.ErrLowSpace
	// ErrStoreFailed: Pebble or the WAL reported an error it cannot go on
	// from (a failed fsync, a failed MANIFEST write); the process must
	// restart, and Substrate.Failed is closed.
	ErrStoreFailed = pebbleguard.ErrFailed
)

// unavailableError marks a cause as ErrUnavailable; its message is the
// cause's.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }

func (e *unavailableError) Unwrap() error { return e.err }

func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return &unavailableError{err}
}

// Memtable sizing against the filesystem: Pebble preallocates 110% of the
// memtable size for each WAL file and keeps the old one until its memtable
// is flushed, so on a small filesystem a 32 MiB memtable alone would take
// more than the reserve. memTableDiskFraction keeps the memtable at 1/16 of
// the filesystem, between Pebble's 4 MiB default and pebbleMemTableSize.
const (
	memTableDiskFraction = 16
	minMemTableSize      = 4 << 20
)

// openGuards builds the free-space guard, Pebble's logger and filesystem for
// the substrate.
func (s *Substrate) openGuards() (vfs.FS, int, error) {
	g, err := diskspace.New(s.dir, diskspace.Options{
		Reserve: s.opts.DiskReserve,
		Logger:  s.log.With("component", "diskspace"),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("disk space guard: %w", err)
	}
	s.guard = g
	s.failed = make(chan struct{})
	s.plog = pebbleguard.New(pebbleguard.Options{
		Logger:    s.log.With("component", "pebble"),
		OnNoSpace: g.NoSpace,
		OnFatal:   s.fail,
	})
	memTable := pebbleMemTableSize
	if st := g.Status(); st.Total > 0 {
		memTable = min(max(int(st.Total/memTableDiskFraction), minMemTableSize), pebbleMemTableSize)
	}
	// An ENOSPC inside Pebble releases the ballast, then Pebble retries
	// the write once (vfs.OnDiskFull).
	return vfs.OnDiskFull(wrapPebbleFS(vfs.Default), g.NoSpace), memTable, nil
}

// wrapPebbleFS wraps the filesystem Pebble writes through; tests replace it
// to inject write errors.
var wrapPebbleFS = func(fs vfs.FS) vfs.FS { return fs }

// fail marks the store failed (once): writes are refused with
// ErrStoreFailed from now on and Failed is closed.
func (s *Substrate) fail(err error) {
	s.failOnce.Do(func() {
		s.failErr.Store(&err)
		s.log.Error("storage_failed", "err", err)
		close(s.failed)
	})
}

// commit is the index's Options.Commit, for every store on the database:
// through Pebble's guard, with a store failure marked ErrUnavailable (the
// API answers 503 with the reason).
func (s *Substrate) commit(b *pebble.Batch, o *pebble.WriteOptions) error {
	err := s.plog.Commit(b, o)
	if errors.Is(err, ErrStoreFailed) {
		return unavailable(err)
	}
	return err
}

// Failed is closed once the store cannot go on (ErrStoreFailed): the owner
// should shut the process down; Close then closes only what cannot hang.
func (s *Substrate) Failed() <-chan struct{} { return s.failed }

// Health returns why the store refuses writes, or nil: a failed store
// (ErrStoreFailed) or a filesystem below its reserve (ErrLowDiskSpace).
// Both match ErrUnavailable. Reads keep working either way.
func (s *Substrate) Health() error {
	if s == nil {
		return nil
	}
	if p := s.failErr.Load(); p != nil {
		return unavailable(*p)
	}
	if s.guard == nil {
		return nil
	}
	return unavailable(s.guard.Check())
}

// DiskStatus returns the guard's latest free-space reading.
func (s *Substrate) DiskStatus() diskspace.Status { return s.guard.Status() }

// noteWriteError looks at an error of a write to the metric WAL: a sticky
// WAL error fails the store, a full disk releases the ballast. It returns
// err marked ErrUnavailable when a retry can succeed.
func (s *Substrate) noteWriteError(w *wal.WAL, err error) error {
	if werr := w.Err(); werr != nil {
		s.fail(fmt.Errorf("%w: metric wal: %w", ErrStoreFailed, werr))
		return unavailable(err)
	}
	var we *wal.WriteError
	if errors.As(err, &we) {
		s.guard.Note(err)
		return unavailable(err)
	}
	return err
}

// closeFailed is Close for a failed store: Pebble's goroutines may be
// parked inside it (pebbleguard), so nothing that waits for them runs. Only
// the metric WAL is flushed and the directory released; everything
// acknowledged is durable already, and the next start replays it.
func (s *Substrate) closeFailed() error {
	var errs []error
	if s.metrics != nil {
		if err := s.metrics.wal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close wal: %w", err))
		}
	}
	if s.lock != nil {
		errs = append(errs, s.lock.release())
		s.lock = nil
	}
	p := s.failErr.Load()
	errs = append(errs, *p)
	return errors.Join(errs...)
}
