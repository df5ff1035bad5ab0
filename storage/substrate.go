package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/diskspace"
	"github.com/weftdb/weft/storage/internal/pebbleguard"
	"github.com/weftdb/weft/storage/internal/wal"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Substrate owns everything on disk under one data directory and the signal
// stores built on it:
//
//   - <dir>/pebble: one Pebble database, opened with the index's merge
//     operator, whose keyspaces storage/keyspace assigns;
//   - the stream index over that database, shared by every signal;
//   - <dir>/wal: the metric store's write-ahead log;
//   - the signal stores: metrics (*DB), logs (*logstore.Store), traces
//     (*tracestore.Store);
//   - one retention clock: each signal's data and its index postings are
//     dropped together by wall clock, with a retention per signal.
//
// Adding a signal is adding its store to openSignals. Close closes the stores
// in reverse order, then the index, then Pebble. A Substrate is safe for
// concurrent use.
type Substrate struct {
	dir  string
	opts Options
	log  *slog.Logger
	lock *dirLock

	pdb     *pebble.DB
	ix      *index.Index
	metrics *DB
	logs    *logstore.Store
	traces  *tracestore.Store
	signals []signal // in open order

	// guard refuses writes while the disk is nearly full; plog is
	// Pebble's logger, which fails the store (fail) on a fatal error
	// (health.go).
	guard    *diskspace.Guard
	plog     *pebbleguard.Logger
	failed   chan struct{}
	failOnce sync.Once
	failErr  atomic.Pointer[error]
	// mem refuses new streams past the memory budget (memory.go).
	mem *memoryBudget

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// signal is one signal's store as the substrate drives it.
type signal struct {
	name      string
	kind      index.Kind
	retention time.Duration // negative: keep forever
	// drop deletes the store's data in partitions that end at or before t.
	drop func(ctx context.Context, t time.Time) error
	// flush makes the store's in-memory state durable in its final form
	// (graceful shutdown; everything is durable already).
	flush func(ctx context.Context) error
	close func() error
}

// OpenSubstrate opens or creates the storage in dir: it locks the directory
// (a second weft on the same directory fails with the holder's pid), opens
// Pebble and the index, then each signal store, replaying what each needs.
// The retention loop starts unless opts.RetentionInterval < 0. On error
// everything opened so far is closed again.
func OpenSubstrate(ctx context.Context, dir string, opts Options) (_ *Substrate, err error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	s := &Substrate{dir: dir, opts: opts, log: opts.Logger, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.closeAll())
		}
	}()
	if s.lock, err = lockDir(dir); err != nil {
		return nil, err
	}
	fs, memTable, err := s.openGuards()
	if err != nil {
		return nil, err
	}
	if s.pdb, err = openPebble(filepath.Join(dir, "pebble"), opts.BlockCacheBytes, s.plog, fs, memTable); err != nil {
		return nil, err
	}
	s.mem = newMemoryBudget(opts.MemoryBudget, opts.MemoryInUse)
	s.ix, err = index.Open(s.pdb, index.Options{PartitionDuration: opts.PartitionDuration, Logger: opts.Logger.With("component", "index"), AdmitNew: s.mem.admit, Commit: s.commit, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if err := s.openSignals(ctx); err != nil {
		return nil, err
	}
	if opts.RetentionInterval > 0 {
		s.wg.Add(1)
		go s.retentionLoop()
	}
	return s, nil
}

// openSignals opens every signal store in order; each is registered as soon
// as it is open, so that a failure closes the ones before it.
func (s *Substrate) openSignals(ctx context.Context) error {
	mopts := s.opts
	mopts.Retention = s.opts.retentionOf(index.KindMetric)
	mopts.Logger = s.opts.Logger.With("component", "metrics")
	w, err := wal.Open(filepath.Join(s.dir, "wal"), wal.Options{SegmentSize: mopts.WALSegmentSize, Logger: mopts.Logger, SyncInterval: max(mopts.WALSyncInterval, 0)})
	if err != nil {
		return fmt.Errorf("open wal: %w", err)
	}
	if s.metrics, err = openMetrics(ctx, s, w, mopts); err != nil {
		return errors.Join(fmt.Errorf("open metric store: %w", err), w.Close())
	}
	s.signals = append(s.signals, signal{
		name: "metrics", kind: index.KindMetric, retention: mopts.Retention,
		drop: s.metrics.dropBefore, flush: s.metrics.Flush, close: s.metrics.close,
	})

	lopts := s.opts.Logs
	lopts.PartitionDuration = s.opts.PartitionDuration
	lopts.Logger = s.opts.Logger.With("component", "logs")
	lopts.Now = s.opts.Now
	lopts.Retention = s.opts.retentionOf(index.KindLog)
	lopts.Admit = s.Health
	if s.logs, err = logstore.Open(ctx, s.pdb, s.ix, lopts); err != nil {
		return fmt.Errorf("open log store: %w", err)
	}
	s.signals = append(s.signals, signal{
		name: "logs", kind: index.KindLog, retention: s.opts.retentionOf(index.KindLog),
		drop:  func(ctx context.Context, t time.Time) error { return s.logs.DropBefore(ctx, t.UnixNano()) },
		flush: func(ctx context.Context) error { return s.logs.Seal(ctx, true) },
		close: s.logs.Close,
	})

	topts := s.opts.Traces
	topts.PartitionDuration = s.opts.PartitionDuration
	topts.Logger = s.opts.Logger.With("component", "traces")
	topts.Now = s.opts.Now
	topts.Retention = s.opts.retentionOf(index.KindTrace)
	topts.Admit = s.Health
	if s.traces, err = tracestore.Open(ctx, s.pdb, s.ix, topts); err != nil {
		return fmt.Errorf("open trace store: %w", err)
	}
	s.signals = append(s.signals, signal{
		name: "traces", kind: index.KindTrace, retention: s.opts.retentionOf(index.KindTrace),
		drop:  func(ctx context.Context, t time.Time) error { return s.traces.DropBefore(ctx, t.UnixNano()) },
		flush: func(ctx context.Context) error { return s.traces.Seal(ctx, true) },
		close: s.traces.Close,
	})
	return nil
}

// Metrics returns the metric store. Valid until Close.
func (s *Substrate) Metrics() *DB { return s.metrics }

// Logs returns the log store. Valid until Close.
func (s *Substrate) Logs() *logstore.Store { return s.logs }

// Traces returns the trace store. Valid until Close.
func (s *Substrate) Traces() *tracestore.Store { return s.traces }

// Index returns the stream index shared by every signal. Valid until Close.
func (s *Substrate) Index() *index.Index { return s.ix }

// Dir returns the data directory.
func (s *Substrate) Dir() string { return s.dir }

// Retention returns the effective retention of kind (negative: forever).
func (s *Substrate) Retention(kind index.Kind) time.Duration { return s.opts.retentionOf(kind) }

// ApplyRetention drops, for every signal with a retention, its data and its
// index postings in partitions that end at or before now minus that
// retention; other signals' postings in the same partitions stay. The
// background loop calls it every Options.RetentionInterval.
func (s *Substrate) ApplyRetention(ctx context.Context) error {
	var errs []error
	for _, sig := range s.signals {
		if err := s.applyRetention(ctx, sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Substrate) applyRetention(ctx context.Context, sig signal) error {
	if sig.retention < 0 {
		return nil
	}
	cutoff := s.opts.Now().Add(-sig.retention)
	// Data first: a stream whose postings outlive its data for a moment
	// answers nothing; postings dropped first would hide data still stored.
	if err := sig.drop(ctx, cutoff); err != nil {
		return fmt.Errorf("%s retention: %w", sig.name, err)
	}
	if err := s.ix.DropKindBefore(ctx, sig.kind, cutoff.UnixMilli()); err != nil {
		return fmt.Errorf("%s retention: index: %w", sig.name, err)
	}
	return nil
}

func (s *Substrate) retentionLoop() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	t := time.NewTicker(s.opts.RetentionInterval)
	defer t.Stop()
	for {
		if err := s.ApplyRetention(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("retention_failed", "err", err)
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// Flush makes every store's in-memory state durable in its final form: the
// metric head is sealed into Pebble, log heads into chunks. Everything
// acknowledged is durable without it; a graceful shutdown calls it so that
// the next start has nothing to replay.
func (s *Substrate) Flush(ctx context.Context) error {
	if err := s.Health(); err != nil {
		// Everything is durable already; writing the heads out now could
		// fill the disk or, on a failed store, hang.
		s.log.Warn("flush_skipped", "reason", err)
		return nil
	}
	var errs []error
	for _, sig := range s.signals {
		if err := sig.flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush %s: %w", sig.name, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops the retention loop, closes the signal stores in reverse order
// of opening, then the index, then Pebble, and releases the directory.
// Idempotent: later calls return the first call's result.
func (s *Substrate) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		if s.failErr.Load() != nil {
			s.closeErr = s.closeFailed()
			return
		}
		s.wg.Wait()
		s.closeErr = s.closeAll()
	})
	return s.closeErr
}

// closeAll closes whatever is open, in reverse order of opening.
func (s *Substrate) closeAll() error {
	var errs []error
	for i := len(s.signals) - 1; i >= 0; i-- {
		if err := s.signals[i].close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", s.signals[i].name, err))
		}
	}
	s.signals = nil
	if s.ix != nil {
		if err := s.ix.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close index: %w", err))
		}
		s.ix = nil
	}
	if s.pdb != nil {
		if err := s.pdb.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close pebble: %w", err))
		}
		s.pdb = nil
	}
	if s.lock != nil {
		if err := s.lock.release(); err != nil {
			errs = append(errs, err)
		}
		s.lock = nil
	}
	return errors.Join(errs...)
}
