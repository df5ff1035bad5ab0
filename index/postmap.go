package index

import (
	"iter"
	"math/bits"
	"slices"
)

// postBlockBits: a postMap block covers 64 consecutive value refs, so its
// presence mask is one word.
const (
	postBlockBits = 6
	postBlockMask = 1<<postBlockBits - 1
)

// postMap maps the value refs of one label name to their postings lists in
// one partition (nameEntry.values). A name's value refs are handed out in
// order of first appearance, so the values a partition gains are mostly new
// refs in increasing order, and the streams of one target share the rest: the
// map groups refs in blocks of 64 consecutive refs (a presence mask and the
// lists of the present refs, in ref order) and remembers the block it wrote
// last. Adding a stream whose values are new or were just used touches one
// block already in cache — no hashing, no probing — where a Go map hashes
// every ref to a random slot of a table that, for a per-series label, is
// megabytes large. A dense block costs ~16 bytes per ref plus ~1 for the
// block; a block holding a single ref costs ~80 bytes.
//
// The zero postMap is empty and ready to use. Not safe for concurrent use:
// the partition's lock guards it; get and len are read-only (read lock),
// every other method needs the write lock.
type postMap struct {
	// last is the block written last; while blocks is nil it is the only
	// block (names whose values fit one block, as most do, need no map).
	last   *postBlock
	blocks map[uint32]*postBlock // by ref >> postBlockBits; nil while there is at most one block
	n      int
}

type postBlock struct {
	key   uint32 // ref >> postBlockBits
	mask  uint64 // bit i: ref key<<postBlockBits | i is present
	lists []postList
}

// pos returns the index in b.lists of ref's bit and whether ref is present.
func (b *postBlock) pos(ref uint32) (int, bool) {
	bit := uint64(1) << (ref & postBlockMask)
	return bits.OnesCount64(b.mask & (bit - 1)), b.mask&bit != 0
}

// block returns the block of key, nil if absent.
func (m *postMap) block(key uint32) *postBlock {
	if b := m.last; b != nil && b.key == key {
		return b
	}
	if m.blocks == nil {
		return nil
	}
	return m.blocks[key]
}

func (m *postMap) len() int { return m.n }

// get returns the list of ref.
func (m *postMap) get(ref uint32) (postList, bool) {
	b := m.block(ref >> postBlockBits)
	if b == nil {
		return postList{}, false
	}
	i, ok := b.pos(ref)
	if !ok {
		return postList{}, false
	}
	return b.lists[i], true
}

// set stores the list of ref.
func (m *postMap) set(ref uint32, pl postList) {
	key := ref >> postBlockBits
	b := m.block(key)
	if b == nil {
		b = &postBlock{key: key}
		switch {
		case m.blocks != nil:
			m.blocks[key] = b
		case m.last != nil: // a second block
			m.blocks = map[uint32]*postBlock{m.last.key: m.last, key: b}
		}
	}
	m.last = b
	i, ok := b.pos(ref)
	if ok {
		b.lists[i] = pl
		return
	}
	b.mask |= 1 << (ref & postBlockMask)
	b.lists = slices.Insert(b.lists, i, pl)
	m.n++
}

// del removes ref.
func (m *postMap) del(ref uint32) {
	key := ref >> postBlockBits
	b := m.block(key)
	if b == nil {
		return
	}
	i, ok := b.pos(ref)
	if !ok {
		return
	}
	b.mask &^= 1 << (ref & postBlockMask)
	b.lists = slices.Delete(b.lists, i, i+1)
	m.n--
	if b.mask != 0 {
		return
	}
	if m.blocks == nil { // b was the only block
		m.last = nil
		return
	}
	delete(m.blocks, key)
	if m.last == b {
		m.last = nil
	}
	if len(m.blocks) == 1 {
		for _, only := range m.blocks {
			m.last = only
		}
		m.blocks = nil
	}
}

// all yields every ref and its list, in ascending ref order within a block
// and blocks in no particular order. The map must not be modified during the
// iteration; use filter for that.
func (m *postMap) all() iter.Seq2[uint32, postList] {
	return func(yield func(uint32, postList) bool) {
		if m.blocks == nil {
			if m.last != nil {
				m.last.each(yield)
			}
			return
		}
		for _, b := range m.blocks {
			if !b.each(yield) {
				return
			}
		}
	}
}

func (b *postBlock) each(yield func(uint32, postList) bool) bool {
	mask, i := b.mask, 0
	for mask != 0 {
		ref := b.key<<postBlockBits | uint32(bits.TrailingZeros64(mask))
		if !yield(ref, b.lists[i]) {
			return false
		}
		mask &= mask - 1
		i++
	}
	return true
}

// filter replaces the list of every ref by f's result, removing refs for
// which f returns false.
func (m *postMap) filter(f func(ref uint32, pl postList) (postList, bool)) {
	var drop []uint32
	for ref, pl := range m.all() {
		npl, keep := f(ref, pl)
		if !keep {
			drop = append(drop, ref)
			continue
		}
		b := m.block(ref >> postBlockBits)
		i, _ := b.pos(ref)
		b.lists[i] = npl
	}
	for _, ref := range drop {
		m.del(ref)
	}
}
