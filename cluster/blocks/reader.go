package blocks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/cluster/internal/logiter"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// DefaultSyncInterval is how often a Reader lists the bucket.
const DefaultSyncInterval = 15 * time.Second

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// CacheDir holds the local copies of the blocks (required).
	CacheDir string
	// SyncInterval is how often the bucket is listed. Default
	// DefaultSyncInterval.
	SyncInterval time.Duration
	// BlockCacheBytes sizes each opened block's Pebble cache. Default
	// 4 MiB.
	BlockCacheBytes int64
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the reader's metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Reader keeps a local copy of the bucket's complete blocks, each opened as
// a read-only store, and reads across the blocks that overlap a query's
// range: a storage.Queryable for metric samples, the log reads of
// querier.Blocks (a stream may come once per block; the querier merges)
// and its trace reads (traces.go: each trace once, whole across blocks).
// Blocks that a compacted block lists as sources are skipped. Start syncs
// in a goroutine that Stop ends; reads are safe for concurrent use.
type Reader struct {
	opts   ReaderOptions
	bucket Bucket
	logger *slog.Logger

	syncs, syncFailures, loaded prometheus.Counter
	blocksGauge                 prometheus.GaugeFunc

	mu     sync.RWMutex
	blocks map[string]*openBlock

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// openBlock is one block's local store. refs counts the reads using it; a
// block that left the bucket is closed when the last one ends.
type openBlock struct {
	meta    *Meta
	dir     string
	sub     *storage.Substrate
	mu      sync.Mutex
	refs    int
	dropped bool
}

func (b *openBlock) release() {
	b.mu.Lock()
	b.refs--
	last := b.dropped && b.refs == 0
	b.mu.Unlock()
	if last {
		b.destroy()
	}
}

func (b *openBlock) destroy() {
	_ = b.sub.Close()
	_ = os.RemoveAll(b.dir)
}

// NewReader returns a reader of bucket.
func NewReader(opts ReaderOptions, bucket Bucket) (*Reader, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("block reader: no cache directory")
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.BlockCacheBytes <= 0 {
		opts.BlockCacheBytes = 4 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reader{opts: opts, bucket: bucket, logger: opts.Logger, blocks: map[string]*openBlock{},
		syncs:        prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_syncs_total", Help: "Listings of the bucket."}),
		syncFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_sync_failures_total", Help: "Listings or block downloads that failed."}),
		loaded:       prometheus.NewCounter(prometheus.CounterOpts{Name: "weft_blocks_loaded_total", Help: "Blocks downloaded and opened."}),
	}
	r.blocksGauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "weft_blocks_open", Help: "Blocks open for queries."},
		func() float64 { r.mu.RLock(); defer r.mu.RUnlock(); return float64(len(r.blocks)) })
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(r.syncs, r.syncFailures, r.loaded, r.blocksGauge)
	}
	return r, nil
}

// Start clears the cache, syncs once and then every SyncInterval until
// Stop. A failed first sync is logged, not fatal: the bucket may come up
// later.
func (r *Reader) Start(ctx context.Context) error {
	if err := os.RemoveAll(r.opts.CacheDir); err != nil {
		return fmt.Errorf("block reader: clear cache: %w", err)
	}
	if err := r.Sync(ctx); err != nil {
		r.logger.Warn("blocks_sync_failed", "err", err)
	}
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.wg.Go(func() {
		t := time.NewTicker(r.opts.SyncInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
					r.logger.Warn("blocks_sync_failed", "err", err)
				}
			}
		}
	})
	return nil
}

// Stop ends syncing and closes the blocks (after the reads using them).
func (r *Reader) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, b := range r.blocks {
		r.drop(b)
		delete(r.blocks, id)
	}
}

func (r *Reader) drop(b *openBlock) {
	b.mu.Lock()
	b.dropped = true
	idle := b.refs == 0
	b.mu.Unlock()
	if idle {
		b.destroy()
	}
}

// Sync lists the bucket, opens the blocks it does not have yet and drops
// those that are gone.
func (r *Reader) Sync(ctx context.Context) error {
	r.syncs.Inc()
	ids, err := listBlocks(ctx, r.bucket)
	if err != nil {
		r.syncFailures.Inc()
		return err
	}
	r.mu.RLock()
	var missing []string
	for _, id := range ids {
		if r.blocks[id] == nil {
			missing = append(missing, id)
		}
	}
	r.mu.RUnlock()
	var errs []error
	for _, id := range missing {
		b, err := r.load(ctx, id)
		if err != nil {
			r.syncFailures.Inc()
			errs = append(errs, fmt.Errorf("block %s: %w", id, err))
			continue
		}
		r.loaded.Inc()
		r.mu.Lock()
		r.blocks[id] = b
		r.mu.Unlock()
	}
	r.mu.Lock()
	for id, b := range r.blocks {
		if !slices.Contains(ids, id) {
			r.drop(b)
			delete(r.blocks, id)
		}
	}
	r.mu.Unlock()
	return errors.Join(errs...)
}

