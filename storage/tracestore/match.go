package tracestore

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/grafana/regexp"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// How the store uses a fetch's hints (traceentry.Hints): each condition is
// judged, at each level the store reads, as certainly false, certainly true
// or unknown (the data at that level does not say). A block, page or trace
// part is skipped only when the hints certainly exclude it:
//
//   - AllConditions: one span must satisfy every condition, so a level is
//     skipped when one condition is false there for every span;
//   - otherwise: one span must satisfy one condition, so a level is skipped
//     when every condition is false there.
//
// Conditions are judged per trace part (the spans of a trace stored
// together): a span lies in one part, so a part that no span of which can
// satisfy the hints cannot make its trace match; another part of the same
// trace is judged on its own. Trace-level intrinsics other than trace:id
// are unknown at every level (they need the whole trace).

type verdict uint8

const (
	unknown verdict = iota
	no
	yes
)

// plan is a fetch's compiled hints.
type plan struct {
	conds []cond
	all   bool
	// streams, when set, holds every trace stream a matching span can
	// have (AllConditions with resource conditions that map to stream
	// labels).
	streams *roaring64.Bitmap
	key     []byte
}

type cond struct {
	traceentry.Condition
	re *regexp.Regexp
}

// newPlan compiles h. Regular expressions that do not compile make their
// condition unknown everywhere (the engine reports the query's errors).
func (s *Store) newPlan(ctx context.Context, h traceentry.Hints, start, end int64) (*plan, error) {
	pl := &plan{all: h.AllConditions || len(h.Conditions) == 1}
	var ms []*labels.Matcher
	for _, c := range h.Conditions {
		cc := cond{Condition: c}
		if c.Op == traceentry.OpRegex || c.Op == traceentry.OpNotRegex {
			re, err := regexp.Compile(c.Operand.Str())
			if err != nil {
				continue
			}
			cc.re = re
		}
		pl.conds = append(pl.conds, cc)
		if c.Field.Scope == traceentry.ScopeResource && c.Op == traceentry.OpEqual &&
			c.Operand.Type() == traceentry.ValueString && c.Operand.Str() != "" {
			if name, ok := s.opts.ResourceLabels[c.Field.Name]; ok {
				ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, name, c.Operand.Str()))
			}
		}
	}
	if len(pl.conds) < len(h.Conditions) && !pl.all {
		// An "any" condition that cannot be judged makes everything
		// possible.
		pl.conds = nil
	}
	if pl.all && len(ms) > 0 {
		mint, maxt := nsToMs(start), int64(1<<62)
		if end != 0 {
			maxt = nsToMs(end)
		}
		ids, err := s.ix.Postings(ctx, index.KindTrace, mint, maxt, ms...)
		if err != nil {
			return nil, fmt.Errorf("trace stream postings: %w", err)
		}
		pl.streams = ids
	}
	return pl, nil
}

// combine folds per-condition verdicts into whether the level may match.
func (pl *plan) mayMatch(judge func(c *cond) verdict) bool {
	if len(pl.conds) == 0 {
		return true
	}
	for i := range pl.conds {
		v := judge(&pl.conds[i])
		if pl.all && v == no {
			return false
		}
		if !pl.all && v != no {
			return true
		}
	}
	return pl.all
}

