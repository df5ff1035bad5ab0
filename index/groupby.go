package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

// Grouping is the result of GroupBy: the streams in ascending ID order,
// each with its group.
type Grouping struct {
	// Groups are the grouping labels of each group with the group's values;
	// a name the group's streams lack (or have empty) is left out, as
	// PromQL's "by (...)" leaves it out of an aggregation's output. Groups
	// come in the order of their first streams.
	Groups []labels.Labels
	// IDs are the streams, ascending.
	IDs []uint64
	// GroupOf[i] is the index in Groups of the group of IDs[i].
	GroupOf []int32
}

// absentRef marks a grouping label a stream does not have.
const absentRef = ^uint32(0)

// GroupBy splits the streams sel (from Postings over [mint, maxt]) by the
// values of the labels names, without building their label sets: this is
// what lets an aggregation "by (...)" over a million series group them in
// milliseconds. One grouping label with few values in the range is
// resolved from its postings; otherwise each stream's values are read off
// its in-memory label set. Unknown IDs (deleted meanwhile) are left out.
// Safe for concurrent use.
func (ix *Index) GroupBy(ctx context.Context, sel *roaring64.Bitmap, mint, maxt int64, names []string) (Grouping, error) {
	if ix.closed.Load() {
		return Grouping{}, ErrClosed
	}
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	refs := make([]uint32, len(names))
	for i, n := range names {
		if r, ok := ix.syms.lookupName(n); ok {
			refs[i] = r
		} else {
			refs[i] = absentRef // no stream has it
		}
	}
	if len(refs) == 1 && refs[0] != absentRef {
		g, ok, err := ix.groupByPostings(ctx, sel, mint, maxt, names[0], refs[0])
		if ok || err != nil {
			return g, err
		}
	}
	return ix.groupByRecords(ctx, sel, names, refs)
}

// postingsGroupRatio: grouping by postings intersects every value's
// postings with the selection, so it is used while the label has fewer
// values than the selection has streams / postingsGroupRatio.
const postingsGroupRatio = 256

// groupByPostings groups sel by the values of one label from the postings
// of the partitions overlapping [mint, maxt]; ok is false when the label
// has too many values for that to pay.
func (ix *Index) groupByPostings(ctx context.Context, sel *roaring64.Bitmap, mint, maxt int64, name string, nameRef uint32) (_ Grouping, ok bool, err error) {
	ps, err := ix.partitionsIn(mint, maxt)
	if err != nil {
		return Grouping{}, false, fmt.Errorf("group by: %w", err)
	}
	nvalues := 0
	for _, p := range ps {
		p.rlock()
		for _, k := range kindsOf(KindAny) {
			if ne := p.names.get(k, nameRef); ne != nil {
				nvalues += ne.values.len()
			}
		}
		p.mu.RUnlock()
	}
	if uint64(nvalues)*postingsGroupRatio > sel.GetCardinality() {
		return Grouping{}, false, nil
	}
	byValue := map[uint32]*roaring64.Bitmap{}
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return Grouping{}, false, fmt.Errorf("group by: %w", err)
		}
		p.rlock()
		for _, k := range kindsOf(KindAny) {
			ne := p.names.get(k, nameRef)
			if ne == nil {
				continue
			}
			for v, pl := range ne.values.all() {
				if pl.empty() || !pl.intersects(sel) {
					continue
				}
				in := roaring64.And(pl.bitmap(), sel)
				if bm := byValue[v]; bm != nil {
					bm.Or(in)
				} else {
					byValue[v] = in
				}
			}
		}
		p.mu.RUnlock()
	}
	g := Grouping{IDs: sel.ToArray()}
	g.GroupOf = make([]int32, len(g.IDs))
	for i := range g.GroupOf {
		g.GroupOf[i] = -1
	}
	for v, bm := range byValue {
		value, found := ix.syms.value(nameRef, v)
		if !found {
			return Grouping{}, false, fmt.Errorf("group by: label %q: unknown value ref %d", name, v)
		}
		mark(g.IDs, g.GroupOf, bm, int32(len(g.Groups)))
		g.Groups = append(g.Groups, labels.FromStrings(name, value))
	}
	// Streams without the label form the group with no labels.
	rest := int32(-1)
	for i, gi := range g.GroupOf {
		if gi < 0 {
			if rest < 0 {
				rest = int32(len(g.Groups))
				g.Groups = append(g.Groups, labels.EmptyLabels())
			}
			g.GroupOf[i] = rest
		}
	}
	g.orderGroups()
	return g, true, nil
}

