package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/internal/record"
)

// tombPrefix is 0x05 't': tombstone keys (docs/format/chunks.md).
var tombPrefix = []byte{tagMeta, 't'}

// interval is a closed time range [mint, maxt].
type interval struct{ mint, maxt int64 }

func (iv interval) contains(t int64) bool { return t >= iv.mint && t <= iv.maxt }

// tombstones is the in-memory view of deleted ranges per series. Safe for
// concurrent use.
type tombstones struct {
	mu sync.RWMutex
	m  map[uint64][]interval
}

func (ts *tombstones) init() { ts.m = map[uint64][]interval{} }

func (ts *tombstones) add(id uint64, iv interval) {
	ts.mu.Lock()
	if !slices.Contains(ts.m[id], iv) {
		ts.m[id] = append(ts.m[id], iv)
	}
	ts.mu.Unlock()
}

// get returns the deleted intervals of id (shared; do not modify).
func (ts *tombstones) get(id uint64) []interval {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if len(ts.m) == 0 {
		return nil
	}
	return ts.m[id]
}

func (ts *tombstones) snapshot() map[uint64][]interval {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := make(map[uint64][]interval, len(ts.m))
	for k, v := range ts.m {
		out[k] = slices.Clone(v)
	}
	return out
}

func appendTombKey(dst []byte, id uint64, iv interval) []byte {
	dst = append(dst, tombPrefix...)
	dst = binary.BigEndian.AppendUint64(dst, id)
	dst = binary.BigEndian.AppendUint64(dst, orderedInt(iv.mint))
	return binary.BigEndian.AppendUint64(dst, orderedInt(iv.maxt))
}

func (db *DB) loadTombstones() error {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: tombPrefix, UpperBound: []byte{tagMeta, 't' + 1}})
	if err != nil {
		return fmt.Errorf("tombstone iterator: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if id, iv, ok := parseTombKey(it.Key()); ok {
			db.tombs.add(id, iv)
		}
	}
	return it.Error()
}

// parseTombKey decodes a key written by appendTombKey; false for any other
// bytes (a key of another length is skipped, not fatal).
func parseTombKey(k []byte) (id uint64, iv interval, ok bool) {
	if len(k) != len(tombPrefix)+24 || string(k[:len(tombPrefix)]) != string(tombPrefix) {
		return 0, interval{}, false
	}
	k = k[len(tombPrefix):]
	return binary.BigEndian.Uint64(k), interval{fromOrdered(binary.BigEndian.Uint64(k[8:])), fromOrdered(binary.BigEndian.Uint64(k[16:]))}, true
}

// DeleteSeries marks [mint, maxt] of every series matching ms as deleted.
// Queries stop returning those samples as soon as it returns; the space is
// reclaimed by CleanTombstones or the next compaction. Tombstones are synced
// to Pebble and logged to the WAL.
func (db *DB) DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	if db.closed.Load() {
		return ErrClosed
	}
	ids, err := db.idx.Postings(ctx, minInt64, maxInt64, ms...)
	if err != nil {
		return fmt.Errorf("delete postings: %w", err)
	}
	if ids.IsEmpty() {
		return nil
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	var recs []record.Tombstone
	var key []byte
	it := ids.Iterator()
	for it.HasNext() {
		id := it.Next()
		recs = append(recs, record.Tombstone{ID: id, Mint: mint, Maxt: maxt})
		key = appendTombKey(key[:0], id, interval{mint, maxt})
		if err := b.Set(key, nil, nil); err != nil {
			return fmt.Errorf("batch tombstone: %w", err)
		}
	}
	db.commitMu.RLock()
	seq, err := db.wal.Log(walFrame(record.AppendTombstones(nil, recs)))
	db.commitMu.RUnlock()
	if err != nil {
		return fmt.Errorf("log tombstones: %w", err)
	}
	if err := db.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("write tombstones: %w", err)
	}
	for _, r := range recs {
		db.tombs.add(r.ID, interval{r.Mint, r.Maxt})
	}
	return db.wal.Sync(seq)
}

