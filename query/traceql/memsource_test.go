package traceql

import (
	"cmp"
	"context"
	"regexp"
	"strings"

	"github.com/weftdb/weft/storage/traceentry"
)

// memSource is a Source over traces in memory, yielded in load order.
type memSource struct {
	traces  []*traceentry.Trace
	lastReq traceentry.FetchRequest
	fetches int
}

func (m *memSource) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	m.lastReq = req
	m.fetches++
	return &sliceIter{ctx: ctx, traces: m.traces, i: -1}, nil
}

type sliceIter struct {
	ctx    context.Context
	traces []*traceentry.Trace
	i      int
	err    error
}

func (it *sliceIter) Next() bool {
	if it.err = it.ctx.Err(); it.err != nil {
		return false
	}
	it.i++
	return it.i < len(it.traces)
}
func (it *sliceIter) At() *traceentry.Trace { return it.traces[it.i] }
func (it *sliceIter) Err() error            { return it.err }
func (it *sliceIter) Close() error          { return nil }

// pruningSource behaves as a store that trusts the hints: it drops every
// trace that is outside the time range or that the hints exclude, judged by
// refHintsAllow, an implementation of traceentry's documented Condition
// semantics independent of the engine's. Answers through it must equal
// answers through memSource: that shows the hints never exclude a match.
type pruningSource struct {
	mem    *memSource
	pruned int
}

func (p *pruningSource) Fetch(ctx context.Context, req traceentry.FetchRequest) (traceentry.Iterator, error) {
	var kept []*traceentry.Trace
	for _, tr := range p.mem.traces {
		if req.Overlaps(tr.TimeRange()) && refHintsAllow(req.Hints, tr) {
			kept = append(kept, tr)
		} else {
			p.pruned++
		}
	}
	return &sliceIter{ctx: ctx, traces: kept, i: -1}, nil
}

func refHintsAllow(h traceentry.Hints, tr *traceentry.Trace) bool {
	if len(h.Conditions) == 0 {
		return true
	}
	for i := range tr.Spans {
		n := 0
		for _, c := range h.Conditions {
			if refCondition(c, tr, &tr.Spans[i]) {
				n++
			}
		}
		if (h.AllConditions && n == len(h.Conditions)) || (!h.AllConditions && n > 0) {
			return true
		}
	}
	return false
}

// refCondition: does the span satisfy the condition? A field may have
// several values (one per event or link): the condition holds if it holds
// for one of them. For one value: = and ordering hold if the value (an
// array: one element) satisfies them; != and !~ hold if the value is of a
// comparable type and not equal (not matching), an array if no element is
// equal (matches).
func refCondition(c traceentry.Condition, tr *traceentry.Trace, s *traceentry.Span) bool {
	for _, v := range refFieldValues(c.Field, tr, s) {
		if refHolds(c, v) {
			return true
		}
	}
	return false
}

func refHolds(c traceentry.Condition, v traceentry.Value) bool {
	switch c.Op {
	case traceentry.OpNotEqual, traceentry.OpNotRegex:
		pos := traceentry.OpEqual
		if c.Op == traceentry.OpNotRegex {
			pos = traceentry.OpRegex
		}
		if v.Type() != traceentry.ValueArray && !refComparable(v, c.Operand, c.Op) {
			return false
		}
		for _, e := range refElems(v) {
			if refCompare(pos, e, c.Operand) {
				return false
			}
		}
		return true
	}
	for _, e := range refElems(v) {
		if refCompare(c.Op, e, c.Operand) {
			return true
		}
	}
	return false
}

func refElems(v traceentry.Value) []traceentry.Value {
	if v.Type() == traceentry.ValueArray {
		return v.Array()
	}
	return []traceentry.Value{v}
}

func refComparable(v, operand traceentry.Value, op traceentry.Op) bool {
	if op == traceentry.OpNotRegex {
		return v.Type() == traceentry.ValueString
	}
	num := func(t traceentry.ValueType) bool { return t == traceentry.ValueInt || t == traceentry.ValueFloat }
	return v.Type() == operand.Type() || num(v.Type()) && num(operand.Type())
}

func refCompare(op traceentry.Op, v, operand traceentry.Value) bool {
	if op == traceentry.OpRegex {
		if v.Type() != traceentry.ValueString {
			return false
		}
		return regexp.MustCompile(operand.Str()).MatchString(v.Str())
	}
	num := func(x traceentry.Value) (float64, bool) {
		switch x.Type() {
		case traceentry.ValueInt:
			return float64(x.Int()), true
		case traceentry.ValueFloat:
			return x.Float(), true
		}
		return 0, false
	}
	var c int
	if a, ok := num(v); ok {
		b, ok := num(operand)
		if !ok {
			return false
		}
		if v.Type() == traceentry.ValueInt && operand.Type() == traceentry.ValueInt {
			c = cmp.Compare(v.Int(), operand.Int())
		} else {
			c = cmp.Compare(a, b)
		}
	} else if v.Type() != operand.Type() {
		return false
	} else {
		switch v.Type() {
		case traceentry.ValueString:
			c = strings.Compare(v.Str(), operand.Str())
		case traceentry.ValueBool:
			if op != traceentry.OpEqual && op != traceentry.OpNotEqual {
				return false
			}
			c = 1
			if v.Bool() == operand.Bool() {
				c = 0
			}
		default:
			return false
		}
	}
	switch op {
	case traceentry.OpEqual:
		return c == 0
	case traceentry.OpNotEqual:
		return c != 0
	case traceentry.OpLess:
		return c < 0
	case traceentry.OpLessEqual:
		return c <= 0
	case traceentry.OpGreater:
		return c > 0
	case traceentry.OpGreaterEqual:
		return c >= 0
	}
	return false
}

