package index

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// nameEntry holds the postings of one label name of one kind.
type nameEntry struct {
	// all holds every stream that has the label: `name=~".+"` and
	// `name!=""` are this one bitmap, not a union over all values. While
	// every stream of the kind in the partition has the label (aliased),
	// all is the partition's per-kind bitmap itself, so the write path
	// adds to one bitmap instead of two. Nothing modifies all in place
	// except the write path, which knows.
	all    *roaring64.Bitmap
	values postMap // value ref (in the name's dictionary) → streams

	// Prefix matchers (`pod=~"train-.*"`) binary-search the values sorted
	// by string instead of testing them all. New values go to recent
	// (appended under the partition's write lock); a reader under the read
	// lock merges recent into sorted when it has grown, so the write path
	// never sorts. Both may hold refs of values since removed: readers check
	// values.
	recent []uint32
	sortMu sync.Mutex
	sorted []uint32 // guarded by sortMu; replaced, never modified in place

	// Write buffers (see postTail), guarded by the partition's write lock.
	// hotRef is the value most recently added to and hotBm its bitmap
	// (nil: none, or the value's postings are still a small list): streams
	// of one target arrive together and share most values, so this skips
	// the values map as well.
	allTail postTail // IDs not yet in all
	hotRef  uint32
	hotBm   *roaring64.Bitmap
	hotTail postTail // IDs not yet in hotBm
	dirty   bool     // listed in partition.dirtyNames
	aliased bool     // all is partition.all[kind]; listed in partition.aliased[kind]
	seen    uint64   // partition.adds when last added to
}

func newNameEntry() *nameEntry {
	return &nameEntry{all: roaring64.New()}
}

// nameTable holds a partition's postings by kind, then name ref: a slice
// index, not a map probe, on the write path.
type nameTable [numKinds][]*nameEntry

// get returns the entry of (kind, nameRef), nil if absent.
func (t *nameTable) get(kind Kind, nameRef uint32) *nameEntry {
	if int64(nameRef) >= int64(len(t[kind])) {
		return nil
	}
	return t[kind][nameRef]
}

// getOrCreate returns the entry of (kind, nameRef), adding it if needed.
func (t *nameTable) getOrCreate(kind Kind, nameRef uint32) *nameEntry {
	if int(nameRef) >= len(t[kind]) {
		t[kind] = append(t[kind], make([]*nameEntry, int(nameRef)+1-len(t[kind]))...)
	}
	ne := t[kind][nameRef]
	if ne == nil {
		ne = newNameEntry()
		t[kind][nameRef] = ne
	}
	return ne
}

// each calls f for every non-empty entry of kind (KindAny: every kind).
func (t *nameTable) each(kind Kind, f func(k Kind, nameRef uint32, ne *nameEntry)) {
	for _, k := range kindsOf(kind) {
		for ref, ne := range t[k] {
			if ne != nil {
				f(k, uint32(ref), ne)
			}
		}
	}
}

// postTailLen is how many IDs one postings bitmap buffers before they go in
// with one roaring AddMany. Most of a roaring Add is finding the container
// (two levels of key arrays, a copy-on-write check); AddMany does that once
// per batch. 8 keeps AddMany's per-call scratch (8 uint32, 32 bytes) on the
// stack.
const postTailLen = 8

// postTail buffers IDs added to one bitmap. Its owner passes the bitmap, so
// a bitmap that is replaced (pending, at Persist) needs no bookkeeping here.
type postTail struct {
	n   int
	ids [postTailLen]uint64
}

func (t *postTail) add(bm *roaring64.Bitmap, id uint64) {
	if t.n == postTailLen {
		t.flush(bm)
	}
	t.ids[t.n] = id
	t.n++
}

func (t *postTail) flush(bm *roaring64.Bitmap) {
	if t.n > 0 {
		bm.AddMany(t.ids[:t.n])
		t.n = 0
	}
}

func (t *postTail) contains(id uint64) bool {
	for _, x := range t.ids[:t.n] {
		if x == id {
			return true
		}
	}
	return false
}

