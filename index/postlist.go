package index

import (
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// smallPostings is the most IDs a value's in-memory postings list keeps as a
// sorted slice before it becomes a roaring64 bitmap. Most values of a
// workload with per-series labels (a GPU UUID, an instance) are carried by
// one or a few streams; an empty roaring64 bitmap with one ID costs ~500
// bytes and 4 allocations, a slice of one ID 8 bytes and one.
const smallPostings = 8

// postList is one label value's postings in memory: a sorted, duplicate-free
// slice of at most smallPostings IDs (bm == nil), or a roaring64 bitmap once
// larger. It is held by value in nameEntry.values and guarded by the
// partition's lock; readers never modify it. The on-disk form is always a
// roaring64 bitmap.
type postList struct {
	ids []uint64
	bm  *roaring64.Bitmap
}

// postListOf returns bm as a postList, inlining it if it is small. bm is
// taken over.
func postListOf(bm *roaring64.Bitmap) postList {
	if n := bm.GetCardinality(); n <= smallPostings {
		return postList{ids: bm.ToArray()}
	}
	return postList{bm: bm}
}

// empty reports whether the list holds no ID.
func (pl postList) empty() bool {
	if pl.bm != nil {
		return pl.bm.IsEmpty()
	}
	return len(pl.ids) == 0
}

// card returns the number of IDs.
func (pl postList) card() uint64 {
	if pl.bm != nil {
		return pl.bm.GetCardinality()
	}
	return uint64(len(pl.ids))
}

// bitmap returns the list as a bitmap the caller must not modify: the list's
// own bitmap, or a new one built from its IDs.
func (pl postList) bitmap() *roaring64.Bitmap {
	if pl.bm != nil {
		return pl.bm
	}
	bm := roaring64.New()
	bm.AddMany(pl.ids)
	return bm
}

// intersects reports whether the list and bm share an ID.
func (pl postList) intersects(bm *roaring64.Bitmap) bool {
	if pl.bm != nil {
		return intersects(pl.bm, bm)
	}
	for _, id := range pl.ids {
		if bm.Contains(id) {
			return true
		}
	}
	return false
}

// add adds id to a small list and returns the result; a list that outgrows
// smallPostings becomes a bitmap. pl.bm must be nil.
func (pl postList) add(id uint64) postList {
	i, found := slices.BinarySearch(pl.ids, id)
	if found {
		return pl
	}
	if len(pl.ids) < smallPostings {
		pl.ids = slices.Insert(pl.ids, i, id)
		return pl
	}
	bm := roaring64.New()
	bm.AddMany(pl.ids)
	bm.Add(id)
	return postList{bm: bm}
}

// remove removes id and returns the result. A bitmap stays a bitmap.
func (pl postList) remove(id uint64) postList {
	if pl.bm != nil {
		pl.bm.Remove(id)
		return pl
	}
	if i, found := slices.BinarySearch(pl.ids, id); found {
		pl.ids = slices.Delete(pl.ids, i, i+1)
	}
	return pl
}

// and keeps only the IDs also in bm and returns the result, inlining a
// bitmap that became small.
func (pl postList) and(bm *roaring64.Bitmap) postList {
	if pl.bm != nil {
		pl.bm.And(bm)
		return postListOf(pl.bm)
	}
	pl.ids = slices.DeleteFunc(pl.ids, func(id uint64) bool { return !bm.Contains(id) })
	return pl
}