// CleanTombstones rewrites the chunks of every series with tombstones
// without the deleted samples (sealing the head of those series first), then
// removes the tombstones. Series left without data are dropped from the
// index.
func (db *DB) CleanTombstones(ctx context.Context) error {
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	return db.cleanTombstonesLocked(ctx)
}

func (db *DB) cleanTombstonesLocked(ctx context.Context) error {
	snap := db.tombs.snapshot()
	if len(snap) == 0 {
		return nil
	}
	empty := roaring64.New()
	for id, ivs := range snap {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := db.series.get(id)
		if s != nil {
			s.mu.Lock()
			db.sealLocked(s)
			s.mu.Unlock()
			if err := db.writePending([]*memSeries{s}); err != nil {
				return err
			}
			if err := db.flushOOO(s); err != nil {
				return err
			}
			s.mu.Lock()
		}
		// The partitions are listed after the series' pending chunks are
		// written: a partition that only those chunks create must be
		// rewritten too.
		left, err := db.rewriteWithout(id, ivs, db.parts.all())
		if s != nil {
			s.mu.Unlock()
		}
		if err != nil {
			return err
		}
		if !left && (s == nil || s.lastT.Load() == minInt64 || isDeleted(ivs, s.lastT.Load())) {
			empty.Add(id)
		}
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	var key []byte
	for id, ivs := range snap {
		for _, iv := range ivs {
			key = appendTombKey(key[:0], id, iv)
			if err := b.Delete(key, nil); err != nil {
				return fmt.Errorf("batch delete tombstone: %w", err)
			}
		}
	}
	if err := db.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("delete tombstones: %w", err)
	}
	db.tombs.mu.Lock()
	for id, ivs := range snap {
		db.tombs.m[id] = slices.DeleteFunc(db.tombs.m[id], func(iv interval) bool { return slices.Contains(ivs, iv) })
		if len(db.tombs.m[id]) == 0 {
			delete(db.tombs.m, id)
		}
	}
	db.tombs.mu.Unlock()
	if !empty.IsEmpty() {
		it := empty.Iterator()
		for it.HasNext() {
			db.series.remove(it.Next())
		}
		if err := db.idx.Delete(ctx, empty); err != nil {
			return fmt.Errorf("index delete: %w", err)
		}
	}
	return nil
}

func isDeleted(ivs []interval, t int64) bool {
	for _, iv := range ivs {
		if iv.contains(t) {
			return true
		}
	}
	return false
}

// rewriteWithout rewrites every chunk of id that overlaps a deleted interval
// and reports whether any sample of id remains in Pebble.
func (db *DB) rewriteWithout(id uint64, ivs []interval, parts []int64) (bool, error) {
	r, err := db.newChunkReader()
	if err != nil {
		return false, err
	}
	defer r.Close()
	chunks, err := r.read(id, minInt64, maxInt64, parts, nil)
	if err != nil {
		return false, err
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	left := false
	var key, val []byte
	for _, c := range chunks {
		hit := false
		for _, iv := range ivs {
			if iv.mint <= c.maxt && iv.maxt >= c.mint {
				hit = true
			}
		}
		if !hit {
			left = true
			continue
		}
		p := db.partOf(c.mint)
		key = appendChunkKey(key[:0], p, id, c.mint)
		if err := b.Delete(key, nil); err != nil {
			return false, fmt.Errorf("batch delete chunk: %w", err)
		}
		kept := slices.DeleteFunc(chunkSamples(c.enc, c.data, nil), func(x sample) bool { return isDeleted(ivs, x.t) })
		for _, nc := range db.encodeSamples(kept, max(c.n, db.opts.SamplesPerChunk)) {
			left = true
			key = appendChunkKey(key[:0], p, id, nc.mint)
			val = appendChunkValue(val[:0], nc)
			if err := b.Set(key, val, nil); err != nil {
				return false, fmt.Errorf("batch chunk: %w", err)
			}
		}
	}
	if err := db.ix.Commit(b, pebble.NoSync); err != nil {
		return false, fmt.Errorf("rewrite chunks: %w", err)
	}
	return left, nil
}
