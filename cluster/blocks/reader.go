package blocks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/weftdb/weft/cluster/internal/logiter"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// Defaults of the Reader.
const (
	// DefaultSyncInterval is how often a Reader lists the bucket.
	DefaultSyncInterval = 15 * time.Second
	// DefaultMaxCacheBytes bounds the local copies of blocks: a size any
	// querier's disk holds; at docs/scale-out.md's sizing (~88 GB/day of
	// blocks) about the last three hours of the whole bucket, or two days
	// of one of its 16 partitions. Size it to the reads' working set.
	DefaultMaxCacheBytes = 10 << 30
	// downloadConcurrency is how many blocks one read downloads at once:
	// enough to overlap the object store's latency, few enough not to
	// starve the other reads.
	downloadConcurrency = 4
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// CacheDir holds the local copies of the blocks (required).
	CacheDir string
	// SyncInterval is how often the bucket is listed. Default
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// MaxCacheBytes bounds the local copies (by the sizes meta.json
	// gives their files): past it, the least recently read blocks that no
	// read holds are deleted. Reads holding more than it exceed it until
	// they end. Default DefaultMaxCacheBytes; negative means unbounded.
	MaxCacheBytes int64
	// DisablePrefetch stops Sync from downloading new blocks, most recent
	// first, while the cache has room: blocks are then only downloaded by
	// the reads that need them.
	DisablePrefetch bool
	// BlockCacheBytes sizes each opened block's Pebble cache. Default
	// 4 MiB.
	BlockCacheBytes int64
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the reader's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Reader reads across the bucket's complete blocks that overlap a query's
// range: a storage.Queryable for metric samples, the log reads of
// querier.Blocks (a stream may come once per block; the querier merges)
// and its trace reads (traces.go: each trace once, whole across blocks).
// Blocks that a compacted block lists as sources are skipped.
//
// Sync lists the bucket and reads each new block's meta.json and trace-ID
// filter, which stay in memory; a block's files are downloaded into
// CacheDir and opened when a read first needs them (once however many
// reads wait for them), and deleted, least recently read first, when the
// cache exceeds MaxCacheBytes and no read holds them. Start syncs in a
// goroutine that Stop ends; reads are safe for concurrent use.
type Reader struct {
	opts   ReaderOptions
	bucket Bucket
	logger *slog.Logger
	m      readerMetrics

	mu      sync.Mutex
	blocks  map[string]*block // every listed block
	bytes   int64             // of the blocks downloaded or downloading
	clock   uint64            // ticks at every acquire: LRU order
	seq     int               // numbers the download directories
	stopped bool

	ctx    context.Context // the reader's lifetime: downloads run in it
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type readerMetrics struct {
	syncs, syncFailures, downloads, downloadFailures, evictions prometheus.Counter
	open, cacheBytes                                            prometheus.GaugeFunc
}

// NewReader returns a reader of bucket.
func NewReader(opts ReaderOptions, bucket Bucket) (*Reader, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("block reader: no cache directory")
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.MaxCacheBytes == 0 {
		opts.MaxCacheBytes = DefaultMaxCacheBytes
	}
	if opts.BlockCacheBytes <= 0 {
		opts.BlockCacheBytes = 4 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reader{opts: opts, bucket: bucket, logger: opts.Logger, blocks: map[string]*block{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.m = readerMetrics{
		syncs:            prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_syncs_total", Help: "Listings of the bucket."}),
		syncFailures:     prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_sync_failures_total", Help: "Listings, or reads of a block's meta.json or trace-ID filter, that failed."}),
		downloads:        prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_downloads_total", Help: "Blocks downloaded into the cache and opened."}),
		downloadFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_download_failures_total", Help: "Block downloads or opens that failed."}),
		evictions:        prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_evictions_total", Help: "Downloaded blocks deleted from the cache to keep it under its bound."}),
	}
	r.m.open = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "weft_blocks_open", Help: "Blocks downloaded and open for queries."},
		func() float64 {
			r.mu.Lock()
			defer r.mu.Unlock()
			n := 0
			for _, b := range r.blocks {
				if b.sub != nil {
					n++
				}
			}
			return float64(n)
		})
	r.m.cacheBytes = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "weft_blocks_cache_bytes", Help: "Bytes of the blocks downloaded or downloading (by their meta.json)."},
		func() float64 { r.mu.Lock(); defer r.mu.Unlock(); return float64(r.bytes) })
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(r.m.syncs, r.m.syncFailures, r.m.downloads, r.m.downloadFailures, r.m.evictions, r.m.open, r.m.cacheBytes)
	}
	return r, nil
}