// partition is the postings of one time partition [num*d, (num+1)*d).
//
// A cold partition (loaded == false, from disk at Open) only knows its
// per-kind stream sets; its postings are read from Pebble on first use.
//
// Writers add IDs to per-bitmap buffers (postTail) under mu; whoever reads
// bitmaps first flushes them: readers through rlock, holders of the write
// lock through flushLocked. A reader sees every add that completed before it
// called rlock.
type partition struct {
	num int64

	mu      sync.RWMutex
	loaded  bool
	dropped bool                        // removed by DropPartitionsBefore; writers retry
	all     [numKinds]*roaring64.Bitmap // all[kind]: streams of kind marked here
	names   nameTable
	pending *roaring64.Bitmap // streams added since the last Persist

	allTail     [numKinds]postTail // IDs not yet in all[kind]
	pendingTail postTail           // IDs not yet in pending
	dirtyNames  []*nameEntry       // entries with buffered IDs
	buffered    atomic.Bool        // some IDs are buffered; written under mu
	aliased     [numKinds][]*nameEntry
	adds        uint64 // addLocked calls, to tell the entries of the current add
}

// flushLocked adds every buffered ID to its bitmap; mu must be held for
// writing.
func (p *partition) flushLocked() {
	if !p.buffered.Load() {
		return
	}
	for k := range p.allTail {
		p.allTail[k].flush(p.all[k])
	}
	p.pendingTail.flush(p.pending)
	for _, ne := range p.dirtyNames {
		ne.allTail.flush(ne.all)
		ne.hotTail.flush(ne.hotBm)
		ne.dirty = false
	}
	clear(p.dirtyNames)
	p.dirtyNames = p.dirtyNames[:0]
	p.buffered.Store(false)
}

// rlock flushes buffered IDs if there are any, then read-locks mu.
func (p *partition) rlock() {
	if p.buffered.Load() {
		p.mu.Lock()
		p.flushLocked()
		p.mu.Unlock()
	}
	p.mu.RLock()
}

// containsLocked reports whether id of kind is marked in p, buffered or not;
// mu must be held for writing.
func (p *partition) containsLocked(kind Kind, id ID) bool {
	return p.allTail[kind].contains(uint64(id)) || p.all[kind].Contains(uint64(id))
}

func newPartition(num int64) *partition {
	p := &partition{num: num, loaded: true, pending: roaring64.New()}
	for k := range p.all {
		p.all[k] = roaring64.New()
	}
	return p
}

// addLocked adds stream id with label refs to the postings (buffered); mu
// must be held for writing.
func (p *partition) addLocked(kind Kind, id ID, refs []uint32) {
	u := uint64(id)
	p.adds++
	first := p.allTail[kind].n == 0 && p.all[kind].IsEmpty()
	for i := 0; i+1 < len(refs); i += 2 {
		ne := p.names.get(kind, refs[i])
		if ne == nil {
			ne = p.names.getOrCreate(kind, refs[i])
			if first { // every stream of the kind (this one) has the label
				ne.all, ne.aliased = p.all[kind], true
				p.aliased[kind] = append(p.aliased[kind], ne)
			}
		}
		ne.seen = p.adds
	}
	// An aliased label this stream lacks gets a bitmap of its own (without
	// this stream) before the stream goes into all[kind].
	for j := 0; j < len(p.aliased[kind]); j++ {
		if ne := p.aliased[kind][j]; ne.seen != p.adds {
			p.allTail[kind].flush(p.all[kind])
			ne.all, ne.aliased = p.all[kind].Clone(), false
			p.unalias(kind, j)
			j--
		}
	}
	p.allTail[kind].add(p.all[kind], u)
	p.pendingTail.add(p.pending, u)
	for i := 0; i+1 < len(refs); i += 2 {
		ne := p.names.get(kind, refs[i])
		if !ne.dirty {
			ne.dirty = true
			p.dirtyNames = append(p.dirtyNames, ne)
		}
		if !ne.aliased {
			ne.allTail.add(ne.all, u)
		}
		if v := refs[i+1]; ne.hotBm == nil || ne.hotRef != v {
			ne.hotTail.flush(ne.hotBm)
			ne.hotBm = nil
			pl, ok := ne.values.get(v)
			if !ok {
				ne.values.set(v, postList{one: u})
				ne.recent = append(ne.recent, v)
				continue
			}
			if pl.big() == nil {
				// Small list: add directly, no buffering.
				pl = pl.add(u)
				ne.values.set(v, pl)
				if bm := pl.big(); bm != nil { // just outgrew the slice
					ne.hotRef, ne.hotBm = v, bm
				}
				continue
			}
			ne.hotRef, ne.hotBm = v, pl.big()
		}
		ne.hotTail.add(ne.hotBm, u)
	}
	if !p.buffered.Load() {
		p.buffered.Store(true)
	}
}

