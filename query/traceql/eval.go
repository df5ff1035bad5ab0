package traceql

import (
	"github.com/weftdb/weft/storage/traceentry"
)

// Match is one spanset that survived a query's pipeline on one trace.
type Match struct {
	// Spans are the spanset's spans, in the trace's order. They point into
	// the evaluated trace.
	Spans []*traceentry.Span
	// Attributes are the spanset's values from by() (key "by(<expr>)") and
	// from aggregates that filtered it (key "count()", "avg(duration)", ...),
	// in pipeline order, as Tempo reports them.
	Attributes []Attribute
}

// Attribute is a key and a value in a result.
type Attribute struct {
	Key   string
	Value traceentry.Value
}

// Evaluator evaluates one query on trace after trace, reusing its memory, so
// that evaluating a simple filter allocates nothing per span (nor, once
// warm, per trace). It is not safe for concurrent use; create one per
// goroutine with Query.NewEvaluator.
type Evaluator struct {
	q     *Query
	info  traceInfo
	ctx   evalCtx
	ints  intArena
	byID  map[traceentry.SpanID]int32
	sibs  map[traceentry.SpanID]int32
	mark  []int8
	mark2 []int8
	path  []int32
	group map[string]int
	key   []byte

	top     []spanset
	out     []Match
	outPtrs []*traceentry.Span
	outAttr []Attribute
}

// NewEvaluator returns an Evaluator of q.
func (q *Query) NewEvaluator() *Evaluator {
	return &Evaluator{q: q}
}

// EvalTrace evaluates q on tr and returns the spansets that survive the
// pipeline, nil when the trace does not match. It allocates a fresh
// Evaluator; to evaluate many traces, reuse one.
func (q *Query) EvalTrace(tr *traceentry.Trace) []Match {
	return q.NewEvaluator().Eval(tr)
}

// Eval evaluates the query on tr and returns the spansets that survive the
// pipeline (nil when the trace does not match). The matches, their span
// slices and attributes are valid until the next call to Eval, and tr must
// not change meanwhile.
func (e *Evaluator) Eval(tr *traceentry.Trace) []Match {
	sets := e.eval(tr)
	e.out, e.outPtrs, e.outAttr = e.out[:0], e.outPtrs[:0], e.outAttr[:0]
	if len(sets) == 0 {
		return nil
	}
	// Fill the buffers first, then slice them: appending may move them.
	for _, ss := range sets {
		for _, i := range ss.idx {
			e.outPtrs = append(e.outPtrs, &tr.Spans[i])
		}
		for _, a := range ss.attrs {
			e.outAttr = append(e.outAttr, Attribute{Key: a.key, Value: a.val.toValue()})
		}
	}
	p, a := 0, 0
	for _, ss := range sets {
		np, na := p+len(ss.idx), a+len(ss.attrs)
		e.out = append(e.out, Match{Spans: e.outPtrs[p:np:np], Attributes: e.outAttr[a:na:na]})
		p, a = np, na
	}
	return e.out
}

// spanset is a set of spans of the trace being evaluated (indices into
// Trace.Spans, ascending) with the values by() and aggregates attached.
type spanset struct {
	idx   []int32
	attrs []ssAttr
}

type ssAttr struct {
	key string
	val static
}

// intArena hands out int32 slices that stay valid until reset; chunks are
// kept from trace to trace.
type intArena struct {
	chunks [][]int32
	cur    int
	off    int
}

const arenaChunk = 4096 // int32s per chunk: 16 KiB, enough for most traces at once

func (a *intArena) reset() { a.cur, a.off = 0, 0 }

// alloc returns an empty slice with capacity n.
func (a *intArena) alloc(n int) []int32 {
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if len(c)-a.off >= n {
			s := c[a.off : a.off : a.off+n]
			a.off += n
			return s
		}
		a.cur++
		a.off = 0
	}
	size := max(n, arenaChunk)
	a.chunks = append(a.chunks, make([]int32, size))
	a.off = n
	return a.chunks[a.cur][0:0:n]
}

func (e *Evaluator) eval(tr *traceentry.Trace) []spanset {
	e.ints.reset()
	e.info = traceInfo{parent: e.info.parent[:0], children: e.info.children[:0]}
	e.ctx = evalCtx{tr: tr, info: &e.info, ev: cursorFirst, ln: cursorFirst}
	n := len(tr.Spans)
	if n == 0 || e.q.noop {
		return nil
	}
	if e.q.needTree {
		e.buildTree(tr)
	} else {
		e.info.parent, e.info.children = nil, nil
	}
	all := e.ints.alloc(n)
	for i := range n {
		all = append(all, int32(i))
	}
	e.top = append(e.top[:0], spanset{idx: all})
	return e.pipeline(e.q.pipeline, e.top)
}