// Start clears the cache, lists the bucket once and then syncs every
// SyncInterval until Stop; the first listing's prefetch runs in the
// background, so that reads can start at once. A failed first listing is
// logged, not fatal: the bucket may come up later.
func (r *Reader) Start(ctx context.Context) error {
	if err := os.RemoveAll(r.opts.CacheDir); err != nil {
		return fmt.Errorf("block reader: clear cache: %w", err)
	}
	added, err := r.refresh(ctx)
	if err != nil {
		r.logger.Warn("blocks_sync_failed", "err", err)
	}
	r.wg.Go(func() {
		if !r.opts.DisablePrefetch {
			if err := r.prefetch(r.ctx, added); err != nil && r.ctx.Err() == nil {
				r.logger.Warn("blocks_prefetch_failed", "err", err)
			}
		}
		t := time.NewTicker(r.opts.SyncInterval)
		defer t.Stop()
		for {
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
				if err := r.Sync(r.ctx); err != nil && r.ctx.Err() == nil {
					r.logger.Warn("blocks_sync_failed", "err", err)
				}
			}
		}
	})
	return nil
}

// Stop ends syncing and the downloads in flight, and deletes the local
// copies (each after the reads using it). Idempotent.
func (r *Reader) Stop() {
	r.mu.Lock()
	r.stopped = true // no download starts after this
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	var idle []*block
	for id, b := range r.blocks {
		if r.dropLocked(b) {
			idle = append(idle, b)
		}
		delete(r.blocks, id)
	}
	r.mu.Unlock()
	for _, b := range idle {
		b.destroy()
	}
}

// dropLocked marks b gone and reports whether its local copy can be
// deleted now (no read holds it); the caller then calls destroy outside
// the lock.
func (r *Reader) dropLocked(b *block) bool {
	b.dropped = true
	if b.refs > 0 || b.sub == nil {
		return false
	}
	r.bytes -= b.size
	return true
}

