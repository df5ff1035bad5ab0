package index

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// Group is the streams of a GroupBy call that have the same values of the
// grouping labels.
type Group struct {
	// Labels are the grouping labels with the group's values; a name the
	// group's streams lack (or have empty) is left out, as PromQL's
	// "by (...)" leaves it out of an aggregation's output.
	Labels labels.Labels
	// IDs are the group's streams in ascending order.
	IDs []uint64
}

// absentRef marks a grouping label a stream does not have.
const absentRef = ^uint32(0)

// GroupBy splits ids (ascending) by the values of the labels names, reading
// each stream's values off its in-memory label set without building it:
// this is what lets an aggregation "by (...)" over a million series group
// them in tens of milliseconds. Unknown IDs (deleted meanwhile) are left
// out. Groups come in the order of their first stream. Safe for concurrent
// use.
func (ix *Index) GroupBy(ctx context.Context, ids []uint64, names []string) ([]Group, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
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
	var (
		groups []Group
		byOne  = map[uint32]int{} // one grouping label: value ref → group
		byMany = map[string]int{} // several: their value refs → group
		vals   = make([]uint32, len(refs))
		key    = make([]byte, 4*len(refs))
	)
	for n, id := range ids {
		if err := checkCtx(ctx, n); err != nil {
			return nil, fmt.Errorf("group by: %w", err)
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
			g     int
			found bool
		)
		switch len(refs) {
		case 0:
			g, found = 0, len(groups) > 0
		case 1:
			g, found = byOne[vals[0]]
		default:
			for i, v := range vals {
				binary.LittleEndian.PutUint32(key[4*i:], v)
			}
			g, found = byMany[string(key)]
		}
		if !found {
			ls, err := ix.groupLabels(names, refs, vals)
			if err != nil {
				return nil, fmt.Errorf("group by: %w", err)
			}
			g = len(groups)
			groups = append(groups, Group{Labels: ls})
			switch len(refs) {
			case 0:
			case 1:
				byOne[vals[0]] = g
			default:
				byMany[string(key)] = g
			}
		}
		groups[g].IDs = append(groups[g].IDs, id)
	}
	return groups, nil
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
