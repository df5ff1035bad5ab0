package index

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// DropPartitionsBefore drops every partition that ends at or before t
// (milliseconds): their postings go with one Pebble DeleteRange, and streams
// marked in no remaining partition are forgotten (registry record deleted;
// their IDs are never reused). Later writes with timestamps in a dropped
// partition mark the oldest remaining one instead. The change is durable when
// it returns.
func (ix *Index) DropPartitionsBefore(ctx context.Context, t int64) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	cut := ix.partOf(t)

	ix.partsMu.Lock()
	if cut <= ix.minPart {
		ix.partsMu.Unlock()
		return nil
	}
	var dropped []*partition
	for num, p := range ix.parts {
		if num < cut {
			dropped = append(dropped, p)
			delete(ix.parts, num)
		}
	}
	ix.minPart = cut
	if h := ix.head.Load(); h != nil && h.num < cut {
		ix.head.Store(nil) // the next write creates the partition it needs
	}
	ix.partsMu.Unlock()

	candidates := roaring64.New()
	for _, p := range dropped {
		p.mu.Lock()
		p.flushLocked()
		p.dropped = true
		for _, bm := range p.all {
			candidates.Or(bm)
		}
		p.mu.Unlock()
	}
	// Streams still marked in a remaining partition stay.
	for _, p := range ix.allPartitions() {
		p.rlock()
		for _, bm := range p.all {
			candidates.AndNot(bm)
		}
		p.mu.RUnlock()
	}

	b := ix.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(appendPartPrefix(nil, minPartNum), appendPartPrefix(nil, cut), nil); err != nil {
		return fmt.Errorf("drop partitions before %d: %w", cut, err)
	}
	forgotten := roaring64.New()
	it := candidates.Iterator()
	for i := 0; it.HasNext(); i++ {
		if err := checkCtx(ctx, i); err != nil {
			return fmt.Errorf("drop partitions before %d: %w", cut, err)
		}
		id := ID(it.Next())
		// A write may have marked it in a remaining partition meanwhile.
		if _, ok := ix.forget(id, func(r streamRec) bool { return r.lastPart >= cut }); !ok {
			continue
		}
		forgotten.Add(uint64(id))
	}
	if err := ix.batchDeleteRecords(b, forgotten); err != nil {
		return fmt.Errorf("drop partitions before %d: %w", cut, err)
	}
	ix.pendingMu.Lock()
	ix.pendingNew.AndNot(forgotten)
	ix.pendingMu.Unlock()
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("drop partitions before %d: commit: %w", cut, err)
	}
	ix.logger.Info("index_partitions_dropped", "before", cut, "partitions", len(dropped), "streams_forgotten", forgotten.GetCardinality())
	return nil
}

// minPartNum is the smallest partition number; its key prefix is the lowest.
const minPartNum = -1 << 63

// Delete removes the streams ids entirely: registry records and postings in
// every partition, in memory and on disk (durable when it returns). Unknown
// IDs are ignored. IDs are never reused. Streams created again with the same
// labels get new IDs.
func (ix *Index) Delete(ctx context.Context, ids *roaring64.Bitmap) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()

	// Forget first: from then on Touch cannot mark these streams again.
	type gone struct {
		kind Kind
		refs []uint32
	}
	removed := map[ID]gone{}
	removedIDs := roaring64.New()
	b := ix.db.NewBatch()
	defer b.Close()
	var key []byte
	it := ids.Iterator()
	for i := 0; it.HasNext(); i++ {
		if err := checkCtx(ctx, i); err != nil {
			return fmt.Errorf("delete streams: %w", err)
		}
		id := ID(it.Next())
		r, ok := ix.forget(id, nil)
		if !ok {
			continue
		}
		refs, err := decodeLabelRefs(nil, r.enc)
		if err != nil {
			panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
		}
		removed[id] = gone{kind: r.kind, refs: refs}
		removedIDs.Add(uint64(id))
	}
	if len(removed) == 0 {
		return nil
	}
	if err := ix.batchDeleteRecords(b, removedIDs); err != nil {
		return fmt.Errorf("delete streams: %w", err)
	}
	ix.pendingMu.Lock()
	for id := range removed {
		ix.pendingNew.Remove(uint64(id))
	}
	ix.pendingMu.Unlock()

	for _, p := range ix.allPartitions() {
		kinds := [numKinds]*roaring64.Bitmap{}
		deltas := map[pairDelta]*roaring64.Bitmap{}
		p.mu.Lock()
		p.flushLocked()
		for id, g := range removed {
			if !p.all[g.kind].Contains(uint64(id)) {
				continue
			}
			if kinds[g.kind] == nil {
				kinds[g.kind] = roaring64.New()
			}
			kinds[g.kind].Add(uint64(id))
			for j := 0; j+1 < len(g.refs); j += 2 {
				d := pairDelta{kind: g.kind, name: g.refs[j], value: g.refs[j+1]}
				if deltas[d] == nil {
					deltas[d] = roaring64.New()
				}
				deltas[d].Add(uint64(id))
			}
			if p.loaded {
				p.removeLocked(g.kind, id, g.refs)
			} else {
				p.all[g.kind].Remove(uint64(id))
			}
		}
		p.mu.Unlock()
		// Removal edits apply to whatever is on disk, loaded or not.
		for k, bm := range kinds {
			if bm == nil {
				continue
			}
			if err := ix.batchEdit(b, appendKindKey(key[:0], p.num, Kind(k)), bm, nil); err != nil {
				return fmt.Errorf("delete streams: %w", err)
			}
		}
		for d, bm := range deltas {
			n, _ := ix.syms.name(d.name)
			v, _ := ix.syms.value(d.name, d.value)
			if err := ix.batchEdit(b, appendPairKey(key[:0], p.num, d.kind, n, v), bm, nil); err != nil {
				return fmt.Errorf("delete streams: %w", err)
			}
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete streams: commit: %w", err)
	}
	return nil
}