// Sync lists the bucket, reads the meta.json and trace-ID filter of the
// blocks it does not know yet, forgets those that are gone and, unless
// DisablePrefetch, downloads new blocks while the cache has room.
func (r *Reader) Sync(ctx context.Context) error {
	added, err := r.refresh(ctx)
	if !r.opts.DisablePrefetch {
		if perr := r.prefetch(ctx, added); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return err
}

// refresh is Sync without the prefetch; it returns the blocks it added.
func (r *Reader) refresh(ctx context.Context) ([]*block, error) {
	r.m.syncs.Inc()
	ids, err := listBlocks(ctx, r.bucket)
	if err != nil {
		r.m.syncFailures.Inc()
		return nil, err
	}
	r.mu.Lock()
	var missing []string
	for _, id := range ids {
		if r.blocks[id] == nil {
			missing = append(missing, id)
		}
	}
	r.mu.Unlock()
	var errs []error
	var added []*block
	for _, id := range missing {
		b, err := r.describe(ctx, id)
		if err != nil {
			r.m.syncFailures.Inc()
			errs = append(errs, fmt.Errorf("block %s: %w", id, err))
			continue
		}
		added = append(added, b)
	}
	listed := make(map[string]bool, len(ids))
	for _, id := range ids {
		listed[id] = true
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil, errors.Join(errs...)
	}
	kept := added[:0]
	for _, b := range added {
		if r.blocks[b.meta.ID] == nil { // a concurrent Sync may have added it
			r.blocks[b.meta.ID] = b
			kept = append(kept, b)
		}
	}
	added = kept
	var idle []*block
	for id, b := range r.blocks {
		if !listed[id] {
			if r.dropLocked(b) {
				idle = append(idle, b)
			}
			delete(r.blocks, id)
		}
	}
	r.mu.Unlock()
	for _, b := range idle {
		b.destroy()
	}
	return added, errors.Join(errs...)
}

// describe reads block id's meta.json and trace-ID filter.
func (r *Reader) describe(ctx context.Context, id string) (*block, error) {
	m, err := readMeta(ctx, r.bucket, id)
	if err != nil {
		return nil, err
	}
	f, err := readTraceIDs(ctx, r.bucket, m)
	if err != nil {
		return nil, err
	}
	b := &block{meta: m, traces: f}
	for _, fl := range m.Files {
		b.size += fl.Size
	}
	return b, nil
}

// prefetch downloads the blocks of added that no listed block replaced,
// most recent first, while they fit in the cache without evicting.
func (r *Reader) prefetch(ctx context.Context, added []*block) error {
	slices.SortFunc(added, func(a, b *block) int { return cmp.Compare(b.meta.MaxTime, a.meta.MaxTime) })
	r.mu.Lock()
	replaced := r.replacedLocked()
	room := r.opts.MaxCacheBytes - r.bytes
	var want []*block
	for _, b := range added {
		if replaced[b.meta.ID] || b.dropped || b.sub != nil || b.loading != nil {
			continue
		}
		if r.opts.MaxCacheBytes >= 0 {
			if b.size > room {
				continue
			}
			room -= b.size
		}
		want = append(want, b)
	}
	// The oldest first in LRU order: the first evicted.
	for i := len(want) - 1; i >= 0; i-- {
		r.clock++
		want[i].used = r.clock
		want[i].refs++
	}
	r.mu.Unlock()
	err := r.loadAll(ctx, want)
	r.release(want)
	return err
}

// Blocks returns the metas of the listed blocks, sorted by ID.
func (r *Reader) Blocks() []Meta {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Meta, 0, len(r.blocks))
	for _, b := range r.blocks {
		out = append(out, *b.meta)
	}
	slices.SortFunc(out, func(a, b Meta) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// CacheBytes returns the bytes of the blocks downloaded or downloading.
func (r *Reader) CacheBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytes
}

// Querier implements storage.Queryable over the blocks overlapping
// [mint, maxt]; their series are merged (ChainedSeriesMerge). The blocks
// are acquired (downloaded when missing) by the querier's first read,
// which fails if that does, and held until Close.
func (r *Reader) Querier(mint, maxt int64) (promstorage.Querier, error) {
	return &blocksQuerier{r: r, mint: mint, maxt: maxt}, nil
}

// blocksQuerier is Reader.Querier's querier. Safe for concurrent use.
type blocksQuerier struct {
	r          *Reader
	mint, maxt int64

	mu      sync.Mutex
	q       promstorage.Querier // nil until the first read acquires
	release func()
	closed  bool
}

// querier returns the merged querier of the blocks, acquiring them on
// the first call. A failed acquire is retried by the next read.
func (q *blocksQuerier) querier(ctx context.Context) (promstorage.Querier, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, errors.New("block querier closed")
	}
	if q.q != nil {
		return q.q, nil
	}
	bs, release, err := q.r.acquire(ctx, q.mint, q.maxt, nil)
	if err != nil {
		return nil, fmt.Errorf("acquire blocks: %w", err)
	}
	qs := make([]promstorage.Querier, 0, len(bs))
	for _, b := range bs {
		bq, err := b.sub.Metrics().Querier(q.mint, q.maxt)
		if err != nil {
			for _, bq := range qs {
				_ = bq.Close()
			}
			release()
			return nil, fmt.Errorf("block %s: %w", b.meta.ID, err)
		}
		qs = append(qs, bq)
	}
	q.q, q.release = promstorage.NewMergeQuerier(qs, nil, promstorage.ChainedSeriesMerge), release
	return q.q, nil
}

