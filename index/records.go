package index

import (
	"math"
	"sync"
	"sync/atomic"
)

// The record store maps stream IDs to their registry records. IDs are
// allocated densely and monotonically, so instead of a hash map the store is
// a radix array: a directory of chunks, each a table of pages, each page an
// array of record slots. Finding a record is three dependent loads and no
// hashing, and a record costs its slot (32 bytes) instead of a map entry with
// its load-factor slack.
const (
	// recPageBits: 256 slots (8 KiB) per page. Small pages bound what one
	// long-lived stream keeps alive among streams that were deleted around
	// it: a page is freed when its last stream goes.
	recPageBits = 8
	recPageSize = 1 << recPageBits
	recPageMask = recPageSize - 1
	// recChunkBits: 1024 pages (8 KiB of pointers) per chunk, covering 256Ki
	// IDs; a chunk is freed with its last page, so the directory costs 8
	// bytes per 256Ki IDs ever allocated (about 270 KiB a year at a churn of
	// a million streams an hour).
	recChunkBits = 10
	recChunkSize = 1 << recChunkBits
	recChunkMask = recChunkSize - 1
	// recDirMax bounds the directory slice (8 MiB of pointers, 2^38 IDs);
	// chunks of larger IDs, which only a restored foreign ID can produce,
	// live in an overflow map.
	recDirMax = 1 << 20
)

// streamRec is a snapshot of the registry entry of one stream.
type streamRec struct {
	enc      string // compact label set (lsenc.go)
	lastPart int64  // newest partition the stream is marked in
	kind     Kind
}

// recSlot is the stored form of a streamRec. enc and kind are written only
// while holding both the stream's hash-shard lock and the page's lock, so a
// reader may hold either. lastPart is atomic: Touch reads it without a lock.
// It is stored XOR math.MinInt64, so a zeroed slot reads math.MinInt64
// ("marked nowhere") and a new page needs no initialization. kind 0 marks
// an empty slot.
type recSlot struct {
	enc       string
	lastPartX atomic.Int64
	kind      Kind
}

func (sl *recSlot) loadLastPart() int64   { return sl.lastPartX.Load() ^ math.MinInt64 }
func (sl *recSlot) storeLastPart(v int64) { sl.lastPartX.Store(v ^ math.MinInt64) }

type recPage struct {
	mu    sync.RWMutex
	live  int  // occupied slots; guarded by mu
	freed bool // removed from its chunk (or about to be); guarded by mu
	slots [recPageSize]recSlot
}

type recChunk struct {
	pages [recChunkSize]atomic.Pointer[recPage]
	live  int // non-nil pages; guarded by recStore.growMu
}

// recStore is the ID → record table. Lookups of pages are lock-free;
// allocating and freeing pages and chunks takes growMu.
type recStore struct {
	dir      atomic.Pointer[[]atomic.Pointer[recChunk]] // by id >> (page+chunk bits); grown copy-on-write under growMu
	growMu   sync.Mutex
	overMu   sync.RWMutex
	overflow map[uint64]*recChunk // chunks at or past recDirMax; guarded by overMu (written also under growMu)
}

func newRecStore() *recStore {
	s := &recStore{overflow: map[uint64]*recChunk{}}
	d := []atomic.Pointer[recChunk]{}
	s.dir.Store(&d)
	return s
}

func splitID(id ID) (chunk uint64, page, slot int) {
	u := uint64(id)
	return u >> (recPageBits + recChunkBits), int(u>>recPageBits) & recChunkMask, int(u) & recPageMask
}

// chunk returns the chunk of number c, nil if absent.
func (s *recStore) chunk(c uint64) *recChunk {
	if c >= recDirMax {
		s.overMu.RLock()
		ch := s.overflow[c]
		s.overMu.RUnlock()
		return ch
	}
	d := *s.dir.Load()
	if c >= uint64(len(d)) {
		return nil
	}
	return d[c].Load()
}

// page returns the page holding id, nil if absent.
func (s *recStore) page(id ID) (*recPage, int) {
	c, pg, sl := splitID(id)
	ch := s.chunk(c)
	if ch == nil {
		return nil, 0
	}
	return ch.pages[pg].Load(), sl
}

// get returns the record of id.
func (s *recStore) get(id ID) (streamRec, bool) {
	p, i := s.page(id)
	if p == nil {
		return streamRec{}, false
	}
	p.mu.RLock()
	r, ok := p.slots[i].snapshot()
	p.mu.RUnlock()
	return r, ok
}

// getHashLocked returns the record of id while the caller holds the hash
// shard lock of id's stream: enc and kind cannot change then, so no page
// lock is needed.
func (s *recStore) getHashLocked(id ID) (streamRec, bool) {
	p, i := s.page(id)
	if p == nil {
		return streamRec{}, false
	}
	return p.slots[i].snapshot()
}

