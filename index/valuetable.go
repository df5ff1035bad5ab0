package index

import (
	"hash/maphash"
	"math"
)

// valueTable maps the values of one label name to their refs: an
// open-addressing table with linear probing over 8-byte slots holding a
// 32-bit hash of the value and its ref. The strings themselves stay in the
// dictionary's pages (valueDict.at), so a slot costs 8 bytes where a Go
// map[string]uint32 entry costs ~24 plus its control byte, and growing the
// table moves slots without hashing a single string again (a Go map rehashes
// every key when it splits). The caller hashes a value once (valueHash) and
// uses the hash for the lookup and, on a miss, for the insert.
//
// Not safe for concurrent use; symbols.mu guards it (read lock for find,
// write lock for insert).
type valueTable struct {
	slots []valueSlot // len is a power of two (or 0), at most 2^32
	n     int
}

type valueSlot struct {
	h    uint32 // valueHash of the value
	ref1 uint32 // ref + 1; 0 marks an empty slot
}

const (
	valueTableMinSlots = 8
	// valueTableMaxLoad (per 8): the table doubles at 3/4 full, as idTable.
	valueTableMaxLoad = 6
	// valueTableMaxSlots caps the table: hashes are 32 bits, and refs stay
	// below 2^32-1 (maxValueRefs), so a full-size table always has a free slot.
	valueTableMaxSlots = 1 << 32
	// maxValueRefs is the most values one name can hold (ref+1 must fit
	// in a uint32).
	maxValueRefs = math.MaxUint32 - 1
)

// valueHash returns the hash valueTable uses for v.
func valueHash(seed maphash.Seed, v string) uint32 {
	h := maphash.String(seed, v)
	return uint32(h ^ h>>32)
}

// find returns the ref of the value v with hash h; pages are the
// dictionary's value pages, which confirm a hash match.
func (t *valueTable) find(h uint32, v string, pages []*[symPageSize]string) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.ref1 == 0 {
			return 0, false
		}
		if s.h == h {
			if r := s.ref1 - 1; pages[r>>symPageBits][r&symPageMask] == v {
				return r, true
			}
		}
	}
}

// home returns the slot a probe for hash h starts at (zero in an empty
// table). A zero slot means the value is absent.
func (t *valueTable) home(h uint32) valueSlot {
	if len(t.slots) == 0 {
		return valueSlot{}
	}
	return t.slots[h&uint32(len(t.slots)-1)]
}

// insert records h → ref; ref must not be stored yet.
func (t *valueTable) insert(h, ref uint32) {
	if (t.n+1)*8 > len(t.slots)*valueTableMaxLoad && len(t.slots) < valueTableMaxSlots {
		t.grow()
	}
	t.put(h, ref)
	t.n++
}

func (t *valueTable) put(h, ref uint32) {
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].ref1 != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = valueSlot{h: h, ref1: ref + 1}
}

func (t *valueTable) grow() {
	old := t.slots
	t.slots = make([]valueSlot, max(valueTableMinSlots, 2*len(old)))
	for _, s := range old {
		if s.ref1 != 0 {
			t.put(s.h, s.ref1-1)
		}
	}
}
