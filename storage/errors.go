package storage

import (
	"errors"

	promstorage "github.com/prometheus/prometheus/storage"
)

// weftError is a sentinel that also matches an equivalent Prometheus error,
// so upstream code (scrape loops, remote-write handlers) treats it right.
type weftError struct {
	msg  string
	also error
}

func (e *weftError) Error() string { return e.msg }

// Is reports whether target is the Prometheus equivalent.
func (e *weftError) Is(target error) bool { return e.also != nil && target == e.also }

// Append errors. Each matches (errors.Is) the Prometheus error in its comment.
var (
	// ErrOutOfWindow: older than the series' newest sample minus
	// Options.OutOfOrderWindow, or older than the wall clock minus the
	// metric retention (any series, new ones too). Also
	// storage.ErrTooOldSample.
	ErrOutOfWindow error = &weftError{"sample timestamp out of the out-of-order window", promstorage.ErrTooOldSample}
	// ErrDuplicateSample: same (series, timestamp), different value. Also
	// storage.ErrDuplicateSampleForTimestamp.
	ErrDuplicateSample error = &weftError{"duplicate sample for timestamp with a different value", promstorage.ErrDuplicateSampleForTimestamp}
	// ErrTooFarInFuture: beyond Options.FutureWindow past the wall clock. Also
	// storage.ErrOutOfBounds.
	ErrTooFarInFuture error = &weftError{"sample timestamp too far in the future", promstorage.ErrOutOfBounds}
	// ErrInvalidLabels: empty set, unsorted, duplicate names, empty name or
	// value, or invalid UTF-8.
	ErrInvalidLabels error = &weftError{"invalid label set", nil}
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("storage closed")
)
