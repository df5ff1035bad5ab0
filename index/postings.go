package index

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// filterRatio decides between two ways of applying an expensive matcher (a
// regexp without a fast path): scanning the label's values costs about one
// regexp match per value, checking the candidates found so far costs about one
// label-set decode per candidate, which is a few times dearer. So candidates
// are checked directly when they are fewer than values/filterRatio.
const filterRatio = 4

// Postings returns the IDs of the streams of kind (KindAny: all kinds) that are
// marked in a partition overlapping [mint, maxt] (milliseconds, inclusive) and
// whose label sets match every matcher. With no matchers it returns every such
// stream. A selector made only of empty-matching matchers is allowed. The
// returned bitmap belongs to the caller. A ctx restricted to tenants
// (package tenant) selects only their streams.
func (ix *Index) Postings(ctx context.Context, kind Kind, mint, maxt int64, ms ...*labels.Matcher) (*roaring64.Bitmap, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	ms = tenant.Restrict(ctx, ms)
	ps, err := ix.partitionsIn(mint, maxt)
	if err != nil {
		return nil, fmt.Errorf("postings: %w", err)
	}
	var res *roaring64.Bitmap
	for _, p := range ps {
		for _, k := range kindsOf(kind) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p.rlock()
			bm, owned := ix.evalPartition(p, k, ms)
			switch {
			case bm == nil:
			case res == nil && owned:
				res = bm
			case res == nil:
				res = bm.Clone()
			default:
				res.Or(bm)
			}
			p.mu.RUnlock()
		}
	}
	if res == nil {
		res = roaring64.New()
	}
	return res, nil
}

// matcherPlan is one matcher resolved against one partition.
type matcherPlan struct {
	m       *labels.Matcher
	nameRef uint32
	ne      *nameEntry
	bm      *roaring64.Bitmap // resolved set (positive) or set to subtract (negative)
	own     bool              // bm was built here and may be modified
	neg     bool              // subtract bm instead of intersecting
	// deferred: matcher without a fast path, resolved after the cheap ones
	// against the candidates found so far, by value scan or by checking the
	// candidates' own values.
	deferred bool
	// set: a positive regexp over literal alternatives whose union is built
	// only if the candidates found before it are not few enough to check
	// one by one (a tenant of 10 series beside a neighbour of a million that
	// shares its metric names); lists are the alternatives' postings, est
	// the sum of their sizes.
	set   bool
	lists []postList
	est   uint64
}

// setFilterRatio decides how a positive regexp over literal alternatives is
// applied: building the union of the alternatives' postings costs under a
// nanosecond per ID when they are dense bitmaps (word-at-a-time ORs), a
// few when they are sparse; checking a candidate's own value costs a
// label-set decode and a lookup, 100-200 ns. Candidates are checked one by
// one when they are fewer than the union's size/setFilterRatio.
const setFilterRatio = 256

