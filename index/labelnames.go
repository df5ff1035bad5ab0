package index

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// LabelNames returns the sorted label names of the streams of kind (KindAny:
// all kinds) marked in a partition overlapping [mint, maxt] that match ms
// (all such streams if ms is empty). A ctx restricted to tenants sees only
// their streams; tenant.LabelName is never listed.
func (ix *Index) LabelNames(ctx context.Context, kind Kind, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	var sel *roaring64.Bitmap
	if _, restricted := tenant.FromContext(ctx); len(ms) > 0 || restricted {
		var err error
		if sel, err = ix.Postings(ctx, kind, mint, maxt, ms...); err != nil {
			return nil, fmt.Errorf("label names: %w", err)
		}
		if sel.IsEmpty() {
			return []string{}, nil
		}
	}
	ps, err := ix.partitionsIn(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("label names: %w", err)
	}
	seen := map[uint32]struct{}{}
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.rlock()
		p.names.each(kind, func(_ Kind, nameRef uint32, ne *nameEntry) {
			if _, ok := seen[nameRef]; ok {
				return
			}
			if ne.all.IsEmpty() || (sel != nil && !ne.all.Intersects(sel)) {
				return
			}
			seen[nameRef] = struct{}{}
		})
		p.mu.RUnlock()
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		if s, _ := ix.syms.name(r); s != tenant.LabelName {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// LabelValues returns the sorted values of label name of the streams of kind
// (KindAny: all kinds) marked in a partition overlapping [mint, maxt] that
// match ms (all such streams if ms is empty). A ctx restricted to tenants
// sees only their streams; tenant.LabelName has no values.
func (ix *Index) LabelValues(ctx context.Context, kind Kind, name string, mint, maxt int64, ms ...*labels.Matcher) ([]string, error) {
	nameRef, ok := ix.syms.lookupName(name)
	if !ok || name == tenant.LabelName {
		return []string{}, nil
	}
	var sel *roaring64.Bitmap
	if _, restricted := tenant.FromContext(ctx); len(ms) > 0 || restricted {
		var err error
		if sel, err = ix.Postings(ctx, kind, mint, maxt, ms...); err != nil {
			return nil, fmt.Errorf("label values: %w", err)
		}
		if sel.IsEmpty() {
			return []string{}, nil
		}
	}
	ps, err := ix.partitionsIn(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("label values: %w", err)
	}
	seen := map[uint32]struct{}{}
	nvalues := 0
	for _, p := range ps {
		p.rlock()
		for _, k := range kindsOf(kind) {
			if ne := p.names.get(k, nameRef); ne != nil {
				nvalues += ne.values.len()
			}
		}
		p.mu.RUnlock()
	}
	// Few selected streams and many values: read the value off each stream.
	if sel != nil && sel.GetCardinality() < uint64(nvalues/filterRatio) {
		it := sel.Iterator()
		for i := 0; it.HasNext(); i++ {
			if err := checkCtx(ctx, i); err != nil {
				return nil, err
			}
			r, ok := ix.rec(ID(it.Next()))
			if !ok {
				continue
			}
			if v, ok := labelValueRef(r.enc, nameRef); ok {
				seen[v] = struct{}{}
			}
		}
		return ix.sortedValues(nameRef, seen), nil
	}
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.rlock()
		for _, k := range kindsOf(kind) {
			ne := p.names.get(k, nameRef)
			if ne == nil {
				continue
			}
			for v, pl := range ne.values.all() {
				if _, ok := seen[v]; ok {
					continue
				}
				if pl.empty() || (sel != nil && !pl.intersects(sel)) {
					continue
				}
				seen[v] = struct{}{}
			}
		}
		p.mu.RUnlock()
	}
	return ix.sortedValues(nameRef, seen), nil
}

func (ix *Index) sortedValues(nameRef uint32, refs map[uint32]struct{}) []string {
	out := make([]string, 0, len(refs))
	for r := range refs {
		s, _ := ix.syms.value(nameRef, r)
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
