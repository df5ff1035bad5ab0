package otlptraces

import (
	"cmp"
	"fmt"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/weftdb/weft/storage/traceentry"
)

// ToPtrace converts stored spans to OTLP: one ResourceSpans per distinct
// resource and one ScopeSpans per distinct scope within it (by pointer), in
// the order they first appear once the spans are sorted by start time. It
// is the inverse of FromPtrace and what the Tempo API answers.
func ToPtrace(in []traceentry.Span) ptrace.Traces {
	spans := make([]*traceentry.Span, len(in))
	for i := range in {
		spans[i] = &in[i]
	}
	slices.SortStableFunc(spans, func(a, b *traceentry.Span) int { return cmp.Compare(a.StartUnixNano, b.StartUnixNano) })
	td := ptrace.NewTraces()
	type scopeKey struct {
		r *traceentry.Resource
		s *traceentry.InstrumentationScope
	}
	res := map[*traceentry.Resource]ptrace.ResourceSpans{}
	scopes := map[scopeKey]ptrace.ScopeSpans{}
	for _, sp := range spans {
		rs, ok := res[sp.Resource]
		if !ok {
			rs = td.ResourceSpans().AppendEmpty()
			if r := sp.Resource; r != nil {
				putAttrs(rs.Resource().Attributes(), r.Attributes)
				rs.Resource().SetDroppedAttributesCount(r.DroppedAttributesCount)
				rs.SetSchemaUrl(r.SchemaURL)
			}
			res[sp.Resource] = rs
		}
		k := scopeKey{sp.Resource, sp.Scope}
		ss, ok := scopes[k]
		if !ok {
			ss = rs.ScopeSpans().AppendEmpty()
			if sc := sp.Scope; sc != nil {
				ss.Scope().SetName(sc.Name)
				ss.Scope().SetVersion(sc.Version)
				putAttrs(ss.Scope().Attributes(), sc.Attributes)
				ss.Scope().SetDroppedAttributesCount(sc.DroppedAttributesCount)
				ss.SetSchemaUrl(sc.SchemaURL)
			}
			scopes[k] = ss
		}
		putSpan(ss.Spans().AppendEmpty(), sp)
	}
	return td
}

func putSpan(out ptrace.Span, sp *traceentry.Span) {
	out.SetTraceID(pcommon.TraceID(sp.TraceID))
	out.SetSpanID(pcommon.SpanID(sp.SpanID))
	out.SetParentSpanID(pcommon.SpanID(sp.ParentSpanID))
	out.TraceState().FromRaw(sp.TraceState)
	out.SetFlags(sp.Flags)
	out.SetName(sp.Name)
	out.SetKind(ptrace.SpanKind(sp.Kind))
	out.Status().SetCode(ptrace.StatusCode(sp.StatusCode))
	out.Status().SetMessage(sp.StatusMessage)
	out.SetStartTimestamp(pcommon.Timestamp(sp.StartUnixNano))
	out.SetEndTimestamp(pcommon.Timestamp(sp.EndUnixNano))
	putAttrs(out.Attributes(), sp.Attributes)
	out.SetDroppedAttributesCount(sp.DroppedAttributesCount)
	out.SetDroppedEventsCount(sp.DroppedEventsCount)
	out.SetDroppedLinksCount(sp.DroppedLinksCount)
	for _, e := range sp.Events {
		ev := out.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(e.TimeUnixNano))
		ev.SetName(e.Name)
		putAttrs(ev.Attributes(), e.Attributes)
		ev.SetDroppedAttributesCount(e.DroppedAttributesCount)
	}
	for _, l := range sp.Links {
		lk := out.Links().AppendEmpty()
		lk.SetTraceID(pcommon.TraceID(l.TraceID))
		lk.SetSpanID(pcommon.SpanID(l.SpanID))
		lk.TraceState().FromRaw(l.TraceState)
		putAttrs(lk.Attributes(), l.Attributes)
		lk.SetDroppedAttributesCount(l.DroppedAttributesCount)
		lk.SetFlags(l.Flags)
	}
}

func putAttrs(m pcommon.Map, as traceentry.Attributes) {
	m.EnsureCapacity(len(as))
	for _, kv := range as {
		putValue(m.PutEmpty(kv.Key), kv.Value)
	}
}

func putValue(dst pcommon.Value, v traceentry.Value) {
	switch v.Type() {
	case traceentry.ValueString:
		dst.SetStr(v.Str())
	case traceentry.ValueInt:
		dst.SetInt(v.Int())
	case traceentry.ValueFloat:
		dst.SetDouble(v.Float())
	case traceentry.ValueBool:
		dst.SetBool(v.Bool())
	case traceentry.ValueBytes:
		dst.SetEmptyBytes().FromRaw(v.Bytes())
	case traceentry.ValueArray:
		s := dst.SetEmptySlice()
		for _, e := range v.Array() {
			putValue(s.AppendEmpty(), e)
		}
	case traceentry.ValueMap:
		putAttrs(dst.SetEmptyMap(), v.Map())
	}
}

// FromPtrace converts OTLP spans to stored spans without the receiver's
// workload mapping: what ToPtrace wrote comes back equal (spans of one OTLP
// scope share one Scope and one Resource). A span the store could not hold
// (zero IDs, ending before it starts) is an error, so bytes from elsewhere
// than ToPtrace are checked as the receiver checks them.
func FromPtrace(td ptrace.Traces) ([]traceentry.Span, error) {
	var out []traceentry.Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		r := rs.Resource()
		res := &traceentry.Resource{Attributes: attrs(r.Attributes(), 0), DroppedAttributesCount: r.DroppedAttributesCount(), SchemaURL: rs.SchemaUrl()}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := scopeOf(ss)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if reason := invalid(sp); reason != "" {
					return nil, fmt.Errorf("otlp spans: %s", reason)
				}
				out = append(out, span(sp, scope, res))
			}
		}
	}
	return out, nil
}

// MarshalSpans appends the OTLP protobuf (TracesData) of spans to dst.
func MarshalSpans(dst []byte, spans []traceentry.Span) ([]byte, error) {
	var m ptrace.ProtoMarshaler
	b, err := m.MarshalTraces(ToPtrace(spans))
	if err != nil {
		return dst, fmt.Errorf("marshal spans: %w", err)
	}
	return append(dst, b...), nil
}

// UnmarshalSpans decodes what MarshalSpans wrote (any OTLP TracesData).
func UnmarshalSpans(b []byte) ([]traceentry.Span, error) {
	var u ptrace.ProtoUnmarshaler
	td, err := u.UnmarshalTraces(b)
	if err != nil {
		return nil, fmt.Errorf("unmarshal spans: %w", err)
	}
	return FromPtrace(td)
}
