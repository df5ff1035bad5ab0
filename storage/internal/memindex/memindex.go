// Package memindex is an in-memory stream index with the method set storage
// needs from weft's index package (labels ↔ ID, time-partitioned postings,
// label names and values). It is the stand-in used while index/ is not
// available and in storage's own tests. It keeps nothing on disk: storage's
// WAL checkpoints carry every live series record, so Persist is a no-op.
//
// An Index is safe for concurrent use.
package memindex

import (
	"context"
	"math"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

// Index is an in-memory stream index.
type Index struct {
	partMs int64

	mu       sync.RWMutex
	byHash   map[uint64]uint64   // labels hash → first ID with that hash
	collided map[uint64][]uint64 // labels hash → further IDs (rare)
	lbls     []labels.Labels     // ID-1 → labels (empty when deleted)
	postings map[string]map[string]*roaring64.Bitmap
	active   map[int64]*roaring64.Bitmap // partition → IDs with data in it
	live     int
}

// New returns an empty index whose partitions are partitionMs wide.
func New(partitionMs int64) *Index {
	return &Index{
		partMs:   partitionMs,
		byHash:   map[uint64]uint64{},
		collided: map[uint64][]uint64{},
		postings: map[string]map[string]*roaring64.Bitmap{},
		active:   map[int64]*roaring64.Bitmap{},
	}
}

func (ix *Index) part(t int64) int64 {
	p := t / ix.partMs
	if t < 0 && t%ix.partMs != 0 {
		p--
	}
	return p
}

func (ix *Index) lookupLocked(h uint64, ls labels.Labels) (uint64, bool) {
	if id, ok := ix.byHash[h]; ok && labels.Equal(ix.lbls[id-1], ls) {
		return id, true
	}
	for _, id := range ix.collided[h] {
		if labels.Equal(ix.lbls[id-1], ls) {
			return id, true
		}
	}
	return 0, false
}

func (ix *Index) insertLocked(id uint64, h uint64, ls labels.Labels) {
	for uint64(len(ix.lbls)) < id {
		ix.lbls = append(ix.lbls, labels.EmptyLabels())
	}
	ix.lbls[id-1] = ls
	if _, ok := ix.byHash[h]; ok {
		ix.collided[h] = append(ix.collided[h], id)
	} else {
		ix.byHash[h] = id
	}
	ls.Range(func(l labels.Label) {
		vals := ix.postings[l.Name]
		if vals == nil {
			vals = map[string]*roaring64.Bitmap{}
			ix.postings[l.Name] = vals
		}
		bm := vals[l.Value]
		if bm == nil {
			bm = roaring64.New()
			vals[l.Value] = bm
		}
		bm.Add(id)
	})
	ix.live++
}

func (ix *Index) touchLocked(id uint64, t int64) {
	p := ix.part(t)
	bm := ix.active[p]
	if bm == nil {
		bm = roaring64.New()
		ix.active[p] = bm
	}
	bm.Add(id)
}

// GetOrCreate returns the ID of ls, creating it (and marking it active at t).
func (ix *Index) GetOrCreate(ls labels.Labels, t int64) (uint64, bool, error) {
	h := ls.Hash()
	ix.mu.RLock()
	id, ok := ix.lookupLocked(h, ls)
	ix.mu.RUnlock()
	if ok {
		return id, false, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if id, ok := ix.lookupLocked(h, ls); ok {
		return id, false, nil
	}
	id = uint64(len(ix.lbls)) + 1
	ix.insertLocked(id, h, ls.Copy())
	ix.touchLocked(id, t)
	return id, true, nil
}

// Restore re-inserts a series under its known ID (WAL replay). t ==
// math.MinInt64 marks no partition active.
func (ix *Index) Restore(id uint64, ls labels.Labels, t int64) error {
	h := ls.Hash()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if uint64(len(ix.lbls)) < id || ix.lbls[id-1].IsEmpty() {
		ix.insertLocked(id, h, ls.Copy())
	}
	if t != math.MinInt64 {
		ix.touchLocked(id, t)
	}
	return nil
}

// Touch marks id active in t's partition.
func (ix *Index) Touch(id uint64, t int64) {
	ix.mu.Lock()
	ix.touchLocked(id, t)
	ix.mu.Unlock()
}

// Persist is a no-op: the WAL checkpoint carries the series.
func (ix *Index) Persist(context.Context) error { return nil }

// Labels returns the labels of id.
func (ix *Index) Labels(id uint64, _ *labels.ScratchBuilder) (labels.Labels, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if id == 0 || id > uint64(len(ix.lbls)) || ix.lbls[id-1].IsEmpty() {
		return labels.EmptyLabels(), false
	}
	return ix.lbls[id-1], true
}

func (ix *Index) activeLocked(mint, maxt int64) *roaring64.Bitmap {
	out := roaring64.New()
	lo, hi := ix.part(mint), ix.part(maxt)
	if hi-lo > int64(len(ix.active)) {
		for p, bm := range ix.active {
			if p >= lo && p <= hi {
				out.Or(bm)
			}
		}
		return out
	}
	for p := lo; p <= hi; p++ {
		if bm := ix.active[p]; bm != nil {
			out.Or(bm)
		}
	}
	return out
}

// Postings returns the IDs active in [mint, maxt] that match all ms.
func (ix *Index) Postings(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	res := ix.activeLocked(mint, maxt)
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vals := ix.postings[m.Name]
		if m.Matches("") {
			// Series without the label match too: subtract the values that do not match.
			for v, bm := range vals {
				if !m.Matches(v) {
					res.AndNot(bm)
				}
			}
			continue
		}
		if m.Type == labels.MatchEqual {
			bm := vals[m.Value]
			if bm == nil {
				return roaring64.New(), nil
			}
			res.And(bm)
			continue
		}
		u := roaring64.New()
		for v, bm := range vals {
			if m.Matches(v) {
				u.Or(bm)
			}
		}
		res.And(u)
	}
	return res, nil
}

// LabelNames returns the sorted label names of the series matching ms in range.
func (ix *Index) LabelNames(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	ids, err := ix.Postings(ctx, mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []string
	for name, vals := range ix.postings {
		for _, bm := range vals {
			if bm.Intersects(ids) {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// LabelValues returns the sorted values of name among series matching ms in range.
func (ix *Index) LabelValues(ctx context.Context, name string, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	ids, err := ix.Postings(ctx, mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []string
	for v, bm := range ix.postings[name] {
		if bm.Intersects(ids) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}

// DropPartitionsBefore forgets activity in partitions that end before t.
func (ix *Index) DropPartitionsBefore(_ context.Context, t int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	lim := ix.part(t)
	for p := range ix.active {
		if p < lim {
			delete(ix.active, p)
		}
	}
	return nil
}

// Delete removes the given series entirely.
func (ix *Index) Delete(_ context.Context, ids *roaring64.Bitmap) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	it := ids.Iterator()
	for it.HasNext() {
		id := it.Next()
		if id == 0 || id > uint64(len(ix.lbls)) || ix.lbls[id-1].IsEmpty() {
			continue
		}
		ls := ix.lbls[id-1]
		h := ls.Hash()
		if ix.byHash[h] == id {
			delete(ix.byHash, h)
			if c := ix.collided[h]; len(c) > 0 {
				ix.byHash[h] = c[0]
				if len(c) == 1 {
					delete(ix.collided, h)
				} else {
					ix.collided[h] = c[1:]
				}
			}
		} else {
			ix.collided[h] = slices.DeleteFunc(ix.collided[h], func(x uint64) bool { return x == id })
		}
		ls.Range(func(l labels.Label) {
			if bm := ix.postings[l.Name][l.Value]; bm != nil {
				bm.Remove(id)
				if bm.IsEmpty() {
					delete(ix.postings[l.Name], l.Value)
					if len(ix.postings[l.Name]) == 0 {
						delete(ix.postings, l.Name)
					}
				}
			}
		})
		for _, bm := range ix.active {
			bm.Remove(id)
		}
		ix.lbls[id-1] = labels.EmptyLabels()
		ix.live--
	}
	return nil
}

// NumStreams returns the number of live series.
func (ix *Index) NumStreams() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Close releases nothing; it exists for the interface.
func (ix *Index) Close() error { return nil }
