package blocks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/cluster/internal/wait"
	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

// Defaults of the builder.
const (
	DefaultWindow = 2 * time.Hour
	// retryBackoff is the wait before retrying a failed upload or commit.
	retryBackoff = 2 * time.Second
)

// Log is the ingest log as the builder reads it; *kafkalog.Reader.
type Log interface {
	Committed(ctx context.Context) (map[int32]int64, error)
	Start(start map[int32]int64)
	Poll(ctx context.Context) (kafkalog.Poll, error)
	Commit(ctx context.Context, next map[int32]int64) error
}

// BuilderOptions configure a Builder.
type BuilderOptions struct {
	// Partitions it builds blocks of (required).
	Partitions []int32
	// Window is the width of a block's record-time window, aligned to
	// the Unix epoch. Default DefaultWindow.
	Window time.Duration
	// Grace is how long after a window's end the builder waits for its
	// late records before closing it while the partition is idle.
	// Default Window/10, at least 1s.
	Grace time.Duration
	// ScratchDir holds the stores of the windows being built (required).
	ScratchDir string
	// Storage configures the windows' stores (their defaults otherwise).
	Storage storage.Options
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the builder's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Retention deletes the builder's partitions' blocks whose newest data
	// (MaxTime) is older than this; 0 keeps them forever (or leaves it to
	// the object store's lifecycle rules).
	Retention time.Duration
	// RetentionInterval is how often the bucket is checked for blocks
	// past Retention. Default min(Retention/10, 1h), at least 1s.
	RetentionInterval time.Duration
	// Now is the clock (closing idle windows, retention); nil means
	// time.Now.
	Now func() time.Time
}

// Builder turns closed record-time windows of its partitions into blocks:
// it applies a window's records to a store of its own (the same code as an
// ingester), and once a record of a later window arrives, or the partition
// is idle past the window's end plus Grace, flushes the store, uploads its
// files and meta.json, and only then commits the offset of the first
// record it has not put in a block. A crash before the commit rebuilds the
// same block (same ID) from the same records. Start once; Stop ends it.
type Builder struct {
	opts   BuilderOptions
	log    Log
	bucket Bucket
	logger *slog.Logger
	m      *builderMetrics

	mu       sync.Mutex
	windows  map[int32]*window
	hwm      map[int32]int64
	started  bool
	uploaded int

	// retMu serialises retention passes; keptMaxTime is the max_time of
	// each of its blocks a pass kept.
	retMu       sync.Mutex
	keptMaxTime map[string]int64

	cancel  context.CancelFunc
	done    chan struct{}
	retired chan struct{} // closed when the retention loop ends
}

// window is one partition's block being built.
type window struct {
	start       int64 // record time, unix ms, aligned
	first, next int64 // offsets [first, next)
	dir         string
	sub         *storage.Substrate
	applier     *record.Applier
	minT, maxT  int64
	stats       Stats
}

// NewBuilder returns a builder of log's partitions into bucket.
func NewBuilder(opts BuilderOptions, log Log, bucket Bucket) (*Builder, error) {
	if len(opts.Partitions) == 0 {
		return nil, errors.New("block builder: no partitions")
	}
	if opts.ScratchDir == "" {
		return nil, errors.New("block builder: no scratch directory")
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Grace <= 0 {
		opts.Grace = max(opts.Window/10, time.Second)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("block builder: negative retention %s", opts.Retention)
	}
	if opts.RetentionInterval <= 0 {
		opts.RetentionInterval = max(min(opts.Retention/10, time.Hour), time.Second)
	}
	b := &Builder{opts: opts, log: log, bucket: bucket, logger: opts.Logger, windows: map[int32]*window{}, hwm: map[int32]int64{}, keptMaxTime: map[string]int64{}}
	b.m = newBuilderMetrics(opts.Registerer)
	return b, nil
}

// Start resumes from the committed offsets and consumes in a goroutine
// that Stop ends. Windows left half built by an earlier process are
// rebuilt from the log.
func (b *Builder) Start(ctx context.Context) error {
	if err := os.RemoveAll(b.opts.ScratchDir); err != nil {
		return fmt.Errorf("block builder: clear scratch: %w", err)
	}
	committed, err := b.log.Committed(ctx)
	if err != nil {
		return fmt.Errorf("block builder: %w", err)
	}
	b.logger.Info("block_builder_starting", "partitions", b.opts.Partitions, "resume_at", committed, "window", b.opts.Window)
	b.log.Start(committed)
	b.mu.Lock()
	b.started = true
	b.mu.Unlock()
	ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.done, b.retired = make(chan struct{}), make(chan struct{})
	go b.run(ctx)
	go b.retain(ctx)
	return nil
}

// Stop ends the builder and drops the windows it had not closed (they are
// rebuilt from the log next time: nothing of them was committed).
func (b *Builder) Stop() {
	if b.cancel == nil {
		return
	}
	b.cancel()
	<-b.done
	<-b.retired
	for p, w := range b.windows {
		_ = w.sub.Close()
		_ = os.RemoveAll(w.dir)
		delete(b.windows, p)
	}
}

// Ready reports whether the builder has started.
func (b *Builder) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

// Uploaded returns how many blocks the builder uploaded.
func (b *Builder) Uploaded() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.uploaded
}

