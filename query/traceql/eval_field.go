package traceql

import (
	"github.com/weftdb/weft/storage/traceentry"
)

// Event and link cursors of an evalCtx.
const (
	cursorFirst = -1 // not quantified: read the first event or link that has the field
	cursorNone  = -2 // quantified over a span without events or links: every field is nil
)

// evalCtx is the span being evaluated and what is known about its trace.
type evalCtx struct {
	tr     *traceentry.Trace
	info   *traceInfo
	span   *traceentry.Span
	idx    int32
	ev, ln int
}

// traceInfo holds per-trace values computed at most once per trace.
type traceInfo struct {
	rootDone bool
	root     *traceentry.Span
	spanDone bool
	start    int64
	end      int64
	parent   []int32 // index of each span's parent, -1 if none or not received (needTree)
	children []int32 // number of direct children (needTree)
}

func (c *evalCtx) rootSpan() *traceentry.Span {
	if !c.info.rootDone {
		c.info.root, c.info.rootDone = c.tr.Root(), true
	}
	return c.info.root
}

func (c *evalCtx) traceSpan() (start, end int64) {
	if !c.info.spanDone {
		c.info.start, c.info.end = c.tr.TimeRange()
		c.info.spanDone = true
	}
	return c.info.start, c.info.end
}

func (e *literal) eval(*evalCtx) static { return e.v }

func (e *attribute) eval(c *evalCtx) static {
	s := c.span
	switch e.scope {
	case traceentry.ScopeSpan:
		if v, ok := s.Attributes.Get(e.name); ok {
			return fromValue(v)
		}
	case traceentry.ScopeResource:
		if s.Resource != nil {
			if v, ok := s.Resource.Attributes.Get(e.name); ok {
				return fromValue(v)
			}
		}
	case traceentry.ScopeUnscoped:
		if v, ok := s.Attributes.Get(e.name); ok {
			return fromValue(v)
		}
		if s.Resource != nil {
			if v, ok := s.Resource.Attributes.Get(e.name); ok {
				return fromValue(v)
			}
		}
	case traceentry.ScopeInstrumentation:
		if s.Scope != nil {
			if v, ok := s.Scope.Attributes.Get(e.name); ok {
				return fromValue(v)
			}
		}
	case traceentry.ScopeEvent:
		return cursorAttr(s.Events, c.ev, eventAttrs, e.name)
	case traceentry.ScopeLink:
		return cursorAttr(s.Links, c.ln, linkAttrs, e.name)
	}
	return nilValue
}

func eventAttrs(e *traceentry.Event) traceentry.Attributes { return e.Attributes }
func linkAttrs(l *traceentry.Link) traceentry.Attributes   { return l.Attributes }

// cursorAttr reads an attribute of the event or link at cursor, or with
// cursorFirst of the first one that has it.
func cursorAttr[T any](items []T, cursor int, attrs func(*T) traceentry.Attributes, name string) static {
	switch {
	case cursor >= 0:
		if v, ok := attrs(&items[cursor]).Get(name); ok {
			return fromValue(v)
		}
	case cursor == cursorFirst:
		for i := range items {
			if v, ok := attrs(&items[i]).Get(name); ok {
				return fromValue(v)
			}
		}
	}
	return nilValue
}

// cursorIndex resolves an event or link cursor for an intrinsic: the
// current item, or the first one when not quantified; -1 for none.
func cursorIndex(cursor, n int) int {
	if cursor == cursorFirst && n > 0 {
		return 0
	}
	if cursor < 0 {
		return -1
	}
	return cursor
}

