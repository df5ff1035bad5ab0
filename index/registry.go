package index

import (
	"fmt"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// numShards is the number of lock shards of the registry's hash table. 256
// keeps contention negligible at the core counts weft runs on while the
// per-shard fixed cost stays small.
const numShards = 256

// hashShard maps label-set hashes to IDs. A 64-bit hash collides rarely but
// not never (about 3% odds for 1e9 streams), so every hit is verified
// against the stored label set; colliding streams take separate slots.
type hashShard struct {
	mu  sync.RWMutex
	ids idTable
	// inserts counts insertions (under mu): a creator that missed under the
	// read lock skips the second lookup under the write lock when no stream
	// was inserted in between.
	inserts uint64
	_       [16]byte // keep hot shards on separate cache lines
}

func (ix *Index) initShards() {
	ix.recs = newRecStore()
}

// streamHash (a variable so tests can force collisions) combines the label
// set's hash with the kind, so equal label sets of different kinds are
// different streams.
var streamHash = defaultStreamHash

func defaultStreamHash(kind Kind, ls labels.Labels) uint64 {
	return ls.Hash() ^ (uint64(kind) * 0x9E3779B97F4A7C15)
}

// tenantMix is what a stream's tenant adds to its hash: 0 for none, so the
// hashes of single-tenant streams are streamHash's.
func tenantMix(tid string) uint64 {
	if tid == "" {
		return 0
	}
	return xxhash.Sum64String(tid) * 0xC2B2AE3D27D4EB4F
}

// fullHash is the hash of the stream whose whole label set is ls, tenant
// label included: the same as a tenant stream's hash computed from its
// labels without the tenant label (GetOrCreateTenant's hot path).
func fullHash(kind Kind, ls labels.Labels) uint64 {
	if tid := ls.Get(tenant.LabelName); tid != "" {
		return streamHash(kind, tenant.Strip(ls)) ^ tenantMix(tid)
	}
	return streamHash(kind, ls)
}

func (ix *Index) hashShardOf(h uint64) *hashShard { return &ix.hashShards[(h>>56)%numShards] }

// rec returns the record of id.
func (ix *Index) rec(id ID) (streamRec, bool) { return ix.recs.get(id) }

// lookupLocked finds the stream (kind, ls plus tenant.LabelName=tid when
// tid is not "") in hs; hs.mu must be held.
func (ix *Index) lookupLocked(hs *hashShard, h uint64, kind Kind, tid string, ls labels.Labels) (ID, streamRec, bool) {
	t := &hs.ids
	if len(t.slots) == 0 {
		return 0, streamRec{}, false
	}
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, streamRec{}, false
		}
		if s.h != h {
			continue
		}
		if r, ok := ix.recs.getHashLocked(s.id); ok && r.kind == kind && ix.syms.equalLabels(r.enc, ls, tid) {
			return s.id, r, true
		}
	}
}

// insertHashLocked records h → id in hs; hs.mu must be held for writing.
func insertHashLocked(hs *hashShard, h uint64, id ID) {
	hs.inserts++
	hs.ids.insert(h, id)
}

// removeHashLocked removes h → id from hs; hs.mu must be held for writing.
func removeHashLocked(hs *hashShard, h uint64, id ID) {
	hs.ids.remove(h, id)
}

// encScratch is the stack buffer size for a label set's refs and encoding;
// larger sets spill to the heap.
const encScratch = 64

// GetOrCreate returns the ID of the stream (kind, ls), creating it if it is
// new, and marks it active in t's partition (t in milliseconds). created
// reports whether the stream is new. ls must be sorted with unique names, as
// labels.Labels guarantees. Creation is in memory only; Persist makes it
// durable. For an existing stream this is a hash lookup and a comparison
// with the stored label set under a shard read lock.
func (ix *Index) GetOrCreate(kind Kind, ls labels.Labels, t int64) (id ID, created bool, err error) {
	return ix.GetOrCreateFunc(kind, ls, t, nil)
}

// GetOrCreateFunc is GetOrCreate for callers that validate label sets before
// they are stored: check (nil: none) is called with ls only when (kind, ls)
// is not a known stream, before anything is interned or created, and an
// error from it is returned unwrapped with nothing created. A label set
// equal to a stored one passed check when it was created, so the lookup of
// an existing stream pays nothing for validation. check may run more than
// once for one ls (concurrent creators) and must not retain ls.
func (ix *Index) GetOrCreateFunc(kind Kind, ls labels.Labels, t int64, check func(labels.Labels) error) (id ID, created bool, err error) {
	if tid := ls.Get(tenant.LabelName); tid != "" {
		return ix.GetOrCreateTenant(kind, tid, tenant.Strip(ls), t, check)
	}
	return ix.GetOrCreateTenant(kind, "", ls, t, check)
}