// evalPartition resolves ms for kind k in p; p.mu must be held for reading.
// It returns the result and whether the caller owns it (else it is an
// internal bitmap that must not be modified). A nil result is empty.
func (ix *Index) evalPartition(p *partition, k Kind, ms []*labels.Matcher) (*roaring64.Bitmap, bool) {
	all := p.all[k]
	if all == nil || all.IsEmpty() {
		return nil, false
	}
	plans := make([]matcherPlan, 0, len(ms))
	for _, m := range ms {
		pl := matcherPlan{m: m}
		nameRef, known := ix.syms.lookupName(m.Name)
		if known {
			pl.nameRef = nameRef
			pl.ne = p.names.get(k, nameRef)
		}
		if m.Matches("") {
			// Empty-matching: selects streams without the label too. Subtract
			// the streams whose value does not match.
			pl.neg = true
			if pl.ne == nil || (m.Type == labels.MatchRegexp && regexString(m) == ".*") {
				continue // matches every stream
			}
			pl.bm, pl.deferred = ix.nonMatchingFast(pl.nameRef, pl.ne, m)
			if !pl.deferred && (pl.bm == nil || pl.bm.IsEmpty()) {
				continue // no stream has a non-matching value
			}
		} else {
			if pl.ne == nil {
				return nil, false // label absent: nothing matches
			}
			if set := positiveSet(m); len(set) > 0 {
				pl.set = true
				pl.lists, pl.est = ix.setLists(pl.nameRef, pl.ne, set)
				if pl.est == 0 {
					return nil, false
				}
				plans = append(plans, pl)
				continue
			}
			pl.bm, pl.own, pl.deferred = ix.matchingFast(pl.nameRef, pl.ne, m)
			if !pl.deferred && (pl.bm == nil || pl.bm.IsEmpty()) {
				return nil, false
			}
		}
		plans = append(plans, pl)
	}

	// Most selective first: positives by cardinality, deferred positives
	// after them (their cardinality is unknown until resolved), then
	// subtractions, the cheap ones first.
	rank := func(pl matcherPlan) (int, uint64) {
		switch {
		case pl.neg && pl.deferred:
			return 3, uint64(pl.ne.values.len())
		case pl.neg:
			return 2, 0
		case pl.deferred:
			return 1, uint64(pl.ne.values.len())
		case pl.set:
			return 0, pl.est
		}
		return 0, pl.bm.GetCardinality()
	}
	slices.SortStableFunc(plans, func(a, b matcherPlan) int {
		ra, ca := rank(a)
		rb, cb := rank(b)
		if ra != rb {
			return ra - rb
		}
		return cmpUint64(ca, cb)
	})

	var res *roaring64.Bitmap
	owned := false
	for _, pl := range plans {
		switch {
		case pl.neg:
			if res == nil {
				res, owned = all.Clone(), true
			}
			if !owned {
				res, owned = res.Clone(), true
			}
			switch {
			case !pl.deferred:
				res.AndNot(pl.bm)
			case res.GetCardinality() < uint64(pl.ne.values.len()/filterRatio):
				res = ix.filterCandidates(res, pl.nameRef, pl.m)
			default:
				ix.subtractNonMatching(res, pl.nameRef, pl.ne, pl.m)
			}
		case pl.set:
			switch {
			case res == nil:
				res, owned = unionOf(pl.lists), true
			case res.GetCardinality() < pl.est/setFilterRatio:
				res, owned = ix.filterCandidates(res, pl.nameRef, pl.m), true
			default:
				// res is at most the union's size (plans run smallest
				// first): intersect it with each list and unite the
				// parts, instead of building the union first.
				res, owned = intersectEach(res, pl.lists), true
			}
		case pl.deferred:
			if res != nil && res.GetCardinality() < uint64(pl.ne.values.len()/filterRatio) {
				res, owned = ix.filterCandidates(res, pl.nameRef, pl.m), true
			} else {
				bm := ix.scanValues(pl.nameRef, pl.ne, pl.m, true, res)
				if res == nil {
					res, owned = bm, true
				} else {
					if !owned {
						res, owned = res.Clone(), true
					}
					res.And(bm)
				}
			}
		default:
			if res == nil {
				res, owned = pl.bm, pl.own
				continue
			}
			if !owned {
				res, owned = res.Clone(), true
			}
			res.And(pl.bm)
		}
		if res.IsEmpty() {
			return nil, false
		}
	}
	if res == nil {
		return all, false // only match-all matchers (or none)
	}
	return res, owned
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isAnyValue reports whether a regexp matcher's pattern is `.*` or `.+`.
func regexString(m *labels.Matcher) string {
	if m.Type == labels.MatchRegexp || m.Type == labels.MatchNotRegexp {
		return m.GetRegexString()
	}
	return ""
}

// matchingFast resolves a matcher that does not match "" to the set of
// streams whose value matches, using fast paths. deferred means no fast path
// applies; the caller resolves it later.
func (ix *Index) matchingFast(nameRef uint32, ne *nameEntry, m *labels.Matcher) (bm *roaring64.Bitmap, owned, deferred bool) {
	switch m.Type {
	case labels.MatchEqual:
		bm, owned := ix.valueBitmap(nameRef, ne, m.Value)
		return bm, owned, false
	case labels.MatchNotEqual: // != "" : has the label
		return ne.all, false, false
	case labels.MatchRegexp:
		if regexString(m) == ".+" {
			return ne.all, false, false
		}
		// Literal alternatives are a set plan (evalPartition), not
		// resolved here.
		return nil, false, true
	case labels.MatchNotRegexp:
		// !~ that does not match "": its regexp matches "", like `!~ ".*"`
		// or `!~ "|a"`. Rare; scan.
		return nil, false, true
	}
	return nil, false, true
}

// nonMatchingFast resolves a matcher that matches "" (so it also selects
// streams without the label) to the streams to subtract: those with a value
// it does not match. deferred means no fast path applies (the set would be a
// union over many values); the caller subtracts value by value instead.
func (ix *Index) nonMatchingFast(nameRef uint32, ne *nameEntry, m *labels.Matcher) (bm *roaring64.Bitmap, deferred bool) {
	switch m.Type {
	case labels.MatchEqual: // = "" : has no such label
		return ne.all, false
	case labels.MatchNotEqual: // != "x"
		bm, _ := ix.valueBitmap(nameRef, ne, m.Value)
		return bm, false
	case labels.MatchNotRegexp: // the regexp does not match "": subtract values it matches
		if regexString(m) == ".+" {
			return ne.all, false
		}
		if set := m.SetMatches(); len(set) > 0 && len(set) <= maxSetUnion {
			return ix.unionValues(nameRef, ne, set), false
		}
	}
	return nil, true
}

// intersectEach returns the union of res ∩ l over lists, as a new bitmap.
func intersectEach(res *roaring64.Bitmap, lists []postList) *roaring64.Bitmap {
	out := roaring64.New()
	var ids []uint64
	for _, l := range lists {
		if bm := l.big(); bm != nil {
			out.Or(roaring64.And(res, bm))
			continue
		}
		ids = l.appendIDs(ids[:0])
		for _, id := range ids {
			if res.Contains(id) {
				out.Add(id)
			}
		}
	}
	return out
}

// positiveSet returns the literal alternatives of a regexp matcher that
// does not match "" (`=~"a|b"`); nil for any other matcher.
func positiveSet(m *labels.Matcher) []string {
	if m.Type != labels.MatchRegexp || regexString(m) == ".+" {
		return nil
	}
	return m.SetMatches()
}

// maxSetUnion bounds the literal alternatives resolved up front for a
// negative matcher; longer lists are subtracted value by value.
const maxSetUnion = 16

// subtractNonMatching removes from res, in place, the streams whose value for
// the label does not match m (a matcher that matches ""), value by value:
// cheaper than building the union when res is already small.
func (ix *Index) subtractNonMatching(res *roaring64.Bitmap, nameRef uint32, ne *nameEntry, m *labels.Matcher) {
	// For `!~ "re"` a value without re's literal prefix cannot match re, so
	// m matches it and it is kept.
	prefix := ""
	if m.Type == labels.MatchNotRegexp {
		prefix = m.Prefix()
	}
	visit := func(_ uint32, v string, pl postList) {
		if m.Matches(v) {
			return
		}
		pl.removeFrom(res)
	}
	if prefix != "" {
		ix.prefixValues(nameRef, ne, prefix, visit)
		return
	}
	for ref, pl := range ne.values.all() {
		v, _ := ix.syms.value(nameRef, ref)
		visit(ref, v, pl)
	}
}

// prefixValues calls f for every value of ne that starts with prefix. The
// partition's read lock must be held.
func (ix *Index) prefixValues(nameRef uint32, ne *nameEntry, prefix string, f func(ref uint32, v string, pl postList)) {
	val := func(ref uint32) string { v, _ := ix.syms.value(nameRef, ref); return v }
	ne.sortMu.Lock()
	if len(ne.recent) > 0 && len(ne.recent) >= len(ne.sorted)/sortedMergeRatio {
		ne.sorted = mergeSorted(ne.sorted, ne.recent, val, &ne.values)
		ne.recent = ne.recent[:0]
	}
	sorted, recent := ne.sorted, ne.recent
	ne.sortMu.Unlock()

	i, _ := slices.BinarySearchFunc(sorted, prefix, func(ref uint32, p string) int { return strings.Compare(val(ref), p) })
	for ; i < len(sorted); i++ {
		v := val(sorted[i])
		if !strings.HasPrefix(v, prefix) {
			break
		}
		if pl, ok := ne.values.get(sorted[i]); ok {
			f(sorted[i], v, pl)
		}
	}
	for _, ref := range recent {
		if v := val(ref); strings.HasPrefix(v, prefix) {
			if pl, ok := ne.values.get(ref); ok {
				f(ref, v, pl)
			}
		}
	}
}

// sortedMergeRatio: recent values are merged into the sorted list once they
// are at least 1/sortedMergeRatio of it, so a prefix lookup scans a short
// tail and each value is merged O(log n) times overall.
const sortedMergeRatio = 8

// mergeSorted returns a new slice with sorted and recent merged in string
// order, dropping refs no longer in live and duplicates.
func mergeSorted(sorted, recent []uint32, val func(uint32) string, live *postMap) []uint32 {
	rs := slices.Clone(recent)
	slices.SortFunc(rs, func(a, b uint32) int { return strings.Compare(val(a), val(b)) })
	out := make([]uint32, 0, len(sorted)+len(rs))
	add := func(ref uint32) {
		if _, ok := live.get(ref); !ok {
			return
		}
		if n := len(out); n > 0 && out[n-1] == ref {
			return
		}
		out = append(out, ref)
	}
	i, j := 0, 0
	for i < len(sorted) && j < len(rs) {
		if strings.Compare(val(sorted[i]), val(rs[j])) <= 0 {
			add(sorted[i])
			i++
		} else {
			add(rs[j])
			j++
		}
	}
	for ; i < len(sorted); i++ {
		add(sorted[i])
	}
	for ; j < len(rs); j++ {
		add(rs[j])
	}
	return out
}

// valueBitmap returns the postings of one value, nil if absent, and whether
// the caller owns the result (a bitmap built from a small list) or must not
// modify it (the partition's own bitmap).
func (ix *Index) valueBitmap(nameRef uint32, ne *nameEntry, v string) (*roaring64.Bitmap, bool) {
	ref, ok := ix.syms.lookupValue(nameRef, v)
	if !ok {
		return nil, false
	}
	pl, ok := ne.values.get(ref)
	if !ok {
		return nil, false
	}
	return pl.bitmap(), pl.big() == nil
}

// unionValues returns the union of the postings of vals as a new bitmap.
func (ix *Index) unionValues(nameRef uint32, ne *nameEntry, vals []string) *roaring64.Bitmap {
	lists, _ := ix.setLists(nameRef, ne, vals)
	return unionOf(lists)
}

// setLists returns the non-empty postings lists of the values vals of a
// label, and their total size.
func (ix *Index) setLists(nameRef uint32, ne *nameEntry, vals []string) (lists []postList, size uint64) {
	for _, v := range vals {
		if ref, ok := ix.syms.lookupValue(nameRef, v); ok {
			if l, ok := ne.values.get(ref); ok && !l.empty() {
				lists = append(lists, l)
				size += l.card()
			}
		}
	}
	return lists, size
}

// unionOf returns the union of lists as a new bitmap.
func unionOf(lists []postList) *roaring64.Bitmap {
	var u postUnion
	for _, l := range lists {
		u.add(l)
	}
	return u.result()
}

// postUnion collects postings lists to union: bitmaps by reference, small
// lists' IDs into one slice, so a union over many single-ID values builds
// one bitmap instead of one per value.
type postUnion struct {
	bms []*roaring64.Bitmap
	ids []uint64
}

func (u *postUnion) add(pl postList) {
	if bm := pl.big(); bm != nil {
		u.bms = append(u.bms, bm)
		return
	}
	u.ids = pl.appendIDs(u.ids)
}

// result returns the union as a new bitmap the caller owns.
func (u *postUnion) result() *roaring64.Bitmap {
	if len(u.ids) == 0 {
		return orAll(u.bms)
	}
	slices.Sort(u.ids)
	small := roaring64.New()
	small.AddMany(u.ids)
	if len(u.bms) == 0 {
		return small
	}
	return roaring64.FastOr(append(u.bms, small)...)
}

// orAll unions bitmaps into a new one.
func orAll(bms []*roaring64.Bitmap) *roaring64.Bitmap {
	switch len(bms) {
	case 0:
		return roaring64.New()
	case 1:
		return bms[0].Clone()
	}
	return roaring64.FastOr(bms...)
}

// scanValues unions the postings of every value v of ne with m.Matches(v) ==
// want. A literal prefix of a regexp rejects most values with one compare.
// If cands is not nil, the result is only used intersected with it, so
// postings that do not intersect cands are left out of the union (a cheap
// check that saves most of the union when earlier matchers were selective).
func (ix *Index) scanValues(nameRef uint32, ne *nameEntry, m *labels.Matcher, want bool, cands *roaring64.Bitmap) *roaring64.Bitmap {
	prefix := ""
	if want && m.Type == labels.MatchRegexp {
		prefix = m.Prefix()
	}
	var u postUnion
	visit := func(ref uint32, v string, pl postList) {
		if m.Matches(v) == want && (cands == nil || pl.intersects(cands)) {
			u.add(pl)
		}
	}
	if prefix != "" {
		ix.prefixValues(nameRef, ne, prefix, visit)
		return u.result()
	}
	for ref, pl := range ne.values.all() {
		v, _ := ix.syms.value(nameRef, ref)
		visit(ref, v, pl)
	}
	return u.result()
}

// filterCandidates returns the candidates whose value for m.Name matches m;
// a stream without the label has the value "".
func (ix *Index) filterCandidates(cands *roaring64.Bitmap, nameRef uint32, m *labels.Matcher) *roaring64.Bitmap {
	out := roaring64.New()
	matchesEmpty := m.Matches("")
	it := cands.Iterator()
	for it.HasNext() {
		id := it.Next()
		r, ok := ix.rec(ID(id))
		if !ok {
			continue
		}
		vref, ok := labelValueRef(r.enc, nameRef)
		if !ok {
			if matchesEmpty {
				out.Add(id)
			}
			continue
		}
		if v, _ := ix.syms.value(nameRef, vref); m.Matches(v) {
			out.Add(id)
		}
	}
	return out
}

// intersects reports whether small and large share an ID. Postings of one
// value usually hold IDs created close together, so a range test with two
// rank lookups in large rejects most non-intersecting pairs before the
// container-by-container check.
func intersects(small, large *roaring64.Bitmap) bool {
	lo, hi := small.Minimum(), small.Maximum()
	below := uint64(0)
	if lo > 0 {
		below = large.Rank(lo - 1)
	}
	if large.Rank(hi) == below {
		return false
	}
	return small.Intersects(large)
}
