package index

// idTable maps label-set hashes to stream IDs: an open-addressing table with
// linear probing over 16-byte slots. Streams whose hashes are equal take
// separate slots of one probe run, so collisions need no side table, and a
// lookup reads one run of adjacent slots: usually a single cache line, for a
// hit and for a miss alike, where a Go map probes control words and slots
// separately and, near its maximum load, several groups for a miss.
//
// Not safe for concurrent use; hashShard.mu guards it.
type idTable struct {
	slots []idSlot // len is a power of two (or 0); id 0 marks an empty slot
	n     int
}

type idSlot struct {
	h  uint64
	id ID
}

const (
	// idTableMinSlots is the size of a table's first allocation.
	idTableMinSlots = 16
	// idTableMaxLoad (per 8) is the load at which the table doubles: at
	// 3/4 a linear-probing miss scans a few slots on average; the load is
	// 3/8 to 3/4, which costs about as much memory per stream as a Go map.
	idTableMaxLoad = 6
)

// home returns the first slot of h's probe run. The low bits are used: the
// shard was chosen by the high bits.
func (t *idTable) home(h uint64) int { return int(h & uint64(len(t.slots)-1)) }

// insert adds h → id; id must not be stored yet.
func (t *idTable) insert(h uint64, id ID) {
	if (t.n+1)*8 > len(t.slots)*idTableMaxLoad {
		t.grow()
	}
	t.put(h, id)
	t.n++
}

func (t *idTable) put(h uint64, id ID) {
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = idSlot{h: h, id: id}
}

func (t *idTable) grow() {
	old := t.slots
	t.slots = make([]idSlot, max(idTableMinSlots, 2*len(old)))
	for _, s := range old {
		if s.id != 0 {
			t.put(s.h, s.id)
		}
	}
}

// remove deletes h → id and reports whether it was stored. The slots after
// it in its run move back where their probe allows (no tombstones), so
// lookups never scan deleted slots.
func (t *idTable) remove(h uint64, id ID) bool {
	if len(t.slots) == 0 {
		return false
	}
	mask := len(t.slots) - 1
	i := t.home(h)
	for ; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.id == 0 {
			return false
		}
		if s.h == h && s.id == id {
			break
		}
	}
	// Backward-shift deletion: slot i is free; a later slot j of the run may
	// fill it unless its home lies cyclically in (i, j].
	for j := (i + 1) & mask; t.slots[j].id != 0; j = (j + 1) & mask {
		k := t.home(t.slots[j].h)
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = idSlot{}
	t.n--
	return true
}
