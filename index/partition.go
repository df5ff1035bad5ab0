package index

import (
	"fmt"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// nameKey identifies one label name of one kind inside a partition.
type nameKey struct {
	kind Kind
	name uint32 // symbol ref
}

// nameEntry holds the postings of one label name of one kind.
type nameEntry struct {
	// all holds every stream that has the label: `name=~".+"` and
	// `name!=""` are this one bitmap, not a union over all values.
	all    *roaring64.Bitmap
	values map[uint32]*roaring64.Bitmap // value symbol ref → streams
}

// partition is the postings of one time partition [num*d, (num+1)*d).
//
// A cold partition (loaded == false, from disk at Open) only knows its
// per-kind stream sets; its postings are read from Pebble on first use.
type partition struct {
	num int64

	mu      sync.RWMutex
	loaded  bool
	dropped bool                        // removed by DropPartitionsBefore; writers retry
	all     [numKinds]*roaring64.Bitmap // all[kind]: streams of kind marked here
	names   map[nameKey]*nameEntry
	pending *roaring64.Bitmap // streams added since the last Persist
}

func newPartition(num int64) *partition {
	p := &partition{num: num, loaded: true, names: map[nameKey]*nameEntry{}, pending: roaring64.New()}
	for k := range p.all {
		p.all[k] = roaring64.New()
	}
	return p
}

// addLocked adds stream id with label refs to the postings; mu must be held.
func (p *partition) addLocked(kind Kind, id ID, refs []uint32) {
	u := uint64(id)
	p.all[kind].Add(u)
	p.pending.Add(u)
	for i := 0; i+1 < len(refs); i += 2 {
		nk := nameKey{kind: kind, name: refs[i]}
		ne := p.names[nk]
		if ne == nil {
			ne = &nameEntry{all: roaring64.New(), values: make(map[uint32]*roaring64.Bitmap, 1)}
			p.names[nk] = ne
		}
		ne.all.Add(u)
		bm := ne.values[refs[i+1]]
		if bm == nil {
			bm = roaring64.New()
			ne.values[refs[i+1]] = bm
		}
		bm.Add(u)
	}
}

// removeLocked removes stream id with label refs from the postings, dropping
// emptied bitmaps; mu must be held and the partition loaded.
func (p *partition) removeLocked(kind Kind, id ID, refs []uint32) {
	u := uint64(id)
	p.all[kind].Remove(u)
	p.pending.Remove(u)
	for i := 0; i+1 < len(refs); i += 2 {
		nk := nameKey{kind: kind, name: refs[i]}
		ne := p.names[nk]
		if ne == nil {
			continue
		}
		ne.all.Remove(u)
		if bm := ne.values[refs[i+1]]; bm != nil {
			bm.Remove(u)
			if bm.IsEmpty() {
				delete(ne.values, refs[i+1])
			}
		}
		if ne.all.IsEmpty() {
			delete(p.names, nk)
		}
	}
}

// partitionFor returns the loaded partition num (clamped to the oldest
// retained one), creating it if needed. It is the write path's lookup: the
// newest partition is one atomic load.
func (ix *Index) partitionFor(num int64) *partition {
	if h := ix.head.Load(); h != nil && h.num == num {
		return h
	}
	ix.partsMu.RLock()
	if num < ix.minPart {
		num = ix.minPart
	}
	p := ix.parts[num]
	ix.partsMu.RUnlock()
	if p == nil {
		ix.partsMu.Lock()
		if num < ix.minPart {
			num = ix.minPart
		}
		if p = ix.parts[num]; p == nil {
			p = newPartition(num)
			ix.parts[num] = p
			if h := ix.head.Load(); h == nil || h.num < num {
				ix.head.Store(p)
			}
		}
		ix.partsMu.Unlock()
	}
	if err := ix.ensureLoaded(p); err != nil {
		// The on-disk partition is unreadable. Writing into it would make the
		// next Persist merge into keys we cannot read; the caller has no error
		// path (Touch), so log and keep the in-memory state consistent by
		// starting it empty over what is on disk.
		ix.logger.Error("index_partition_load_failed", "partition", num, "err", err)
		p.mu.Lock()
		if !p.loaded {
			p.names = map[nameKey]*nameEntry{}
			p.pending = roaring64.New()
			p.loaded = true
		}
		p.mu.Unlock()
	}
	return p
}

// partitionsIn returns the partitions overlapping [mint, maxt] in ascending
// order, loading cold ones.
func (ix *Index) partitionsIn(mint, maxt int64) ([]*partition, error) {
	if mint > maxt {
		return nil, nil
	}
	lo, hi := ix.partOf(mint), ix.partOf(maxt)
	ix.partsMu.RLock()
	var ps []*partition
	for num, p := range ix.parts {
		if num >= lo && num <= hi {
			ps = append(ps, p)
		}
	}
	ix.partsMu.RUnlock()
	slices.SortFunc(ps, func(a, b *partition) int { return cmpInt64(a.num, b.num) })
	for _, p := range ps {
		if err := ix.ensureLoaded(p); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// allPartitions returns every partition, loaded or not, in ascending order.
func (ix *Index) allPartitions() []*partition {
	ix.partsMu.RLock()
	ps := make([]*partition, 0, len(ix.parts))
	for _, p := range ix.parts {
		ps = append(ps, p)
	}
	ix.partsMu.RUnlock()
	slices.SortFunc(ps, func(a, b *partition) int { return cmpInt64(a.num, b.num) })
	return ps
}

// ensureLoaded reads a cold partition's postings from Pebble.
func (ix *Index) ensureLoaded(p *partition) error {
	p.mu.RLock()
	loaded := p.loaded
	p.mu.RUnlock()
	if loaded {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded {
		return nil
	}
	names, err := ix.readPartitionPostings(p.num)
	if err != nil {
		return fmt.Errorf("load partition %d: %w", p.num, err)
	}
	// The per-kind sets are authoritative (kept current by Delete even while
	// the partition is cold): clip the postings to them.
	for nk, ne := range names {
		ne.all.And(p.all[nk.kind])
		for v, bm := range ne.values {
			bm.And(p.all[nk.kind])
			if bm.IsEmpty() {
				delete(ne.values, v)
			}
		}
		if ne.all.IsEmpty() {
			delete(names, nk)
		}
	}
	p.names = names
	p.pending = roaring64.New()
	p.loaded = true
	return nil
}

// readPartitionPostings reads every pair postings list of partition num.
func (ix *Index) readPartitionPostings(num int64) (map[nameKey]*nameEntry, error) {
	lower := appendPartPrefix(nil, num)
	lower = append(lower, subPair)
	upper := appendPartPrefix(nil, num)
	upper = append(upper, subPair+1)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("new iterator: %w", err)
	}
	defer it.Close()
	names := map[nameKey]*nameEntry{}
	for it.First(); it.Valid(); it.Next() {
		k, err := decodeKey(it.Key())
		if err != nil || k.Type != keyPair {
			return nil, fmt.Errorf("key %q: %w", it.Key(), ErrCorrupt)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("read postings %q: %w", it.Key(), err)
		}
		bm, err := decodeBitmapValue(v)
		if err != nil {
			return nil, fmt.Errorf("postings %q: %w", it.Key(), err)
		}
		if bm.IsEmpty() {
			continue
		}
		nk := nameKey{kind: k.Kind, name: ix.syms.intern(string(k.Name))}
		ne := names[nk]
		if ne == nil {
			ne = &nameEntry{all: roaring64.New(), values: map[uint32]*roaring64.Bitmap{}}
			names[nk] = ne
		}
		ne.values[ix.syms.intern(string(k.Value))] = bm
		ne.all.Or(bm)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("iterate postings: %w", err)
	}
	return names, nil
}