// refFieldValues returns the values a field has on a span, encoded as
// hint operands are (IDs as trimmed hex, enums and durations as ints).
func refFieldValues(f traceentry.Field, tr *traceentry.Trace, s *traceentry.Span) []traceentry.Value {
	str := func(x string) []traceentry.Value { return []traceentry.Value{traceentry.StringValue(x)} }
	num := func(x int64) []traceentry.Value { return []traceentry.Value{traceentry.IntValue(x)} }
	hexID := func(b []byte) traceentry.Value {
		return traceentry.StringValue(strings.TrimLeft(hexString(b), "0"))
	}
	get := func(a traceentry.Attributes, name string) []traceentry.Value {
		if v, ok := a.Get(name); ok && v.Type() != traceentry.ValueEmpty {
			return []traceentry.Value{v}
		}
		return nil
	}
	switch f.Scope {
	case traceentry.ScopeSpan:
		return get(s.Attributes, f.Name)
	case traceentry.ScopeResource:
		if s.Resource != nil {
			return get(s.Resource.Attributes, f.Name)
		}
		return nil
	case traceentry.ScopeUnscoped:
		if v := get(s.Attributes, f.Name); v != nil {
			return v
		}
		if s.Resource != nil {
			return get(s.Resource.Attributes, f.Name)
		}
		return nil
	case traceentry.ScopeInstrumentation:
		if s.Scope != nil {
			return get(s.Scope.Attributes, f.Name)
		}
		return nil
	case traceentry.ScopeEvent:
		var out []traceentry.Value
		for _, e := range s.Events {
			out = append(out, get(e.Attributes, f.Name)...)
		}
		return out
	case traceentry.ScopeLink:
		var out []traceentry.Value
		for _, l := range s.Links {
			out = append(out, get(l.Attributes, f.Name)...)
		}
		return out
	}
	switch f.Intrinsic {
	case traceentry.IntrinsicName:
		return str(s.Name)
	case traceentry.IntrinsicStatus:
		return num(int64(s.StatusCode))
	case traceentry.IntrinsicStatusMessage:
		return str(s.StatusMessage)
	case traceentry.IntrinsicKind:
		return num(int64(s.Kind))
	case traceentry.IntrinsicDuration:
		return num(s.EndUnixNano - s.StartUnixNano)
	case traceentry.IntrinsicSpanID:
		return []traceentry.Value{hexID(s.SpanID[:])}
	case traceentry.IntrinsicParentID:
		if s.ParentSpanID.IsZero() {
			return nil
		}
		return []traceentry.Value{hexID(s.ParentSpanID[:])}
	case traceentry.IntrinsicChildCount:
		n := 0
		for i := range tr.Spans {
			if tr.Spans[i].ParentSpanID == s.SpanID && &tr.Spans[i] != s {
				n++
			}
		}
		return num(int64(n))
	case traceentry.IntrinsicTraceID:
		return []traceentry.Value{hexID(tr.TraceID[:])}
	case traceentry.IntrinsicTraceRootName:
		if r := tr.Root(); r != nil {
			return str(r.Name)
		}
	case traceentry.IntrinsicTraceRootService:
		if r := tr.Root(); r != nil && r.Resource != nil {
			return get(r.Resource.Attributes, "service.name")
		}
	case traceentry.IntrinsicTraceDuration:
		start, end := tr.TimeRange()
		return num(end - start)
	case traceentry.IntrinsicEventName:
		var out []traceentry.Value
		for _, e := range s.Events {
			out = append(out, str(e.Name)...)
		}
		return out
	case traceentry.IntrinsicEventTimeSinceStart:
		var out []traceentry.Value
		for _, e := range s.Events {
			out = append(out, num(e.TimeUnixNano-s.StartUnixNano)...)
		}
		return out
	case traceentry.IntrinsicLinkTraceID, traceentry.IntrinsicLinkSpanID:
		var out []traceentry.Value
		for _, l := range s.Links {
			if f.Intrinsic == traceentry.IntrinsicLinkTraceID {
				out = append(out, hexID(l.TraceID[:]))
			} else {
				out = append(out, hexID(l.SpanID[:]))
			}
		}
		return out
	case traceentry.IntrinsicInstrumentationName, traceentry.IntrinsicInstrumentationVersion:
		if s.Scope == nil {
			return str("")
		}
		if f.Intrinsic == traceentry.IntrinsicInstrumentationName {
			return str(s.Scope.Name)
		}
		return str(s.Scope.Version)
	}
	return nil
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