// GetOrCreateTenant is GetOrCreateFunc for the stream of tenant tid ("":
// none) whose labels are ls plus tenant.LabelName=tid. ls must not have
// tenant.LabelName. Neither an existing stream nor a new one needs that
// label set built: the tenant's pair is matched and interned beside ls's,
// so a tenant's writes cost what single-tenant writes cost. check sees ls
// as given, without the tenant label.
func (ix *Index) GetOrCreateTenant(kind Kind, tid string, ls labels.Labels, t int64, check func(labels.Labels) error) (id ID, created bool, err error) {
	if !kind.valid() {
		return 0, false, fmt.Errorf("get or create stream: %w: %d", ErrInvalidKind, kind)
	}
	if ls.IsEmpty() {
		return 0, false, fmt.Errorf("get or create stream: %w", ErrEmptyLabels)
	}
	if ix.closed.Load() {
		return 0, false, ErrClosed
	}
	h := streamHash(kind, ls) ^ tenantMix(tid)
	hs := ix.hashShardOf(h)
	hs.mu.RLock()
	id, r, ok := ix.lookupLocked(hs, h, kind, tid, ls)
	inserts := hs.inserts
	hs.mu.RUnlock()
	if ok {
		ix.touchRec(id, r, t)
		return id, false, nil
	}
	if ls.Has(tenant.LabelName) {
		return 0, false, fmt.Errorf("get or create stream: %w", ErrReservedLabel)
	}
	if check != nil {
		if err := check(ls); err != nil {
			return 0, false, err
		}
	}
	if admit := ix.opts.AdmitNew; admit != nil {
		if err := admit(kind); err != nil {
			return 0, false, err
		}
	}

	var refBuf [encScratch]uint32
	refs := ix.syms.internTenantLabels(ls, tid, refBuf[:0])
	var encBuf [encScratch * 2]byte
	enc := ix.encs.copyOf(appendLabelRefs(encBuf[:0], refs))

	hs.mu.Lock()
	if hs.inserts != inserts {
		if id, r, ok := ix.lookupLocked(hs, h, kind, tid, ls); ok {
			hs.mu.Unlock()
			ix.touchRec(id, r, t)
			return id, false, nil
		}
	}
	id = ID(ix.nextID.Add(1) - 1)
	ix.insertLocked(hs, h, id, kind, enc, refs, t)
	hs.mu.Unlock()
	ix.noteCreated(id)
	return id, true, nil
}