func (e *Evaluator) buildTree(tr *traceentry.Trace) {
	n := len(tr.Spans)
	if e.byID == nil {
		e.byID = make(map[traceentry.SpanID]int32, n)
	}
	clear(e.byID)
	for i := range tr.Spans {
		if _, dup := e.byID[tr.Spans[i].SpanID]; !dup {
			e.byID[tr.Spans[i].SpanID] = int32(i)
		}
	}
	e.info.parent = growInt32(e.info.parent, n)
	e.info.children = growInt32(e.info.children, n)
	for i := range tr.Spans {
		e.info.parent[i] = -1
		e.info.children[i] = 0
	}
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.IsRoot() {
			continue
		}
		if p, ok := e.byID[s.ParentSpanID]; ok && p != int32(i) {
			e.info.parent[i] = p
			e.info.children[p]++
		}
	}
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growInt8(s []int8, n int) []int8 {
	if cap(s) < n {
		s = make([]int8, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (e *Evaluator) pipeline(pl *pipeline, in []spanset) []spanset {
	for _, st := range pl.stages {
		if len(in) == 0 {
			return nil
		}
		in = e.stage(st, in)
	}
	return in
}

func (e *Evaluator) stage(st stage, in []spanset) []spanset {
	switch st := st.(type) {
	case spansetExpr:
		if len(in) == 1 { // the common case, without a new slice
			ss, ok := e.spanset(st, in[0])
			if !ok {
				return nil
			}
			in[0] = ss
			return in
		}
		out := in[:0:0]
		for _, ss := range in {
			if r, ok := e.spanset(st, ss); ok {
				out = append(out, r)
			}
		}
		return out
	case *scalarFilter:
		out := in[:0]
		for _, ss := range in {
			v := e.aggregate(st, ss)
			if v.t != vNil && compare(st.op, &v, &st.value) {
				ss.attrs = appendAttr(ss.attrs, ssAttr{key: aggKey(st), val: v})
				out = append(out, ss)
			}
		}
		return out
	case *groupBy:
		return e.groupBy(st, in)
	case *coalesceStage:
		if len(in) == 1 {
			in[0].attrs = nil
			return in
		}
		return []spanset{{idx: e.unionAll(in)}}
	case *selectStage:
		return in
	}
	return in
}

// appendAttr appends without sharing a backing array with other spansets.
func appendAttr(a []ssAttr, x ssAttr) []ssAttr {
	out := make([]ssAttr, len(a), len(a)+1)
	copy(out, a)
	return append(out, x)
}

func aggKey(st *scalarFilter) string { return st.key }

// spanset evaluates a spanset expression on one input spanset.
func (e *Evaluator) spanset(x spansetExpr, in spanset) (spanset, bool) {
	switch x := x.(type) {
	case *spansetFilter:
		if x.expr == nil {
			return in, len(in.idx) > 0
		}
		out := e.ints.alloc(len(in.idx))
		c := &e.ctx
		for _, i := range in.idx {
			c.span, c.idx = &c.tr.Spans[i], i
			if x.expr.eval(c).isTrue() {
				out = append(out, i)
			}
		}
		return spanset{idx: out, attrs: in.attrs}, len(out) > 0
	case *pipeline:
		res := e.pipeline(x, []spanset{in})
		switch len(res) {
		case 0:
			return spanset{}, false
		case 1:
			return res[0], true
		}
		return spanset{idx: e.unionAll(res), attrs: in.attrs}, true
	case *spansetOp:
		l, lok := e.spanset(x.lhs, in)
		r, rok := e.spanset(x.rhs, in)
		var out []int32
		switch x.op {
		case ssAnd:
			if !lok || !rok {
				return spanset{}, false
			}
			out = e.union(l.idx, r.idx)
		case ssOr:
			switch {
			case lok && rok:
				out = e.union(l.idx, r.idx)
			case lok:
				out = l.idx
			case rok:
				out = r.idx
			}
		default:
			if !rok {
				return spanset{}, false
			}
			if !lok {
				l.idx = nil
			}
			out = e.structural(x.op, l.idx, r.idx)
		}
		return spanset{idx: out, attrs: in.attrs}, len(out) > 0
	}
	return spanset{}, false
}

// union merges two ascending index lists.
func (e *Evaluator) union(a, b []int32) []int32 {
	out := e.ints.alloc(len(a) + len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func (e *Evaluator) unionAll(sets []spanset) []int32 {
	var out []int32
	for _, ss := range sets {
		out = e.union(out, ss.idx)
	}
	return out
}
