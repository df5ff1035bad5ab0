// Package pebbleguard is the logger weft gives Pebble. Pebble calls
// Logger.Fatalf where it cannot go on (a WAL or MANIFEST write that failed,
// for example on a full disk) and expects it not to return: the default
// logger exits the process, and weft's used to panic, which took the whole
// server down from inside a request. This logger instead records the
// failure, tells its owner (which refuses writes, reports not ready and
// shuts the process down with its own exit code) and parks the calling
// goroutine for good, so that Pebble never runs on past a fatal error.
//
// Pebble does not report every such failure through Fatalf: a failed write
// to its own WAL panics inside Batch.Commit, with its commit pipeline's lock
// still held. Commit turns that panic into the same fatal failure.
//
// Errorf messages are logged; one that says the disk is full is also
// reported to the owner (which releases its ballast).
package pebbleguard

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// ErrFailed matches (errors.Is) every *FatalError.
var ErrFailed = errors.New("storage failed")

// FatalError is the failure Pebble reported through Fatalf.
type FatalError struct{ Msg string }

func (e *FatalError) Error() string {
	if strings.HasPrefix(e.Msg, "pebble") {
		return "storage failed: " + e.Msg
	}
	return "storage failed: pebble: " + e.Msg
}

// Is reports whether target is ErrFailed.
func (e *FatalError) Is(target error) bool { return target == ErrFailed }

// Options configure a Logger.
type Options struct {
	// Logger receives Pebble's errors and the fatal error; nil discards.
	Logger *slog.Logger
	// OnNoSpace is called (at most once per message) when Pebble reports
	// an error that says the disk is full; nil ignores it.
	OnNoSpace func()
	// OnFatal is called once, with the first fatal error, before the
	// goroutine that reported it parks; nil ignores it.
	OnFatal func(error)
}

// Logger implements pebble.Logger. Safe for concurrent use.
type Logger struct {
	opts   Options
	log    *slog.Logger
	failed atomic.Pointer[FatalError]
	once   sync.Once
	// park blocks the goroutine that called Fatalf; tests replace it.
	park func()
}

// New returns a Logger with opts.
func New(opts Options) *Logger {
	l := &Logger{opts: opts, log: opts.Logger, park: func() { select {} }}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l
}

// Infof drops Pebble's informational messages (flushes, compactions).
func (l *Logger) Infof(string, ...any) {}

// Errorf logs a Pebble error (a failed flush or compaction, which Pebble
// retries); a full disk is also reported to OnNoSpace.
func (l *Logger) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble_error", "msg", msg)
	if l.opts.OnNoSpace != nil && isNoSpace(msg) {
		l.opts.OnNoSpace()
	}
}

// Fatalf records the failure, reports it to OnFatal once and parks the
// calling goroutine: it never returns.
func (l *Logger) Fatalf(format string, args ...any) {
	l.fatal(fmt.Sprintf(format, args...))
	l.park()
}

// fatal records the failure msg and reports the first one to OnFatal.
func (l *Logger) fatal(msg string) *FatalError {
	err := &FatalError{Msg: msg}
	if l.failed.CompareAndSwap(nil, err) {
		l.log.Error("pebble_fatal", "msg", msg)
	}
	if isNoSpace(msg) && l.opts.OnNoSpace != nil {
		l.opts.OnNoSpace()
	}
	l.once.Do(func() {
		if l.opts.OnFatal != nil {
			l.opts.OnFatal(l.failed.Load())
		}
	})
	return err
}

// Commit commits b with o. A panic inside Pebble's commit (a failed write
// to Pebble's WAL, which leaves the commit pipeline locked for good) is
// reported like Fatalf and returned as its *FatalError: the batch is not
// committed, the caller answers, and the owner shuts the process down
// (every later commit blocks inside Pebble until then). The calling
// goroutine has unwound out of Pebble, so unlike Fatalf it need not park.
func (l *Logger) Commit(b *pebble.Batch, o *pebble.WriteOptions) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = l.fatal(fmt.Sprintf("pebble: commit: %v", r))
		}
	}()
	return b.Commit(o)
}

// Err returns the first fatal error, or nil.
func (l *Logger) Err() error {
	if e := l.failed.Load(); e != nil {
		return e
	}
	return nil
}

// isNoSpace reports whether a message is about a full disk (Pebble formats
// the error chain; ENOSPC's text is the same on every Unix).
func isNoSpace(msg string) bool { return strings.Contains(msg, "no space left on device") }