func (b *Builder) run(ctx context.Context) {
	defer close(b.done)
	for ctx.Err() == nil {
		poll, err := b.log.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				b.logger.Warn("block_builder_poll_failed", "err", err)
				wait.Sleep(ctx, retryBackoff)
			}
			continue
		}
		maps.Copy(b.hwm, poll.HighWatermark)
		for _, f := range poll.Records {
			if err := b.add(ctx, f); err != nil {
				if ctx.Err() == nil {
					b.logger.Error("block_builder_failed", "partition", f.Partition, "offset", f.Offset, "err", err)
				}
				return
			}
		}
		b.closeIdle(ctx)
	}
}

// retain applies the retention every RetentionInterval until ctx ends.
func (b *Builder) retain(ctx context.Context) {
	defer close(b.retired)
	if b.opts.Retention <= 0 {
		return
	}
	for {
		if _, err := b.ApplyRetention(ctx); err != nil && ctx.Err() == nil {
			b.logger.Warn("block_retention_failed", "err", err)
		}
		if !wait.Sleep(ctx, b.opts.RetentionInterval) {
			return
		}
	}
}

// ApplyRetention deletes the blocks of the builder's partitions whose
// newest data is older than Retention and returns how many it deleted. A
// block's meta.json goes first, so that readers stop listing it before its
// files go; a deletion cut short leaves files without a meta.json, which
// readers ignore and the next pass does not see (the object store's
// lifecycle rules, or an operator, remove such leftovers). Other builders'
// partitions are left to them. With no Retention it does nothing.
func (b *Builder) ApplyRetention(ctx context.Context) (int, error) {
	if b.opts.Retention <= 0 {
		return 0, nil
	}
	ids, err := listBlocks(ctx, b.bucket)
	if err != nil {
		return 0, fmt.Errorf("block retention: %w", err)
	}
	cutoff := b.opts.Now().Add(-b.opts.Retention).UnixMilli()
	b.retMu.Lock()
	defer b.retMu.Unlock()
	// Blocks are immutable, so the max_time of a block kept by an earlier
	// pass is known: only blocks new since, or now past the cutoff, have
	// their meta.json read.
	listed := make(map[string]bool, len(ids))
	deleted := 0
	for _, id := range ids {
		if p, ok := partitionOfID(id); ok && !slices.Contains(b.opts.Partitions, p) {
			continue // another builder's
		}
		listed[id] = true
		if t, ok := b.keptMaxTime[id]; ok && t >= cutoff {
			continue
		}
		m, err := readMeta(ctx, b.bucket, id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return deleted, fmt.Errorf("block retention: %w", err)
		}
		if !slices.Contains(b.opts.Partitions, m.Partition) {
			continue
		}
		if m.MaxTime >= cutoff {
			b.keptMaxTime[id] = m.MaxTime
			continue
		}
		delete(b.keptMaxTime, id)
		if err := deleteBlock(ctx, b.bucket, m); err != nil {
			return deleted, fmt.Errorf("block retention: %w", err)
		}
		deleted++
		b.m.deleted.Inc()
		b.logger.Info("block_deleted", "block", id, "max_time", time.UnixMilli(m.MaxTime).UTC(), "retention", b.opts.Retention)
	}
	for id := range b.keptMaxTime {
		if !listed[id] {
			delete(b.keptMaxTime, id) // gone from the bucket
		}
	}
	return deleted, nil
}