func (e *intrinsic) eval(c *evalCtx) static {
	s := c.span
	switch e.i {
	case traceentry.IntrinsicName:
		return stringValue(s.Name)
	case traceentry.IntrinsicStatus:
		return static{t: vStatus, n: int64(s.StatusCode)}
	case traceentry.IntrinsicStatusMessage:
		return stringValue(s.StatusMessage)
	case traceentry.IntrinsicKind:
		return static{t: vKind, n: int64(s.Kind)}
	case traceentry.IntrinsicDuration:
		return durationValue(s.DurationNanos())
	case traceentry.IntrinsicSpanID:
		return spanIDValue(s.SpanID)
	case traceentry.IntrinsicParentID:
		if s.IsRoot() {
			return nilValue
		}
		return spanIDValue(s.ParentSpanID)
	case traceentry.IntrinsicChildCount:
		if c.info.children == nil {
			return nilValue
		}
		return intValue(int64(c.info.children[c.idx]))
	case traceentry.IntrinsicTraceID:
		return traceIDValue(c.tr.TraceID)
	case traceentry.IntrinsicTraceRootName:
		if r := c.rootSpan(); r != nil {
			return stringValue(r.Name)
		}
	case traceentry.IntrinsicTraceRootService:
		if r := c.rootSpan(); r != nil && r.Resource != nil {
			if v, ok := r.Resource.Attributes.Get("service.name"); ok {
				return fromValue(v)
			}
		}
	case traceentry.IntrinsicTraceDuration:
		start, end := c.traceSpan()
		return durationValue(end - start)
	case traceentry.IntrinsicEventName, traceentry.IntrinsicEventTimeSinceStart:
		i := cursorIndex(c.ev, len(s.Events))
		if i < 0 {
			return nilValue
		}
		if e.i == traceentry.IntrinsicEventName {
			return stringValue(s.Events[i].Name)
		}
		return durationValue(s.Events[i].TimeUnixNano - s.StartUnixNano)
	case traceentry.IntrinsicLinkSpanID, traceentry.IntrinsicLinkTraceID:
		i := cursorIndex(c.ln, len(s.Links))
		if i < 0 {
			return nilValue
		}
		if e.i == traceentry.IntrinsicLinkSpanID {
			return spanIDValue(s.Links[i].SpanID)
		}
		return traceIDValue(s.Links[i].TraceID)
	case traceentry.IntrinsicInstrumentationName:
		if s.Scope != nil {
			return stringValue(s.Scope.Name)
		}
		return stringValue("")
	case traceentry.IntrinsicInstrumentationVersion:
		if s.Scope != nil {
			return stringValue(s.Scope.Version)
		}
		return stringValue("")
	}
	return nilValue
}

func (e *binaryExpr) eval(c *evalCtx) static {
	if e.quantEv || e.quantLn {
		return boolValue(anyOver(c, e.quantEv, e.quantLn, e.evalOnce))
	}
	return e.evalOnce(c)
}

// anyOver reports whether f is true for any event (if ev) and any link (if
// ln) of the span; a span without events or links counts as one with a
// single event or link that has no fields.
func anyOver(c *evalCtx, ev, ln bool, f func(*evalCtx) static) bool {
	saveEv, saveLn := c.ev, c.ln
	defer func() { c.ev, c.ln = saveEv, saveLn }()
	nev, nln := 1, 1
	if ev && len(c.span.Events) > 0 {
		nev = len(c.span.Events)
	}
	if ln && len(c.span.Links) > 0 {
		nln = len(c.span.Links)
	}
	for i := 0; i < nev; i++ {
		if ev {
			c.ev = i
			if len(c.span.Events) == 0 {
				c.ev = cursorNone
			}
		}
		for j := 0; j < nln; j++ {
			if ln {
				c.ln = j
				if len(c.span.Links) == 0 {
					c.ln = cursorNone
				}
			}
			if f(c).isTrue() {
				return true
			}
		}
	}
	return false
}

func (e *binaryExpr) evalOnce(c *evalCtx) static {
	l := e.lhs.eval(c)
	r := e.rhs.eval(c)
	if !e.op.isComparison() {
		return arith(e.op, l, r)
	}
	if e.nilCmp {
		if e.op == opEq {
			return boolValue(l.t == vNil && r.t == vNil)
		}
		return boolValue((l.t == vNil) != (r.t == vNil))
	}
	if l.t == vNil || r.t == vNil {
		return falseValue
	}
	if e.re != nil {
		var matched bool
		switch l.t {
		case vString:
			matched = e.re.MatchString(l.s)
		case vArray:
			for _, v := range l.arr {
				if v.Type() == traceentry.ValueString && e.re.MatchString(v.Str()) {
					matched = true
					break
				}
			}
		default:
			return falseValue
		}
		return boolValue(matched == (e.op == opRe))
	}
	return boolValue(compare(e.op, &l, &r))
}

func (e *logicalExpr) eval(c *evalCtx) static {
	for _, t := range e.terms {
		if t.eval(c).isTrue() == e.or {
			return boolValue(e.or)
		}
	}
	return boolValue(!e.or)
}

func (e *unaryExpr) eval(c *evalCtx) static {
	v := e.x.eval(c)
	if !e.neg {
		if v.t != vBool {
			return nilValue
		}
		return boolValue(v.n == 0)
	}
	switch v.t {
	case vInt, vDuration:
		return static{t: v.t, n: -v.n}
	case vFloat:
		return floatValue(-v.f)
	}
	return nilValue
}

func (e *anyExpr) eval(c *evalCtx) static {
	return boolValue(anyOver(c, e.ev, e.link, e.x.eval))
}