// mark sets groupOf[i] = gi for the positions i of bm's IDs in ids (bm is a
// subset of ids, which is ascending), galloping from one to the next.
func mark(ids []uint64, groupOf []int32, bm *roaring64.Bitmap, gi int32) {
	pos := 0
	it := bm.Iterator()
	for it.HasNext() {
		id := it.Next()
		step := 1
		for pos+step < len(ids) && ids[pos+step] < id {
			step *= 2
		}
		lo, hi := pos+step/2, min(pos+step, len(ids)-1)
		pos = lo + sort.Search(hi-lo+1, func(i int) bool { return ids[lo+i] >= id })
		groupOf[pos] = gi
	}
}

// orderGroups renumbers the groups in the order of their first streams.
func (g *Grouping) orderGroups() {
	perm := make([]int32, len(g.Groups))
	for i := range perm {
		perm[i] = -1
	}
	ordered := make([]labels.Labels, 0, len(g.Groups))
	for i, gi := range g.GroupOf {
		if perm[gi] < 0 {
			perm[gi] = int32(len(ordered))
			ordered = append(ordered, g.Groups[gi])
		}
		g.GroupOf[i] = perm[gi]
	}
	g.Groups = ordered
}

// groupByRecords groups sel by the value refs read off each stream's
// label set.
func (ix *Index) groupByRecords(ctx context.Context, sel *roaring64.Bitmap, names []string, refs []uint32) (Grouping, error) {
	var (
		g      = Grouping{IDs: make([]uint64, 0, sel.GetCardinality())}
		byOne  = map[uint32]int32{} // one grouping label: value ref → group
		byMany = map[string]int32{} // several: their value refs → group
		vals   = make([]uint32, len(refs))
		key    = make([]byte, 4*len(refs))
	)
	g.GroupOf = make([]int32, 0, cap(g.IDs))
	it := sel.Iterator()
	for n := 0; it.HasNext(); n++ {
		id := it.Next()
		if err := checkCtx(ctx, n); err != nil {
			return Grouping{}, fmt.Errorf("group by: %w", err)
		}
		r, ok := ix.rec(ID(id))
		if !ok {
			continue
		}
		for i, nr := range refs {
			vals[i] = absentRef
			if nr != absentRef {
				if v, ok := labelValueRef(r.enc, nr); ok {
					vals[i] = v
				}
			}
		}
		var (
			gi    int32
			found bool
		)
		switch len(refs) {
		case 0:
			gi, found = 0, len(g.Groups) > 0
		case 1:
			gi, found = byOne[vals[0]]
		default:
			for i, v := range vals {
				binary.LittleEndian.PutUint32(key[4*i:], v)
			}
			gi, found = byMany[string(key)]
		}
		if !found {
			ls, err := ix.groupLabels(names, refs, vals)
			if err != nil {
				return Grouping{}, fmt.Errorf("group by: %w", err)
			}
			gi = int32(len(g.Groups))
			g.Groups = append(g.Groups, ls)
			switch len(refs) {
			case 0:
			case 1:
				byOne[vals[0]] = gi
			default:
				byMany[string(key)] = gi
			}
		}
		g.IDs = append(g.IDs, id)
		g.GroupOf = append(g.GroupOf, gi)
	}
	return g, nil
}

// groupLabels builds the labels of a group from its value refs.
func (ix *Index) groupLabels(names []string, refs, vals []uint32) (labels.Labels, error) {
	b := labels.NewScratchBuilder(len(names))
	for i, v := range vals {
		if v == absentRef {
			continue
		}
		s, ok := ix.syms.value(refs[i], v)
		if !ok {
			return labels.EmptyLabels(), fmt.Errorf("label %q: unknown value ref %d", names[i], v)
		}
		if s != "" {
			b.Add(names[i], s)
		}
	}
	return b.Labels(), nil // names are sorted
}