func (b *Builder) align(t time.Time) int64 {
	w := b.opts.Window.Milliseconds()
	ms := t.UnixMilli()
	return ms - ((ms%w)+w)%w
}

// add puts one record into its partition's window, closing the window
// first when the record belongs to a later one.
func (b *Builder) add(ctx context.Context, f kafkalog.Fetched) error {
	ws := b.align(f.Time)
	w := b.windows[f.Partition]
	if w != nil && ws >= w.start+b.opts.Window.Milliseconds() {
		if err := b.finish(ctx, f.Partition, w, f.Offset); err != nil {
			return err
		}
		w = nil
	}
	if w == nil {
		var err error
		if w, err = b.open(ctx, f.Partition, ws, f.Offset); err != nil {
			return err
		}
	}
	w.next = f.Offset + 1
	w.stats.Records++
	rec, err := record.Decode(f.Value)
	if err != nil {
		b.logger.Error("block_builder_record_corrupt", "partition", f.Partition, "offset", f.Offset, "err", err)
		b.m.corrupt.Inc()
		return nil
	}
	for _, s := range rec.Series {
		for _, smp := range s.Samples {
			w.minT, w.maxT = min(w.minT, smp.T), max(w.maxT, smp.T)
		}
	}
	for _, s := range rec.Streams {
		for _, e := range s.Entries {
			ms := e.Timestamp / 1e6
			w.minT, w.maxT = min(w.minT, ms), max(w.maxT, ms)
		}
	}
	for _, r := range rec.Resources {
		for _, sp := range r.Spans {
			w.minT, w.maxT = min(w.minT, sp.StartUnixNano/1e6), max(w.maxT, sp.EndUnixNano/1e6)
		}
	}
	for {
		res, err := w.applier.Apply(ctx, []record.Record{rec})
		if err == nil {
			w.stats.Samples += res.Samples
			w.stats.Histograms += res.Histograms
			w.stats.Entries += res.Entries
			w.stats.Spans += res.Spans
			return nil
		}
		b.logger.Error("block_builder_apply_failed", "partition", f.Partition, "err", err)
		if !wait.Sleep(ctx, retryBackoff) {
			return ctx.Err()
		}
	}
}

func (b *Builder) open(ctx context.Context, p int32, start, first int64) (*window, error) {
	dir := filepath.Join(b.opts.ScratchDir, BlockID(p, first))
	sopts := b.opts.Storage
	sopts.RetentionInterval = -1
	sopts.CheckpointInterval = -1
	// A block's store is scratch that is uploaded whole: no disk guard,
	// whose ballast file would be uploaded with every block.
	sopts.DiskReserve = -1
	sopts.Logger = b.logger.With("component", "block store")
	sub, err := storage.OpenSubstrate(ctx, dir, sopts)
	if err != nil {
		return nil, fmt.Errorf("open block store: %w", err)
	}
	w := &window{start: start, first: first, next: first, dir: dir, sub: sub,
		applier: &record.Applier{Metrics: sub.Metrics(), Logs: sub.Logs(), Traces: sub.Traces()}, minT: 1<<63 - 1, maxT: -1 << 63}
	b.windows[p] = w
	return w, nil
}

// closeIdle finishes windows whose partition has nothing newer and whose
// end plus Grace has passed.
func (b *Builder) closeIdle(ctx context.Context) {
	now := b.opts.Now().UnixMilli()
	for p, w := range b.windows {
		if w.next >= b.hwm[p] && now >= w.start+b.opts.Window.Milliseconds()+b.opts.Grace.Milliseconds() {
			if err := b.finish(ctx, p, w, w.next); err != nil && ctx.Err() == nil {
				b.logger.Error("block_builder_failed", "partition", p, "err", err)
			}
		}
	}
}