// unalias drops entry j from p.aliased[kind].
func (p *partition) unalias(kind Kind, j int) {
	a := p.aliased[kind]
	a[j] = a[len(a)-1]
	a[len(a)-1] = nil
	p.aliased[kind] = a[:len(a)-1]
}

// removeLocked removes stream id with label refs from the postings, dropping
// emptied bitmaps; mu must be held and the partition loaded.
func (p *partition) removeLocked(kind Kind, id ID, refs []uint32) {
	p.flushLocked()
	u := uint64(id)
	p.all[kind].Remove(u)
	p.pending.Remove(u)
	for i := 0; i+1 < len(refs); i += 2 {
		ne := p.names.get(kind, refs[i])
		if ne == nil {
			continue
		}
		ne.all.Remove(u)
		if pl, ok := ne.values.get(refs[i+1]); ok {
			pl = pl.remove(u)
			if pl.empty() {
				ne.values.del(refs[i+1])
				if bm := pl.big(); bm != nil && ne.hotBm == bm {
					ne.hotBm = nil
				}
			} else {
				ne.values.set(refs[i+1], pl)
			}
		}
		if ne.all.IsEmpty() {
			if ne.aliased {
				p.unalias(kind, slices.Index(p.aliased[kind], ne))
			}
			p.names[kind][refs[i]] = nil
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
			p.names = nameTable{}
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
	names.each(KindAny, func(k Kind, nameRef uint32, ne *nameEntry) {
		ne.all.And(p.all[k])
		ne.values.filter(func(_ uint32, pl postList) (postList, bool) {
			pl = pl.and(p.all[k])
			return pl, !pl.empty()
		})
		if ne.all.IsEmpty() {
			names[k][nameRef] = nil
		}
	})
	p.names = names
	p.pending = roaring64.New()
	p.loaded = true
	return nil
}

// readPartitionPostings reads every pair postings list of partition num.
func (ix *Index) readPartitionPostings(num int64) (nameTable, error) {
	var names nameTable
	lower := appendPartPrefix(nil, num)
	lower = append(lower, subPair)
	upper := appendPartPrefix(nil, num)
	upper = append(upper, subPair+1)
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return names, fmt.Errorf("new iterator: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, err := decodeKey(it.Key())
		if err != nil || k.Type != keyPair {
			return names, fmt.Errorf("key %q: %w", it.Key(), ErrCorrupt)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return names, fmt.Errorf("read postings %q: %w", it.Key(), err)
		}
		bm, err := decodeBitmapValue(v)
		if err != nil {
			return names, fmt.Errorf("postings %q: %w", it.Key(), err)
		}
		if bm.IsEmpty() {
			continue
		}
		nameRef, valueRef := ix.syms.internPair(string(k.Name), string(k.Value))
		ne := names.getOrCreate(k.Kind, nameRef)
		ne.all.Or(bm)
		ne.values.set(valueRef, postListOf(bm))
		ne.recent = append(ne.recent, valueRef)
	}
	if err := it.Error(); err != nil {
		return names, fmt.Errorf("iterate postings: %w", err)
	}
	return names, nil
}
