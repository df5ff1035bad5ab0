package traceql

import (
	"github.com/weftdb/weft/storage/traceentry"
)

// structural applies a structural operator: it keeps the spans of r that
// stand in the operator's relation to some span of l (none of l for the
// negated forms); the union forms also keep those spans of l. l and r are
// ascending index lists; a span is never its own parent, child, ancestor,
// descendant or sibling. Broken parent links (a parent not received, a
// cycle) end the walk up the tree.
func (e *Evaluator) structural(op spansetOpKind, l, r []int32) []int32 {
	n := len(e.ctx.tr.Spans)
	parent := e.info.parent
	inL := e.markSet(&e.mark, n, l)
	var out, extra []int32 // extra: the spans of l kept by the union forms
	switch op {
	case ssChild, ssNotChild, ssUChild:
		out = e.keep(r, func(i int32) bool {
			p := parent[i]
			return (p >= 0 && inL[p] == 1) != (op == ssNotChild)
		})
		if op == ssUChild {
			kept := e.markSet(&e.mark2, n, nil)
			for _, i := range out {
				kept[parent[i]] = 1
			}
			extra = e.keep(l, func(i int32) bool { return kept[i] == 1 })
		}
	case ssParent, ssNotParent, ssUParent:
		isParent := e.markSet(&e.mark2, n, nil) // parents of spans of l
		for _, i := range l {
			if p := parent[i]; p >= 0 {
				isParent[p] = 1
			}
		}
		out = e.keep(r, func(i int32) bool { return (isParent[i] == 1) != (op == ssNotParent) })
		if op == ssUParent {
			kept := e.markSet(&e.mark, n, out) // inL is no longer needed
			extra = e.keep(l, func(i int32) bool { p := parent[i]; return p >= 0 && kept[p] == 1 })
		}
	case ssDesc, ssNotDesc, ssUDesc:
		memo := e.markSet(&e.mark2, n, nil)
		out = e.keep(r, func(i int32) bool { return e.hasAncestorIn(i, inL, memo) != (op == ssNotDesc) })
		if op == ssUDesc {
			extra = e.ancestorsIn(out, inL, l)
		}
	case ssAnc, ssNotAnc, ssUAnc:
		isAnc := e.markSet(&e.mark2, n, nil) // ancestors of spans of l
		for _, i := range l {
			for p, steps := parent[i], 0; p >= 0 && isAnc[p] == 0 && steps < n; p, steps = parent[p], steps+1 {
				isAnc[p] = 1
			}
		}
		out = e.keep(r, func(i int32) bool { return (isAnc[i] == 1) != (op == ssNotAnc) })
		if op == ssUAnc {
			kept := e.markSet(&e.mark, n, out)
			memo := e.markSet(&e.mark2, n, nil)
			extra = e.keep(l, func(i int32) bool { return e.hasAncestorIn(i, kept, memo) })
		}
	case ssSibling, ssNotSibling, ssUSibling:
		counts := e.siblingCounts(l)
		out = e.keep(r, func(i int32) bool { return e.hasSibling(i, counts, inL) != (op == ssNotSibling) })
		if op == ssUSibling {
			countsR := e.siblingCounts(out)
			inOut := e.markSet(&e.mark2, n, out)
			extra = e.keep(l, func(i int32) bool { return e.hasSibling(i, countsR, inOut) })
		}
	}
	if len(extra) > 0 {
		return e.union(out, extra)
	}
	return out
}

// keep returns the spans of set for which pred holds, ascending.
func (e *Evaluator) keep(set []int32, pred func(i int32) bool) []int32 {
	out := e.ints.alloc(len(set))
	for _, i := range set {
		if pred(i) {
			out = append(out, i)
		}
	}
	return out
}

// markSet returns a zeroed mark slice of n with the spans of set marked 1.
func (e *Evaluator) markSet(buf *[]int8, n int, set []int32) []int8 {
	m := growInt8(*buf, n)
	*buf = m
	for _, i := range set {
		m[i] = 1
	}
	return m
}

// Memo states for hasAncestorIn.
const (
	memoUnknown = 0
	memoYes     = 1
	memoNo      = 2
	memoActive  = 3 // on the current walk (cycle guard)
)

// hasAncestorIn reports whether a proper ancestor of span i is marked in
// set, memoizing per span so that a whole spanset costs O(spans).
func (e *Evaluator) hasAncestorIn(i int32, set, memo []int8) bool {
	parent := e.info.parent
	// Walk up until a known answer, a marked ancestor, or the top.
	path := e.path[:0]
	defer func() { e.path = path[:0] }()
	p := parent[i]
	result := false
	for p >= 0 {
		if set[p] == 1 {
			result = true
			break
		}
		switch memo[p] {
		case memoYes:
			result = true
		case memoNo, memoActive:
			result = false
		default:
			memo[p] = memoActive
			path = append(path, p)
			p = parent[p]
			continue
		}
		break
	}
	// Every span on the path has the same answer for its own ancestors.
	for _, q := range path {
		if result {
			memo[q] = memoYes
		} else {
			memo[q] = memoNo
		}
	}
	return result
}

// ancestorsIn returns the spans of l that are ancestors of some span of out.
func (e *Evaluator) ancestorsIn(out []int32, inL []int8, l []int32) []int32 {
	n := len(e.ctx.tr.Spans)
	seen := e.markSet(&e.mark2, n, nil)
	for _, i := range out {
		for p, steps := e.info.parent[i], 0; p >= 0 && seen[p] == 0 && steps < n; p, steps = e.info.parent[p], steps+1 {
			seen[p] = 1
		}
	}
	return e.keep(l, func(i int32) bool { return seen[i] == 1 && inL[i] == 1 })
}

// siblingCounts counts the spans of set per parent span ID.
func (e *Evaluator) siblingCounts(set []int32) map[traceentry.SpanID]int32 {
	if e.sibs == nil {
		e.sibs = map[traceentry.SpanID]int32{}
	}
	clear(e.sibs)
	for _, i := range set {
		if s := &e.ctx.tr.Spans[i]; !s.IsRoot() {
			e.sibs[s.ParentSpanID]++
		}
	}
	return e.sibs
}

// hasSibling reports whether another span with span i's parent is counted.
func (e *Evaluator) hasSibling(i int32, counts map[traceentry.SpanID]int32, inSet []int8) bool {
	s := &e.ctx.tr.Spans[i]
	if s.IsRoot() {
		return false
	}
	c := counts[s.ParentSpanID]
	if inSet[i] == 1 {
		c--
	}
	return c > 0
}