// finish flushes a window's store, uploads it and commits next, retrying
// the upload and the commit until they succeed or ctx ends.
func (b *Builder) finish(ctx context.Context, p int32, w *window, next int64) error {
	start := time.Now()
	if err := w.sub.Flush(ctx); err != nil {
		return fmt.Errorf("flush block store: %w", err)
	}
	w.stats.Series = w.sub.Index().NumStreams(index.KindMetric)
	w.stats.Streams = w.sub.Index().NumStreams(index.KindLog)
	w.stats.TraceStreams = w.sub.Index().NumStreams(index.KindTrace)
	idsPath := traceIDsPath(w.dir)
	ids, err := writeTraceIDs(ctx, w.sub, idsPath)
	if err != nil {
		return err
	}
	if err := w.sub.Close(); err != nil {
		return fmt.Errorf("close block store: %w", err)
	}
	delete(b.windows, p)
	defer os.RemoveAll(w.dir)
	defer os.Remove(idsPath)
	if w.stats.Samples+w.stats.Histograms+w.stats.Entries+w.stats.Spans == 0 {
		w.minT, w.maxT = w.start, w.start
	}
	m := &Meta{Version: MetaVersion, ID: BlockID(p, w.first), Partition: p, Offsets: OffsetRange{Start: w.first, End: w.next},
		Window: TimeRange{Start: w.start, End: w.start + b.opts.Window.Milliseconds()}, MinTime: w.minT, MaxTime: w.maxT,
		Stats: w.stats, TraceIDs: ids, Compaction: Compaction{Level: 1}, Created: time.Now().UTC()}
	for {
		err := upload(ctx, b.bucket, w.dir, m, idsPath)
		if err == nil {
			break
		}
		b.m.failures.Inc()
		b.logger.Error("block_upload_failed", "block", m.ID, "err", err)
		if !wait.Sleep(ctx, retryBackoff) {
			return ctx.Err()
		}
	}
	b.m.uploads.Inc()
	b.m.bytes.Add(float64(m.Stats.Bytes))
	b.m.duration.Observe(time.Since(start).Seconds())
	b.m.lastWindow.Set(float64(m.Window.End) / 1000)
	for {
		err := b.log.Commit(ctx, map[int32]int64{p: next})
		if err == nil {
			break
		}
		b.logger.Warn("block_builder_commit_failed", "partition", p, "err", err)
		if !wait.Sleep(ctx, retryBackoff) {
			return ctx.Err()
		}
	}
	b.mu.Lock()
	b.uploaded++
	b.mu.Unlock()
	b.logger.Info("block_uploaded", "block", m.ID, "offsets", fmt.Sprintf("[%d,%d)", m.Offsets.Start, m.Offsets.End),
		"samples", m.Stats.Samples, "entries", m.Stats.Entries, "spans", m.Stats.Spans, "bytes", m.Stats.Bytes)
	return nil
}

type builderMetrics struct {
	uploads, failures, bytes, corrupt, deleted prometheus.Counter
	duration                                   prometheus.Histogram
	lastWindow                                 prometheus.Gauge
}

func newBuilderMetrics(r prometheus.Registerer) *builderMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &builderMetrics{
		uploads:  c("weft_block_builder_blocks_uploaded_total", "Blocks uploaded to the bucket."),
		failures: c("weft_block_builder_upload_failures_total", "Block uploads that failed (retried)."),
		bytes:    c("weft_block_builder_uploaded_bytes_total", "Bytes of the blocks uploaded."),
		deleted:  c("weft_block_builder_blocks_deleted_total", "Blocks deleted from the bucket by the retention."),
		corrupt:  c("weft_block_builder_records_corrupt_total", "Records of the ingest log that did not decode and were skipped."),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "weft_block_builder_block_duration_seconds",
			Help: "Time to flush, upload and commit one block.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		lastWindow: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weft_block_builder_last_window_end_seconds",
			Help: "End of the record-time window of the last block uploaded (Unix seconds)."}),
	}
	if r != nil {
		r.MustRegister(m.uploads, m.failures, m.bytes, m.corrupt, m.deleted, m.duration, m.lastWindow)
	}
	return m
}