func (q *blocksQuerier) Select(ctx context.Context, sortSeries bool, hints *promstorage.SelectHints, ms ...*labels.Matcher) promstorage.SeriesSet {
	mq, err := q.querier(ctx)
	if err != nil {
		return promstorage.ErrSeriesSet(err)
	}
	return mq.Select(ctx, sortSeries, hints, ms...)
}

func (q *blocksQuerier) LabelValues(ctx context.Context, name string, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	mq, err := q.querier(ctx)
	if err != nil {
		return nil, nil, err
	}
	return mq.LabelValues(ctx, name, hints, ms...)
}

func (q *blocksQuerier) LabelNames(ctx context.Context, hints *promstorage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	mq, err := q.querier(ctx)
	if err != nil {
		return nil, nil, err
	}
	return mq.LabelNames(ctx, hints, ms...)
}

// Close releases the blocks. Idempotent.
func (q *blocksQuerier) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.q == nil {
		return nil
	}
	err := q.q.Close()
	q.release()
	q.q = nil
	return err
}

// nsToMs converts a log read's ns bounds to the blocks' ms.
func nsToMs(start, end int64) (int64, int64) { return start / 1e6, end / 1e6 }

// Select returns the entries of every block overlapping [p.Start, p.End),
// block after block: a stream spread over several blocks comes once per
// block.
func (r *Reader) Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error) {
	mint, maxt := nsToMs(p.Start, p.End)
	bs, release, err := r.acquire(ctx, mint, maxt, nil)
	if err != nil {
		return nil, err
	}
	its := make([]logentry.Iterator, 0, len(bs))
	for _, b := range bs {
		bi, err := b.sub.Logs().Select(ctx, p)
		if err != nil {
			_ = logiter.Concat(its, release).Close()
			return nil, err
		}
		its = append(its, bi)
	}
	return logiter.Concat(its, release), nil
}

// strings unions a label read over the blocks.
func (r *Reader) strings(ctx context.Context, start, end int64, f func(st *logstore.Store) ([]string, error)) ([]string, error) {
	mint, maxt := nsToMs(start, end)
	bs, release, err := r.acquire(ctx, mint, maxt, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []string
	for _, b := range bs {
		vs, err := f(b.sub.Logs())
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LabelNames returns the log label names of the blocks' streams matching ms.
func (r *Reader) LabelNames(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return r.strings(ctx, start, end, func(st *logstore.Store) ([]string, error) { return st.LabelNames(ctx, start, end, ms...) })
}

// LabelValues returns the values of name of the blocks' matching streams.
func (r *Reader) LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return r.strings(ctx, start, end, func(st *logstore.Store) ([]string, error) { return st.LabelValues(ctx, name, start, end, ms...) })
}

// Series returns the label sets of the blocks' matching streams, sorted.
func (r *Reader) Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	mint, maxt := nsToMs(start, end)
	bs, release, err := r.acquire(ctx, mint, maxt, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []labels.Labels
	for _, b := range bs {
		ss, err := b.sub.Logs().Series(ctx, start, end, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	slices.SortFunc(out, labels.Compare)
	return slices.CompactFunc(out, labels.Equal), nil
}

// EachStreamTotal calls f per stream per block (the querier sums a stream's
// totals over blocks).
func (r *Reader) EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error {
	mint, maxt := nsToMs(start, end)
	bs, release, err := r.acquire(ctx, mint, maxt, nil)
	if err != nil {
		return err
	}
	defer release()
	for _, b := range bs {
		if err := b.sub.Logs().EachStreamTotal(ctx, start, end, ms, f); err != nil {
			return err
		}
	}
	return nil
}
