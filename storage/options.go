package storage

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Tuning constants; each says why it has its value.
const (
	// defaultSamplesPerChunk matches Prometheus: a Gorilla chunk amortises its
	// header over ~120 samples (30 min at 15 s) and stays under ~1 KiB.
	defaultSamplesPerChunk = 120
	// maxChunkBytes cuts a chunk early when values compress badly, keeping the
	// copy a query makes of an open chunk small.
	maxChunkBytes = 1024
	// oooFlushSamples is how many out-of-order samples a series buffers before
	// the next commit merges them into Pebble; late pushes are bursts of a few.
	oooFlushSamples = 64
)

// Options configure the storage: the substrate (OpenSubstrate) and its
// signal stores; the metric store's own settings are the fields from
// OutOfOrderWindow on. Zero fields are replaced by DefaultOptions' values
// except where noted.
type Options struct {
	// Retention is how long every signal keeps its data, by wall clock:
	// whole partitions that end before now minus the retention are dropped,
	// data and index postings together, and metric samples older than that
	// are refused at append. Default 30 days; negative keeps everything.
	Retention time.Duration
	// SignalRetention overrides Retention per signal (zero fields inherit
	// it; negative keeps that signal forever).
	SignalRetention SignalRetention
	// RetentionInterval is how often the substrate applies retention.
	// Default 1 minute; negative starts no retention goroutine (tests and
	// tools call ApplyRetention).
	RetentionInterval time.Duration
	// Logs configures the log store (its PartitionDuration, Logger and Now
	// are the substrate's).
	Logs logstore.Options
	// Traces configures the trace store (its PartitionDuration, Logger,
	// Now and Retention are the substrate's).
	Traces tracestore.Options
	// OutOfOrderWindow accepts samples older than a series' newest sample by
	// at most this much. Default 10 minutes; negative means in-order only.
	OutOfOrderWindow time.Duration
	// FutureWindow rejects samples more than this far past the wall clock
	// (ErrTooFarInFuture). Default 1 hour; negative disables the check.
	FutureWindow time.Duration
	// PartitionDuration is the width of a time partition of every signal
	// (index postings, chunk keys, the retention unit). Default: the
	// index's (index.DefaultOptions, 24h). Must not change for an existing
	// store.
	PartitionDuration time.Duration
	// SamplesPerChunk seals an open chunk once it holds this many samples.
	// Default 120.
	SamplesPerChunk int
	// MaxExemplarsPerSeries bounds the per-series exemplar ring. Default 16;
	// negative disables exemplar storage.
	MaxExemplarsPerSeries int
	// WALSegmentSize starts a new WAL segment after this many bytes. Default 64 MiB.
	WALSegmentSize int64
	// BlockCacheBytes sizes Pebble's cache of decompressed blocks, shared by
	// metric chunks, log chunks and the index. Default 8 MiB (Pebble's
	// own); queries over data already flushed to Pebble decompress less with
	// a larger cache, at that much more resident memory.
	BlockCacheBytes int64
	// WALSyncInterval is the fsync policy. Commit always returns after its
	// WAL records are written to the operating system, so a crash or
	// kill -9 of the process loses nothing acknowledged. With a positive
	// interval (default 1s) the WAL is fsynced that often, so a power loss
	// can lose up to that much acknowledged data; negative fsyncs before
	// every acknowledgement (concurrent commits share one fsync).
	WALSyncInterval time.Duration
	// CheckpointInterval is how often the background loop checkpoints the WAL
	// (seals nothing, writes head state into the checkpoint). Default 10m;
	// negative disables the background loop entirely (tests, tools).
	CheckpointInterval time.Duration
	// CompactionInterval is how often the background loop merges short chunks,
	// flushes out-of-order buffers and applies retention. Default 5m.
	CompactionInterval time.Duration
	// DiskReserve refuses writes of every signal (ErrLowDiskSpace, 503)
	// while the data directory's filesystem has less free space than this
	// many bytes, and a ballast file of half of it is kept to be released
	// on ENOSPC. Default 5% of the filesystem, between 8 MiB and 1 GiB;
	// negative disables the guard.
	DiskReserve int64
	// MemoryBudget refuses new streams of every signal (a
	// *MemoryBudgetError, 429) while the process's resident memory is at
	// or above this many bytes; streams that exist keep accepting data.
	// Zero or negative: no budget (weft's command line sets a default from
	// the cgroup or machine memory).
	MemoryBudget int64
	// AdmitSeries, when set, is asked before a new metric series ls of
	// tenant ("" for none, package tenant) is created, with the appender's
	// context; its error refuses the sample (a per-tenant or per-metric
	// series limit) and should wrap ErrInvalidLabels to be a client error.
	// ls is valid only during the call.
	AdmitSeries func(ctx context.Context, tenant string, ls labels.Labels) error
	// MemoryInUse returns the process's memory in use, which MemoryBudget
	// is checked against; nil reads the resident set size. Tests inject it.
	MemoryInUse func() int64
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Now returns the wall clock (retention, future window, log seal ages);
	// nil means time.Now. Tests inject it.
	Now func() time.Time
}

// SignalRetention holds per-signal retention overrides.
type SignalRetention struct {
	Metrics, Logs, Traces time.Duration
}

// retentionOf returns kind's effective retention (negative: forever).
func (o Options) retentionOf(kind index.Kind) time.Duration {
	var r time.Duration
	switch kind {
	case index.KindMetric:
		r = o.SignalRetention.Metrics
	case index.KindLog:
		r = o.SignalRetention.Logs
	case index.KindTrace:
		r = o.SignalRetention.Traces
	}
	if r == 0 {
		r = o.Retention
	}
	return r
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		Retention:             30 * 24 * time.Hour,
		RetentionInterval:     time.Minute,
		OutOfOrderWindow:      10 * time.Minute,
		FutureWindow:          time.Hour,
		PartitionDuration:     index.DefaultOptions().PartitionDuration,
		SamplesPerChunk:       defaultSamplesPerChunk,
		MaxExemplarsPerSeries: 16,
		WALSegmentSize:        64 << 20,
		BlockCacheBytes:       8 << 20,
		WALSyncInterval:       time.Second,
		CheckpointInterval:    10 * time.Minute,
		CompactionInterval:    5 * time.Minute,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Retention == 0 {
		o.Retention = d.Retention
	}
	if o.RetentionInterval == 0 {
		o.RetentionInterval = d.RetentionInterval
	}
	if o.OutOfOrderWindow == 0 {
		o.OutOfOrderWindow = d.OutOfOrderWindow
	}
	if o.OutOfOrderWindow < 0 {
		o.OutOfOrderWindow = 0
	}
	if o.FutureWindow == 0 {
		o.FutureWindow = d.FutureWindow
	}
	if o.PartitionDuration <= 0 {
		o.PartitionDuration = d.PartitionDuration
	}
	if o.SamplesPerChunk <= 0 {
		o.SamplesPerChunk = d.SamplesPerChunk
	}
	if o.MaxExemplarsPerSeries == 0 {
		o.MaxExemplarsPerSeries = d.MaxExemplarsPerSeries
	}
	if o.WALSegmentSize <= 0 {
		o.WALSegmentSize = d.WALSegmentSize
	}
	if o.BlockCacheBytes <= 0 {
		o.BlockCacheBytes = d.BlockCacheBytes
	}
	if o.WALSyncInterval == 0 {
		o.WALSyncInterval = d.WALSyncInterval
	}
	if o.CheckpointInterval == 0 {
		o.CheckpointInterval = d.CheckpointInterval
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = d.CompactionInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