// blockMay judges a block from its header.
func (pl *plan) blockMay(b *blockMeta) bool {
	if pl.streams != nil && !slices.ContainsFunc(b.streams, func(id index.ID) bool { return pl.streams.Contains(uint64(id)) }) {
		return false
	}
	return pl.mayMatch(func(c *cond) verdict {
		if c.Op != traceentry.OpEqual {
			return unknown
		}
		switch c.Field.Scope {
		case traceentry.ScopeIntrinsic:
			switch c.Field.Intrinsic {
			case traceentry.IntrinsicName:
				if c.Operand.Type() == traceentry.ValueString {
					pl.key = valueKey(pl.key, valueName, "", c.Operand.Str())
					return absentIfNot(b.values.mayContain(pl.key))
				}
			case traceentry.IntrinsicTraceID:
				if id, err := traceentry.ParseTraceID(c.Operand.Str()); err == nil {
					return absentIfNot(b.ids.mayContain(id[:]))
				}
				return no
			}
		case traceentry.ScopeSpan, traceentry.ScopeResource, traceentry.ScopeUnscoped:
			if c.Operand.Type() != traceentry.ValueString {
				return unknown
			}
			spanKnown := slices.Contains(b.indexed, c.Field.Name)
			inSpan, inRes := false, false
			if c.Field.Scope != traceentry.ScopeResource {
				if !spanKnown {
					return unknown
				}
				pl.key = valueKey(pl.key, valueSpanAttr, c.Field.Name, c.Operand.Str())
				inSpan = b.values.mayContain(pl.key)
			}
			if c.Field.Scope != traceentry.ScopeSpan {
				pl.key = valueKey(pl.key, valueResAttr, c.Field.Name, c.Operand.Str())
				inRes = b.values.mayContain(pl.key)
			}
			return absentIfNot(inSpan || inRes)
		}
		return unknown
	})
}

func absentIfNot(may bool) verdict {
	if may {
		return unknown
	}
	return no
}

// pageMay judges a page from its summary in the block header.
func (pl *plan) pageMay(p *pageMeta) bool {
	return pl.mayMatch(func(c *cond) verdict {
		if c.Field.Scope != traceentry.ScopeIntrinsic {
			return unknown
		}
		switch c.Field.Intrinsic {
		case traceentry.IntrinsicDuration:
			if c.Operand.Type() != traceentry.ValueInt && c.Operand.Type() != traceentry.ValueFloat {
				return no
			}
			lo, hi := holds(c, traceentry.IntValue(p.minDur)), holds(c, traceentry.IntValue(p.maxDur))
			switch c.Op {
			case traceentry.OpGreater, traceentry.OpGreaterEqual:
				return boolVerdict(hi)
			case traceentry.OpLess, traceentry.OpLessEqual:
				return boolVerdict(lo)
			case traceentry.OpEqual:
				v := c.Operand
				if v.Type() == traceentry.ValueInt && (v.Int() < p.minDur || v.Int() > p.maxDur) {
					return no
				}
			}
		case traceentry.IntrinsicStatus, traceentry.IntrinsicKind:
			mask := p.statuses
			if c.Field.Intrinsic == traceentry.IntrinsicKind {
				mask = p.kinds
			}
			if c.Operand.Type() != traceentry.ValueInt {
				return no
			}
			switch c.Op {
			case traceentry.OpEqual:
				return boolVerdict(mask&bit(int(c.Operand.Int())) != 0)
			case traceentry.OpNotEqual:
				return boolVerdict(mask&^bit(int(c.Operand.Int())) != 0)
			}
		case traceentry.IntrinsicTraceID:
			if c.Op == traceentry.OpEqual {
				id, err := traceentry.ParseTraceID(c.Operand.Str())
				if err != nil {
					return no
				}
				return boolVerdict(compareIDs(p.first, id) <= 0 && compareIDs(id, p.last) <= 0)
			}
		}
		return unknown
	})
}

func boolVerdict(b bool) verdict {
	if b {
		return unknown // "may": a page summary never proves a span matches
	}
	return no
}

// partMay judges a trace part from its spans. full is false for spans
// decoded from a light section only: then their span attributes are only
// those in indexed (the block's indexed list).
func (pl *plan) partMay(id traceentry.TraceID, spans []traceentry.Span, full bool, indexed []string) bool {
	if len(pl.conds) == 0 {
		return true
	}
	for i := range spans {
		sp := &spans[i]
		if pl.mayMatch(func(c *cond) verdict { return judgeSpan(c, id, sp, full, indexed) }) {
			return true
		}
	}
	return false
}

