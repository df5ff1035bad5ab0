package index

import (
	"context"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// DropPartitionsBefore drops, for every kind, the postings of every
// partition that ends at or before t (milliseconds): DropKindBefore for each
// kind at once.
func (ix *Index) DropPartitionsBefore(ctx context.Context, t int64) error {
	return ix.dropBefore(ctx, kindsOf(KindAny), t)
}

// DropKindBefore drops the postings of kind (not KindAny) in every partition
// that ends at or before t (milliseconds), leaving other kinds' postings in
// those partitions alone: each signal has its own retention. Streams of kind
// marked in no remaining partition are forgotten (registry record deleted;
// their IDs are never reused). A partition left with no stream of any kind
// goes entirely; once every kind has dropped a partition, later writes with
// timestamps in it mark the oldest remaining one instead. The change is
// durable when it returns.
func (ix *Index) DropKindBefore(ctx context.Context, kind Kind, t int64) error {
	if !kind.valid() {
		return fmt.Errorf("drop partitions of kind %d: %w", kind, ErrInvalidKind)
	}
	return ix.dropBefore(ctx, []Kind{kind}, t)
}

func (ix *Index) dropBefore(ctx context.Context, kinds []Kind, t int64) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	cut := ix.partOf(t)

	// Every pass looks at every partition below the cut, not only those
	// since the last cut: a late write may have marked one again.
	todo := kinds
	changed := false
	b := ix.db.NewBatch()
	defer b.Close()
	var key, key2 []byte
	candidates := [numKinds]*roaring64.Bitmap{}
	for _, k := range todo {
		candidates[k] = roaring64.New()
	}
	var emptied []int64
	for _, p := range ix.allPartitions() {
		if p.num >= cut {
			break
		}
		p.mu.Lock()
		p.flushLocked()
		for _, k := range todo {
			ids := p.all[k]
			if ids.IsEmpty() {
				continue
			}
			changed = true
			candidates[k].Or(ids)
			p.pending.AndNot(ids)
			p.all[k] = roaring64.New()
			p.names[k] = nil
			p.aliased[k] = nil
			if err := b.Delete(appendKindKey(key[:0], p.num, k), nil); err != nil {
				p.mu.Unlock()
				return fmt.Errorf("drop partition %d kind %d: %w", p.num, k, err)
			}
			key = appendKindPairPrefix(key[:0], p.num, k)
			key2 = appendKindPairPrefix(key2[:0], p.num, k+1)
			if err := b.DeleteRange(key, key2, nil); err != nil {
				p.mu.Unlock()
				return fmt.Errorf("drop partition %d kind %d: %w", p.num, k, err)
			}
		}
		empty := true
		for k := range p.all {
			if !p.all[k].IsEmpty() {
				empty = false
			}
		}
		if empty {
			p.dropped = true
			emptied = append(emptied, p.num)
		}
		p.mu.Unlock()
	}
	for _, k := range todo {
		ix.kindCut[k] = max(ix.kindCut[k], cut)
	}
	// A partition every kind has dropped goes from memory and disk; writes
	// below the smallest cut of all kinds mark the oldest remaining
	// partition.
	minCut := int64(math.MaxInt64)
	for _, k := range kindsOf(KindAny) {
		minCut = min(minCut, ix.kindCut[k])
	}
	ix.partsMu.Lock()
	for _, num := range emptied {
		delete(ix.parts, num)
		if h := ix.head.Load(); h != nil && h.num == num {
			ix.head.Store(nil) // the next write creates the partition it needs
		}
	}
	if minCut > ix.minPart {
		ix.minPart = minCut
	}
	ix.partsMu.Unlock()
	for _, num := range emptied {
		if err := b.DeleteRange(appendPartPrefix(key[:0], num), appendPartPrefix(key2[:0], num+1), nil); err != nil {
			return fmt.Errorf("drop partition %d: %w", num, err)
		}
	}

	// Streams still marked in a remaining partition stay.
	for _, p := range ix.allPartitions() {
		if p.num < cut {
			continue
		}
		p.rlock()
		for _, k := range todo {
			candidates[k].AndNot(p.all[k])
		}
		p.mu.RUnlock()
	}
	forgotten := roaring64.New()
	i := 0
	for _, k := range todo {
		it := candidates[k].Iterator()
		for ; it.HasNext(); i++ {
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
	}
	if err := ix.batchDeleteRecords(b, forgotten); err != nil {
		return fmt.Errorf("drop partitions before %d: %w", cut, err)
	}
	ix.pendingMu.Lock()
	ix.pendingNew.AndNot(forgotten)
	ix.pendingMu.Unlock()
	if !changed && len(emptied) == 0 {
		return nil
	}
	if err := ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("drop partitions before %d: commit: %w", cut, err)
	}
	ix.logger.Info("index_partitions_dropped", "before", cut, "kinds", fmt.Sprint(todo), "partitions_emptied", len(emptied), "streams_forgotten", forgotten.GetCardinality())
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
	if err := ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("delete streams: commit: %w", err)
	}
	return nil
}
