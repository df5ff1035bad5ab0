package blocks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/weftdb/weft/storage"
)

// The Reader's cache of blocks: which blocks a read holds, their
// downloads (one per block however many reads wait) and their eviction,
// least recently acquired first, past ReaderOptions.MaxCacheBytes.

// block is one listed block: its meta and trace-ID filter always, its local
// store while downloaded. The fields from sub on are guarded by
// Reader.mu.
type block struct {
	meta   *Meta
	traces *traceIDFilter // nil: may hold any trace
	size   int64          // of its files

	sub     *storage.Substrate // nil until downloaded
	dir     string             // sub's files: a new one per download
	loading *inflight          // the download in flight, nil when none
	refs    int                // reads (and a download) holding the block
	used    uint64             // Reader.clock when last acquired
	dropped bool               // left the bucket: deleted when refs reach 0
}

// inflight is one block's download in flight; done is closed when it
// ends, err says how.
type inflight struct {
	done chan struct{}
	err  error
}

// destroy closes b's store and deletes its files. b must be detached from
// the cache (dropLocked, evictLocked).
func (b *block) destroy() {
	_ = b.sub.Close()
	_ = os.RemoveAll(b.dir)
}

// replacedLocked returns the IDs that a listed compacted block replaced.
func (r *Reader) replacedLocked() map[string]bool {
	replaced := map[string]bool{}
	for _, b := range r.blocks {
		for _, s := range b.meta.Compaction.Sources {
			replaced[s] = true
		}
	}
	return replaced
}

// acquire returns the blocks overlapping [mint, maxt] (unix ms) that keep
// (nil: all) accepts, without those a listed compacted block replaced,
// downloaded and each held until release. A block that left the bucket
// since the last sync (compacted away: its files are gone) makes it sync
// and try again, once.
func (r *Reader) acquire(ctx context.Context, mint, maxt int64, keep func(*block) bool) ([]*block, func(), error) {
	bs, err := r.tryAcquire(ctx, mint, maxt, keep)
	if errors.Is(err, ErrNotFound) {
		if _, serr := r.refresh(ctx); serr != nil {
			r.logger.Warn("blocks_sync_failed", "err", serr)
		}
		bs, err = r.tryAcquire(ctx, mint, maxt, keep)
	}
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return bs, func() { once.Do(func() { r.release(bs) }) }, nil
}

func (r *Reader) tryAcquire(ctx context.Context, mint, maxt int64, keep func(*block) bool) ([]*block, error) {
	r.mu.Lock()
	replaced := r.replacedLocked()
	var bs []*block
	for id, b := range r.blocks {
		if replaced[id] || b.meta.MaxTime < mint || b.meta.MinTime > maxt || (keep != nil && !keep(b)) {
			continue
		}
		r.clock++
		b.used = r.clock
		b.refs++
		bs = append(bs, b)
	}
	r.mu.Unlock()
	slices.SortFunc(bs, func(a, b *block) int { return cmp.Compare(a.meta.ID, b.meta.ID) })
	if err := r.loadAll(ctx, bs); err != nil {
		r.release(bs)
		return nil, err
	}
	return bs, nil
}

// release ends a hold of each of bs: a block that left the bucket is
// deleted with its last hold, and the cache shrinks to its bound.
func (r *Reader) release(bs []*block) {
	var idle []*block
	r.mu.Lock()
	for _, b := range bs {
		b.refs--
		if b.refs == 0 && b.dropped && b.sub != nil {
			r.bytes -= b.size
			idle = append(idle, b)
		}
	}
	idle = append(idle, r.evictLocked()...)
	r.mu.Unlock()
	for _, b := range idle {
		b.destroy()
	}
}

// evictLocked detaches, least recently acquired first, the downloaded
// blocks that no read holds until the cache is within its bound, and
// returns them for the caller to destroy outside the lock.
func (r *Reader) evictLocked() []*block {
	if r.opts.MaxCacheBytes < 0 {
		return nil
	}
	var victims []*block
	for r.bytes > r.opts.MaxCacheBytes {
		var lru *block
		for _, b := range r.blocks {
			if b.sub != nil && b.refs == 0 && (lru == nil || b.used < lru.used) {
				lru = b
			}
		}
		if lru == nil {
			break
		}
		victims = append(victims, &block{meta: lru.meta, sub: lru.sub, dir: lru.dir})
		lru.sub = nil
		r.bytes -= lru.size
		r.m.evictions.Inc()
		r.logger.Debug("block_evicted", "block", lru.meta.ID, "bytes", lru.size)
	}
	return victims
}

// loadAll downloads the blocks of bs that are not, a few at a time, and
// returns the first error. The caller holds bs.
func (r *Reader) loadAll(ctx context.Context, bs []*block) error {
	sem := make(chan struct{}, downloadConcurrency)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	for _, b := range bs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := r.load(ctx, b); err != nil {
				errMu.Lock()
				if first == nil {
					first = fmt.Errorf("block %s: %w", b.meta.ID, err)
				}
				errMu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// load returns once the caller's held block b is downloaded and open, or
// ctx ended, or the download failed. The download runs in the reader's
// lifetime, not ctx: the first read that needs b starts it, and it
// completes for the others if that read gives up.
func (r *Reader) load(ctx context.Context, b *block) error {
	r.mu.Lock()
	if b.sub != nil {
		r.mu.Unlock()
		return nil
	}
	d := b.loading
	if d == nil {
		if r.stopped || r.ctx.Err() != nil {
			r.mu.Unlock()
			return errors.New("block reader stopped")
		}
		d = &inflight{done: make(chan struct{})}
		b.loading = d
		b.refs++ // the download's own hold
		r.bytes += b.size
		r.seq++
		// A directory of its own: an evicted copy's may still be deleted.
		dir := filepath.Join(r.opts.CacheDir, fmt.Sprintf("%s.%d", b.meta.ID, r.seq))
		idle := r.evictLocked()
		r.wg.Add(1)
		go r.download(b, d, dir)
		r.mu.Unlock()
		for _, v := range idle {
			v.destroy()
		}
	} else {
		r.mu.Unlock()
	}
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// download fetches and opens b, then ends d and its hold of b.
func (r *Reader) download(b *block, d *inflight, dir string) {
	defer r.wg.Done()
	sub, err := r.fetch(r.ctx, b.meta, dir)
	r.mu.Lock()
	b.loading = nil
	if err != nil {
		r.bytes -= b.size
		d.err = err
	} else {
		b.sub, b.dir = sub, dir
	}
	r.mu.Unlock()
	if err != nil {
		r.m.downloadFailures.Inc()
		r.logger.Warn("block_download_failed", "block", b.meta.ID, "err", err)
	} else {
		r.m.downloads.Inc()
	}
	close(d.done)
	r.release([]*block{b})
}

// fetch downloads m's files into dir and opens them.
func (r *Reader) fetch(ctx context.Context, m *Meta, dir string) (*storage.Substrate, error) {
	_ = os.RemoveAll(dir)
	if err := download(ctx, r.bucket, m, dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	sopts := blockStore(storage.DefaultOptions(), r.logger.With("block", m.ID))
	sopts.BlockCacheBytes = r.opts.BlockCacheBytes
	sub, err := storage.OpenSubstrate(ctx, dir, sopts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open block store: %w", err)
	}
	r.logger.Info("block_loaded", "block", m.ID, "min_time", m.MinTime, "max_time", m.MaxTime, "bytes", m.Stats.Bytes)
	return sub, nil
}