// judgeSpan judges one condition on one span.
func judgeSpan(c *cond, id traceentry.TraceID, sp *traceentry.Span, full bool, indexed []string) verdict {
	vals, known := fieldValues(c.Field, id, sp, full, indexed)
	if !known {
		return unknown
	}
	for _, v := range vals {
		if holds(c, v) {
			return yes
		}
	}
	return no
}

// fieldValues returns the values a field has on a span, encoded as hint
// operands are (IDs as trimmed hex, enums and durations as ints), and
// whether the data at hand decides them.
func fieldValues(f traceentry.Field, id traceentry.TraceID, sp *traceentry.Span, full bool, indexed []string) ([]traceentry.Value, bool) {
	get := func(a traceentry.Attributes, name string) []traceentry.Value {
		if v, ok := a.Get(name); ok && v.Type() != traceentry.ValueEmpty {
			return []traceentry.Value{v}
		}
		return nil
	}
	spanKnown := func(name string) bool { return full || slices.Contains(indexed, name) }
	switch f.Scope {
	case traceentry.ScopeSpan:
		return get(sp.Attributes, f.Name), spanKnown(f.Name)
	case traceentry.ScopeResource:
		if sp.Resource == nil {
			return nil, true
		}
		return get(sp.Resource.Attributes, f.Name), true
	case traceentry.ScopeUnscoped:
		if !spanKnown(f.Name) {
			return nil, false
		}
		if v := get(sp.Attributes, f.Name); v != nil {
			return v, true
		}
		if sp.Resource == nil {
			return nil, true
		}
		return get(sp.Resource.Attributes, f.Name), true
	case traceentry.ScopeInstrumentation:
		if !full || sp.Scope == nil {
			return nil, full
		}
		return get(sp.Scope.Attributes, f.Name), true
	case traceentry.ScopeEvent, traceentry.ScopeLink:
		if !full {
			return nil, false
		}
		var out []traceentry.Value
		if f.Scope == traceentry.ScopeEvent {
			for _, e := range sp.Events {
				out = append(out, get(e.Attributes, f.Name)...)
			}
		} else {
			for _, l := range sp.Links {
				out = append(out, get(l.Attributes, f.Name)...)
			}
		}
		return out, true
	}
	one := func(v traceentry.Value) ([]traceentry.Value, bool) { return []traceentry.Value{v}, true }
	switch f.Intrinsic {
	case traceentry.IntrinsicName:
		return one(traceentry.StringValue(sp.Name))
	case traceentry.IntrinsicStatus:
		return one(traceentry.IntValue(int64(sp.StatusCode)))
	case traceentry.IntrinsicKind:
		return one(traceentry.IntValue(int64(sp.Kind)))
	case traceentry.IntrinsicDuration:
		return one(traceentry.IntValue(sp.EndUnixNano - sp.StartUnixNano))
	case traceentry.IntrinsicSpanID:
		return one(hexID(sp.SpanID[:]))
	case traceentry.IntrinsicParentID:
		if sp.ParentSpanID.IsZero() {
			return nil, true
		}
		return one(hexID(sp.ParentSpanID[:]))
	case traceentry.IntrinsicTraceID:
		return one(hexID(id[:]))
	case traceentry.IntrinsicStatusMessage:
		if !full {
			return nil, false
		}
		return one(traceentry.StringValue(sp.StatusMessage))
	case traceentry.IntrinsicEventName, traceentry.IntrinsicEventTimeSinceStart:
		if !full {
			return nil, false
		}
		var out []traceentry.Value
		for _, e := range sp.Events {
			if f.Intrinsic == traceentry.IntrinsicEventName {
				out = append(out, traceentry.StringValue(e.Name))
			} else {
				out = append(out, traceentry.IntValue(e.TimeUnixNano-sp.StartUnixNano))
			}
		}
		return out, true
	case traceentry.IntrinsicLinkTraceID, traceentry.IntrinsicLinkSpanID:
		if !full {
			return nil, false
		}
		var out []traceentry.Value
		for _, l := range sp.Links {
			if f.Intrinsic == traceentry.IntrinsicLinkTraceID {
				out = append(out, hexID(l.TraceID[:]))
			} else {
				out = append(out, hexID(l.SpanID[:]))
			}
		}
		return out, true
	case traceentry.IntrinsicInstrumentationName, traceentry.IntrinsicInstrumentationVersion:
		if !full {
			return nil, false
		}
		if sp.Scope == nil {
			return one(traceentry.StringValue(""))
		}
		if f.Intrinsic == traceentry.IntrinsicInstrumentationName {
			return one(traceentry.StringValue(sp.Scope.Name))
		}
		return one(traceentry.StringValue(sp.Scope.Version))
	}
	// childCount and the trace-level intrinsics need the whole trace.
	return nil, false
}