func (sl *recSlot) snapshot() (streamRec, bool) {
	if sl.kind == 0 {
		return streamRec{}, false
	}
	return streamRec{enc: sl.enc, lastPart: sl.loadLastPart(), kind: sl.kind}, true
}

// lastPart returns the newest partition id is marked in without a lock;
// math.MinInt64 for an unknown id.
func (s *recStore) lastPart(id ID) int64 {
	p, i := s.page(id)
	if p == nil {
		return math.MinInt64
	}
	return p.slots[i].loadLastPart()
}

// raiseLastPart records part as id's newest partition if it is newer. It
// reports whether id is known.
func (s *recStore) raiseLastPart(id ID, part int64) bool {
	p, i := s.page(id)
	if p == nil {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	sl := &p.slots[i]
	if sl.kind == 0 {
		return false
	}
	for {
		cur := sl.loadLastPart()
		if cur >= part || sl.lastPartX.CompareAndSwap(cur^math.MinInt64, part^math.MinInt64) {
			return true
		}
	}
}

// put stores the record of a new stream; the caller holds the stream's hash
// shard lock for writing and id's slot is empty.
func (s *recStore) put(id ID, r streamRec) {
	for {
		p, i := s.pageForWrite(id)
		p.mu.Lock()
		if p.freed {
			p.mu.Unlock()
			s.dropPage(id, p) // help the deleter unlink it, then take a fresh page
			continue
		}
		sl := &p.slots[i]
		if sl.kind != 0 {
			p.mu.Unlock()
			panic("BUG: record slot of a new stream is occupied")
		}
		sl.enc, sl.kind = r.enc, r.kind
		sl.storeLastPart(r.lastPart)
		p.live++
		p.mu.Unlock()
		return
	}
}

// remove clears id's record if keep (nil: always remove) does not veto it
// under the page lock, and returns the record. The caller holds the stream's
// hash shard lock for writing.
func (s *recStore) remove(id ID, keep func(streamRec) bool) (streamRec, bool) {
	p, i := s.page(id)
	if p == nil {
		return streamRec{}, false
	}
	p.mu.Lock()
	sl := &p.slots[i]
	r, ok := sl.snapshot()
	if !ok || (keep != nil && keep(r)) {
		p.mu.Unlock()
		return r, false
	}
	sl.enc, sl.kind = "", 0
	sl.storeLastPart(math.MinInt64)
	p.live--
	free := p.live == 0
	if free {
		p.freed = true
	}
	p.mu.Unlock()
	if free {
		s.dropPage(id, p)
	}
	return r, true
}

// pageEmpty reports whether no stream of id's page is in the store.
func (s *recStore) pageEmpty(id ID) bool {
	p, _ := s.page(id)
	if p == nil {
		return true
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.live == 0
}

// pageForWrite returns the page of id, allocating it (and its chunk) if
// needed.
func (s *recStore) pageForWrite(id ID) (*recPage, int) {
	if p, i := s.page(id); p != nil {
		return p, i
	}
	c, pg, sl := splitID(id)
	s.growMu.Lock()
	defer s.growMu.Unlock()
	ch := s.chunk(c)
	if ch == nil {
		ch = &recChunk{}
		if c >= recDirMax {
			s.overMu.Lock()
			s.overflow[c] = ch
			s.overMu.Unlock()
		} else {
			d := *s.dir.Load()
			if c >= uint64(len(d)) {
				nd := make([]atomic.Pointer[recChunk], max(c+1, uint64(2*len(d))))
				for j := range d {
					nd[j].Store(d[j].Load())
				}
				s.dir.Store(&nd)
				d = nd
			}
			d[c].Store(ch)
		}
	}
	p := ch.pages[pg].Load()
	if p == nil {
		p = &recPage{}
		ch.pages[pg].Store(p)
		ch.live++
	}
	return p, sl
}

// dropPage unlinks the freed page p of id, and its chunk if that was its
// last page. Idempotent.
func (s *recStore) dropPage(id ID, p *recPage) {
	c, pg, _ := splitID(id)
	s.growMu.Lock()
	defer s.growMu.Unlock()
	ch := s.chunk(c)
	if ch == nil || ch.pages[pg].Load() != p {
		return
	}
	ch.pages[pg].Store(nil)
	if ch.live--; ch.live > 0 {
		return
	}
	if c >= recDirMax {
		s.overMu.Lock()
		delete(s.overflow, c)
		s.overMu.Unlock()
		return
	}
	(*s.dir.Load())[c].Store(nil)
}
