package index

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// smallPostings is the most IDs a value's in-memory postings list keeps as a
// sorted slice before it becomes a roaring64 bitmap. Most values of a
// workload with per-series labels (a GPU UUID, an instance) are carried by
// one or a few streams; an empty roaring64 bitmap with one ID costs ~500
// bytes and 4 allocations, a list of one ID nothing beyond its map slot.
// 8 measured best on BenchmarkCreateUniqueValues (4: more allocations, 16:
// no gain).
const smallPostings = 8

// postList is one label value's postings in memory, held by value in
// nameEntry.values (16 bytes) and guarded by the partition's lock; readers
// never modify it. It is one of:
//
//   - exactly one ID, inline (more == nil): the common case of a value
//     carried by a single stream costs no allocation;
//   - a sorted, duplicate-free slice of at most smallPostings IDs
//     (more.bm == nil), possibly empty after removals;
//   - a roaring64 bitmap (more.bm != nil) once the list outgrew the slice.
//
// The zero postList is the one ID 0; use emptyPostList for none. The
// on-disk form is always a roaring64 bitmap.
type postList struct {
	one  uint64
	more *postMore
}

// postMore holds a postList of other than exactly one ID. It is modified in
// place by the write path under the partition's write lock.
type postMore struct {
	ids []uint64
	bm  *roaring64.Bitmap
}

func emptyPostList() postList { return postList{more: &postMore{}} }

// postListOf returns bm as a postList, inlining it if it is small. bm is
// taken over.
func postListOf(bm *roaring64.Bitmap) postList {
	switch n := bm.GetCardinality(); {
	case n == 1:
		return postList{one: bm.Minimum()}
	case n <= smallPostings:
		return postList{more: &postMore{ids: bm.ToArray()}}
	}
	return postList{more: &postMore{bm: bm}}
}

// big returns the list's bitmap, nil while the list is small.
func (pl postList) big() *roaring64.Bitmap {
	if pl.more == nil {
		return nil
	}
	return pl.more.bm
}

// appendIDs appends the IDs of a small list (big() == nil) to dst in order.
func (pl postList) appendIDs(dst []uint64) []uint64 {
	if pl.more == nil {
		return append(dst, pl.one)
	}
	return append(dst, pl.more.ids...)
}

// empty reports whether the list holds no ID.
func (pl postList) empty() bool {
	if pl.more == nil {
		return false
	}
	if pl.more.bm != nil {
		return pl.more.bm.IsEmpty()
	}
	return len(pl.more.ids) == 0
}

// card returns the number of IDs.
func (pl postList) card() uint64 {
	if pl.more == nil {
		return 1
	}
	if pl.more.bm != nil {
		return pl.more.bm.GetCardinality()
	}
	return uint64(len(pl.more.ids))
}

// bitmap returns the list as a bitmap the caller must not modify: the list's
// own bitmap, or a new one built from its IDs.
func (pl postList) bitmap() *roaring64.Bitmap {
	if bm := pl.big(); bm != nil {
		return bm
	}
	bm := roaring64.New()
	if pl.more == nil {
		bm.Add(pl.one)
	} else {
		bm.AddMany(pl.more.ids)
	}
	return bm
}

// intersects reports whether the list and bm share an ID.
func (pl postList) intersects(bm *roaring64.Bitmap) bool {
	if pl.more == nil {
		return bm.Contains(pl.one)
	}
	if pl.more.bm != nil {
		return intersects(pl.more.bm, bm)
	}
	for _, id := range pl.more.ids {
		if bm.Contains(id) {
			return true
		}
	}
	return false
}

// removeFrom removes the list's IDs from res in place.
func (pl postList) removeFrom(res *roaring64.Bitmap) {
	switch {
	case pl.more == nil:
		res.Remove(pl.one)
	case pl.more.bm != nil:
		if intersects(pl.more.bm, res) {
			res.AndNot(pl.more.bm)
		}
	default:
		for _, id := range pl.more.ids {
			res.Remove(id)
		}
	}
}

// add adds id to a small list (big() == nil) and returns the result, which
// the caller stores; a list that outgrows smallPostings becomes a bitmap.
func (pl postList) add(id uint64) postList {
	if pl.more == nil {
		if id == pl.one {
			return pl
		}
		a, b := min(id, pl.one), max(id, pl.one)
		return postList{more: &postMore{ids: []uint64{a, b}}}
	}
	m := pl.more
	i, found := slices.BinarySearch(m.ids, id)
	if found {
		return pl
	}
	if len(m.ids) < smallPostings {
		m.ids = slices.Insert(m.ids, i, id)
		return pl
	}
	bm := roaring64.New()
	bm.AddMany(m.ids)
	bm.Add(id)
	m.ids, m.bm = nil, bm
	return pl
}

// remove removes id and returns the result, which the caller stores. A
// bitmap stays a bitmap.
func (pl postList) remove(id uint64) postList {
	if pl.more == nil {
		if id == pl.one {
			return emptyPostList()
		}
		return pl
	}
	m := pl.more
	if m.bm != nil {
		m.bm.Remove(id)
		return pl
	}
	if i, found := slices.BinarySearch(m.ids, id); found {
		m.ids = slices.Delete(m.ids, i, i+1)
	}
	return pl
}

// and keeps only the IDs also in bm and returns the result, which the caller
// stores, inlining a bitmap that became small.
func (pl postList) and(bm *roaring64.Bitmap) postList {
	if pl.more == nil {
		if bm.Contains(pl.one) {
			return pl
		}
		return emptyPostList()
	}
	m := pl.more
	if m.bm != nil {
		m.bm.And(bm)
		return postListOf(m.bm)
	}
	m.ids = slices.DeleteFunc(m.ids, func(id uint64) bool { return !bm.Contains(id) })
	return pl
}