func hexID(b []byte) traceentry.Value {
	return traceentry.StringValue(strings.TrimLeft(hex.EncodeToString(b), "0"))
}

// holds reports whether value v satisfies c (traceentry.Condition's
// semantics; an array satisfies = and the orderings through one element,
// != and !~ when no element is equal or matches).
func holds(c *cond, v traceentry.Value) bool {
	switch c.Op {
	case traceentry.OpNotEqual, traceentry.OpNotRegex:
		pos := traceentry.OpEqual
		if c.Op == traceentry.OpNotRegex {
			pos = traceentry.OpRegex
		}
		if v.Type() != traceentry.ValueArray && !comparableTypes(v, c.Operand, c.Op) {
			return false
		}
		for _, e := range elems(v) {
			if compare(c, pos, e) {
				return false
			}
		}
		return true
	}
	for _, e := range elems(v) {
		if compare(c, c.Op, e) {
			return true
		}
	}
	return false
}

func elems(v traceentry.Value) []traceentry.Value {
	if v.Type() == traceentry.ValueArray {
		return v.Array()
	}
	return []traceentry.Value{v}
}

func isNum(t traceentry.ValueType) bool {
	return t == traceentry.ValueInt || t == traceentry.ValueFloat
}

func comparableTypes(v, operand traceentry.Value, op traceentry.Op) bool {
	if op == traceentry.OpNotRegex {
		return v.Type() == traceentry.ValueString
	}
	return v.Type() == operand.Type() || isNum(v.Type()) && isNum(operand.Type())
}

func compare(c *cond, op traceentry.Op, v traceentry.Value) bool {
	if op == traceentry.OpRegex {
		return c.re != nil && v.Type() == traceentry.ValueString && c.re.MatchString(v.Str())
	}
	o := c.Operand
	var r int
	switch {
	case v.Type() == traceentry.ValueInt && o.Type() == traceentry.ValueInt:
		r = cmp.Compare(v.Int(), o.Int())
	case isNum(v.Type()) && isNum(o.Type()):
		r = cmp.Compare(num(v), num(o))
	case v.Type() != o.Type():
		return false
	case v.Type() == traceentry.ValueString:
		r = strings.Compare(v.Str(), o.Str())
	case v.Type() == traceentry.ValueBool:
		if op != traceentry.OpEqual && op != traceentry.OpNotEqual {
			return false
		}
		if v.Bool() != o.Bool() {
			r = 1
		}
	default:
		return false
	}
	switch op {
	case traceentry.OpEqual:
		return r == 0
	case traceentry.OpNotEqual:
		return r != 0
	case traceentry.OpLess:
		return r < 0
	case traceentry.OpLessEqual:
		return r <= 0
	case traceentry.OpGreater:
		return r > 0
	case traceentry.OpGreaterEqual:
		return r >= 0
	}
	return false
}

func num(v traceentry.Value) float64 {
	if v.Type() == traceentry.ValueInt {
		return float64(v.Int())
	}
	return v.Float()
}