// insertLocked registers a new stream and marks it in t's partition; hs.mu
// must be held for writing.
func (ix *Index) insertLocked(hs *hashShard, h uint64, id ID, kind Kind, enc string, refs []uint32, t int64) {
	insertHashLocked(hs, h, id)
	ix.numStreams[kind].Add(1)
	p := ix.partitionFor(ix.partOf(t))
	ix.recs.put(id, streamRec{enc: enc, lastPart: p.num, kind: kind})
	// After the record: Persist writes the record of every pending ID it
	// finds and skips IDs without one (deleted since).
	ix.pendingMu.Lock()
	ix.pendingNew.Add(uint64(id))
	ix.pendingMu.Unlock()
	// A new stream cannot be deleted concurrently (that needs hs, held
	// here), so it goes straight into its partition.
	for {
		p.mu.Lock()
		if !p.dropped {
			p.addLocked(kind, id, refs)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		// Dropped between lookup and lock: use the new oldest partition.
		p = ix.partitionFor(ix.partOf(t))
		ix.recs.raiseLastPart(id, p.num)
	}
}

// Restore re-inserts the stream (kind, ls) under a known id while the caller
// replays its write-ahead log. It is idempotent, marks the stream active in
// t's partition and advances the ID allocator past id. It returns
// ErrIDConflict if id names another stream or the stream has another ID.
func (ix *Index) Restore(kind Kind, id ID, ls labels.Labels, t int64) error {
	if !kind.valid() {
		return fmt.Errorf("restore stream %d: %w: %d", id, ErrInvalidKind, kind)
	}
	if ls.IsEmpty() {
		return fmt.Errorf("restore stream %d: %w", id, ErrEmptyLabels)
	}
	if id == 0 {
		return fmt.Errorf("restore stream: %w: id 0", ErrIDConflict)
	}
	if ix.closed.Load() {
		return ErrClosed
	}
	h := fullHash(kind, ls)
	hs := ix.hashShardOf(h)
	hs.mu.Lock()
	if got, r, ok := ix.lookupLocked(hs, h, kind, "", ls); ok {
		hs.mu.Unlock()
		if got != id {
			return fmt.Errorf("restore stream %d: %w: labels %s have id %d", id, ErrIDConflict, ls, got)
		}
		ix.advanceAlloc(id)
		ix.touchRec(id, r, t)
		return nil
	}
	if _, ok := ix.rec(id); ok {
		hs.mu.Unlock()
		return fmt.Errorf("restore stream %d: %w: id has other labels than %s", id, ErrIDConflict, ls)
	}
	var refBuf [encScratch]uint32
	refs := ix.syms.internLabels(ls, refBuf[:0])
	var encBuf [encScratch * 2]byte
	enc := ix.encs.copyOf(appendLabelRefs(encBuf[:0], refs))
	ix.advanceAlloc(id)
	ix.insertLocked(hs, h, id, kind, enc, refs, t)
	hs.mu.Unlock()
	return nil
}

// NextID returns the ID the next new stream would get: every stream created
// from now on has an ID at least this large.
func (ix *Index) NextID() ID { return ID(ix.nextID.Load()) }

// advanceAlloc makes sure id is never allocated again.
func (ix *Index) advanceAlloc(id ID) {
	for {
		cur := ix.nextID.Load()
		if cur > uint64(id) || ix.nextID.CompareAndSwap(cur, uint64(id)+1) {
			return
		}
	}
}

// Labels returns the label set of id, built with b (which may be nil), and
// whether id is known. The returned labels stay valid after b is reused only
// if the caller copies them, as with any ScratchBuilder.
func (ix *Index) Labels(id ID, b *labels.ScratchBuilder) (labels.Labels, bool) {
	r, ok := ix.rec(id)
	if !ok {
		return labels.EmptyLabels(), false
	}
	if b == nil {
		nb := labels.NewScratchBuilder(16)
		b = &nb
	}
	ls, err := ix.syms.buildLabels(r.enc, b)
	if err != nil {
		panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
	}
	return ls, true
}

// StreamKind returns the kind of id and whether id is known.
func (ix *Index) StreamKind(id ID) (Kind, bool) {
	r, ok := ix.rec(id)
	return r.kind, ok
}

// Touch marks id active in t's partition (t in milliseconds). It is a few
// lock-free loads and a compare when the stream is already marked there;
// unknown IDs are ignored.
func (ix *Index) Touch(id ID, t int64) {
	if ix.recs.lastPart(id) == ix.partOf(t) {
		return // marked there already (an unknown id reads math.MinInt64, which no partition number is)
	}
	if r, ok := ix.rec(id); ok {
		ix.touchRec(id, r, t)
	}
}

func (ix *Index) touchRec(id ID, r streamRec, t int64) {
	if r.lastPart == ix.partOf(t) {
		return
	}
	refs, err := decodeLabelRefs(make([]uint32, 0, encScratch), r.enc)
	if err != nil {
		panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
	}
	ix.markInPartition(id, r.kind, refs, t)
}

// markInPartition adds id to the postings of t's partition (clamped to the
// oldest retained partition) and records it as the stream's newest partition.
func (ix *Index) markInPartition(id ID, kind Kind, refs []uint32, t int64) {
	for {
		p := ix.partitionFor(ix.partOf(t))
		if !ix.recs.raiseLastPart(id, p.num) {
			return // deleted meanwhile
		}
		p.mu.Lock()
		if p.dropped {
			p.mu.Unlock()
			continue // dropped between lookup and lock: use the new oldest partition
		}
		if !p.containsLocked(kind, id) {
			if _, ok := ix.rec(id); ok { // not deleted meanwhile
				p.addLocked(kind, id, refs)
			}
		}
		p.mu.Unlock()
		return
	}
}

// forget removes id from the registry (not from postings) and returns its
// record. If keep is not nil and reports true under the shard lock, the
// stream is kept.
func (ix *Index) forget(id ID, keep func(streamRec) bool) (streamRec, bool) {
	r, ok := ix.rec(id)
	if !ok {
		return r, false
	}
	var b labels.ScratchBuilder
	ls, err := ix.syms.buildLabels(r.enc, &b)
	if err != nil {
		panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
	}
	h := fullHash(r.kind, ls)
	hs := ix.hashShardOf(h)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if r, ok = ix.recs.remove(id, keep); !ok {
		return r, false
	}
	removeHashLocked(hs, h, id)
	ix.numStreams[r.kind].Add(-1)
	return r, true
}