func (r *Reader) load(ctx context.Context, id string) (*openBlock, error) {
	m, err := readMeta(ctx, r.bucket, id)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.opts.CacheDir, id)
	_ = os.RemoveAll(dir)
	if err := download(ctx, r.bucket, m, dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	sopts := blockStore(storage.DefaultOptions(), r.logger.With("block", id))
	sopts.BlockCacheBytes = r.opts.BlockCacheBytes
	sub, err := storage.OpenSubstrate(ctx, dir, sopts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open block store: %w", err)
	}
	r.logger.Info("block_loaded", "block", id, "min_time", m.MinTime, "max_time", m.MaxTime, "bytes", m.Stats.Bytes)
	return &openBlock{meta: m, dir: dir, sub: sub}, nil
}

// acquire returns the blocks overlapping [mint, maxt] (unix ms), without
// those a listed compacted block replaced, each referenced until release.
func (r *Reader) acquire(mint, maxt int64) (bs []*openBlock, release func()) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	replaced := map[string]bool{}
	for _, b := range r.blocks {
		for _, s := range b.meta.Compaction.Sources {
			replaced[s] = true
		}
	}
	for id, b := range r.blocks {
		if replaced[id] || b.meta.MaxTime < mint || b.meta.MinTime > maxt {
			continue
		}
		b.mu.Lock()
		b.refs++
		b.mu.Unlock()
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b *openBlock) int { return compareIDs(a.meta.ID, b.meta.ID) })
	return bs, func() {
		for _, b := range bs {
			b.release()
		}
	}
}

func compareIDs(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Blocks returns the metas of the open blocks, sorted by ID.
func (r *Reader) Blocks() []Meta {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Meta, 0, len(r.blocks))
	for _, b := range r.blocks {
		out = append(out, *b.meta)
	}
	slices.SortFunc(out, func(a, b Meta) int { return compareIDs(a.ID, b.ID) })
	return out
}

// Querier implements storage.Queryable over the blocks overlapping
// [mint, maxt]; their series are merged (ChainedSeriesMerge).
func (r *Reader) Querier(mint, maxt int64) (promstorage.Querier, error) {
	bs, release := r.acquire(mint, maxt)
	qs := make([]promstorage.Querier, 0, len(bs))
	for _, b := range bs {
		q, err := b.sub.Metrics().Querier(mint, maxt)
		if err != nil {
			for _, q := range qs {
				_ = q.Close()
			}
			release()
			return nil, err
		}
		qs = append(qs, q)
	}
	return &blocksQuerier{Querier: promstorage.NewMergeQuerier(qs, nil, promstorage.ChainedSeriesMerge), release: release}, nil
}

type blocksQuerier struct {
	promstorage.Querier
	release func()
	once    sync.Once
}

func (q *blocksQuerier) Close() error {
	err := q.Querier.Close()
	q.once.Do(q.release)
	return err
}

// nsToMs converts a log read's ns bounds to the blocks' ms.
func nsToMs(start, end int64) (int64, int64) { return start / 1e6, end / 1e6 }

// Select returns the entries of every block overlapping [p.Start, p.End),
// block after block: a stream spread over several blocks comes once per
// block.
func (r *Reader) Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error) {
	bs, release := r.acquire(nsToMs(p.Start, p.End))
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
func (r *Reader) strings(start, end int64, f func(st *logstore.Store) ([]string, error)) ([]string, error) {
	bs, release := r.acquire(nsToMs(start, end))
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
	return r.strings(start, end, func(st *logstore.Store) ([]string, error) { return st.LabelNames(ctx, start, end, ms...) })
}

// LabelValues returns the values of name of the blocks' matching streams.
func (r *Reader) LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return r.strings(start, end, func(st *logstore.Store) ([]string, error) { return st.LabelValues(ctx, name, start, end, ms...) })
}

// Series returns the label sets of the blocks' matching streams, sorted.
func (r *Reader) Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	bs, release := r.acquire(nsToMs(start, end))
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
	bs, release := r.acquire(nsToMs(start, end))
	defer release()
	for _, b := range bs {
		if err := b.sub.Logs().EachStreamTotal(ctx, start, end, ms, f); err != nil {
			return err
		}
	}
	return nil
}
