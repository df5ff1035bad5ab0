package otlptraces

import (
	"fmt"
	"slices"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/weftdb/weft/ingest/workload"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// Stream label names written for every trace resource (Loki's, so that a
// trace's resource and its logs' stream carry the same labels).
const (
	ServiceName    = "service_name"
	UnknownService = "unknown_service"
)

// maxValueDepth bounds the nesting of attribute values kept as such
// (arrays and maps in maps); deeper values are kept as their JSON string.
const maxValueDepth = 16

// converter turns ptrace.Traces into store resources. Immutable; safe for
// concurrent use.
type converter struct {
	mapping *workload.Mapping
	index   map[string]string // resource attribute → label name
}

func newConverter(m *workload.Mapping, indexLabels []string) *converter {
	c := &converter{mapping: m, index: make(map[string]string, len(indexLabels))}
	var namer otlptranslator.LabelNamer
	for _, a := range indexLabels {
		if n, err := namer.Build(a); err == nil {
			c.index[a] = n
		}
	}
	return c
}

// resource is one converted OTLP resource.
type resource struct {
	rs  tracestore.ResourceSpans
	res *traceentry.Resource
	// ctx are its workload-context labels; service its service.name.
	ctx     []workload.Label
	service string
}

// rejection counts invalid spans and keeps the first reasons.
type rejection struct {
	n       int64
	reasons []string
}

// maxReasons is how many distinct rejection reasons a response names.
const maxReasons = 3

func (r *rejection) add(reason string) {
	r.n++
	if len(r.reasons) < maxReasons && !slices.Contains(r.reasons, reason) {
		r.reasons = append(r.reasons, reason)
	}
}

// convert maps td to one resource per OTLP ResourceSpans with valid spans.
func (c *converter) convert(td ptrace.Traces, rej *rejection) []resource {
	rss := td.ResourceSpans()
	out := make([]resource, 0, rss.Len())
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		r := c.resource(rs.Resource(), rs.SchemaUrl())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := scopeOf(ss)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if reason := invalid(sp); reason != "" {
					rej.add(reason)
					continue
				}
				r.rs.Spans = append(r.rs.Spans, span(sp, scope, r.resourcePtr()))
			}
		}
		if len(r.rs.Spans) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// scopeOf is the stored form of ss's instrumentation scope.
func scopeOf(ss ptrace.ScopeSpans) *traceentry.InstrumentationScope {
	sc := ss.Scope()
	return &traceentry.InstrumentationScope{
		Name: sc.Name(), Version: sc.Version(), Attributes: attrs(sc.Attributes(), 0),
		DroppedAttributesCount: sc.DroppedAttributesCount(), SchemaURL: ss.SchemaUrl(),
	}
}

// resourcePtr is the resource every span of r points to.
func (r *resource) resourcePtr() *traceentry.Resource { return r.res }

// invalid returns why a span cannot be stored, or "".
func invalid(sp ptrace.Span) string {
	switch {
	case sp.TraceID().IsEmpty():
		return "invalid trace id: all zeros"
	case sp.SpanID().IsEmpty():
		return "invalid span id: all zeros"
	case sp.EndTimestamp() < sp.StartTimestamp():
		return fmt.Sprintf("span %s ends before it starts", sp.SpanID())
	case uint64(sp.EndTimestamp()) > 1<<63-1:
		return fmt.Sprintf("span %s: end time beyond 2262", sp.SpanID())
	}
	return ""
}

func (c *converter) resource(res pcommon.Resource, schemaURL string) resource {
	attrsMap := res.Attributes()
	r := resource{}
	r.res = &traceentry.Resource{Attributes: attrs(attrsMap, 0), DroppedAttributesCount: res.DroppedAttributesCount(), SchemaURL: schemaURL}
	used := map[string]bool{}
	var pairs []labels.Label
	if c.mapping != nil {
		r.ctx = c.mapping.AppendLabels(nil, func(name string) (string, bool) {
			v, ok := attrsMap.Get(name)
			if !ok {
				return "", false
			}
			s := v.AsString()
			if s != "" {
				used[name] = true // AppendLabels stops at the first non-empty hit
			}
			return s, true
		})
		for _, l := range r.ctx {
			pairs = append(pairs, labels.Label{Name: l.Name, Value: l.Value})
		}
	}
	has := func(n string) bool {
		return slices.ContainsFunc(pairs, func(l labels.Label) bool { return l.Name == n })
	}
	attrsMap.Range(func(k string, v pcommon.Value) bool {
		if n, ok := c.index[k]; ok && !used[k] {
			if s := v.AsString(); s != "" && !has(n) {
				pairs = append(pairs, labels.Label{Name: n, Value: s})
			}
		}
		return true
	})
	if v, ok := attrsMap.Get("service.name"); ok {
		r.service = v.AsString()
	}
	if !has(ServiceName) {
		svc := r.service
		if svc == "" {
			svc = UnknownService
		}
		pairs = append(pairs, labels.Label{Name: ServiceName, Value: svc})
	}
	if !has(workload.JobLabel) { // the service's job, as its metrics have it
		if job := workload.ServiceJob(func(name string) (string, bool) {
			v, ok := attrsMap.Get(name)
			if !ok {
				return "", false
			}
			return v.AsString(), true
		}); job != "" {
			pairs = append(pairs, labels.Label{Name: workload.JobLabel, Value: job})
		}
	}
	r.rs.Labels = labels.New(pairs...)
	return r
}

func span(sp ptrace.Span, scope *traceentry.InstrumentationScope, res *traceentry.Resource) traceentry.Span {
	out := traceentry.Span{
		TraceID:                traceentry.TraceID(sp.TraceID()),
		SpanID:                 traceentry.SpanID(sp.SpanID()),
		ParentSpanID:           traceentry.SpanID(sp.ParentSpanID()),
		TraceState:             sp.TraceState().AsRaw(),
		Flags:                  sp.Flags(),
		Name:                   sp.Name(),
		Kind:                   traceentry.SpanKind(sp.Kind()),
		StatusCode:             traceentry.StatusCode(sp.Status().Code()),
		StatusMessage:          sp.Status().Message(),
		StartUnixNano:          int64(sp.StartTimestamp()),
		EndUnixNano:            int64(sp.EndTimestamp()),
		Attributes:             attrs(sp.Attributes(), 0),
		DroppedAttributesCount: sp.DroppedAttributesCount(),
		DroppedEventsCount:     sp.DroppedEventsCount(),
		DroppedLinksCount:      sp.DroppedLinksCount(),
		Scope:                  scope,
		Resource:               res,
	}
	if evs := sp.Events(); evs.Len() > 0 {
		out.Events = make([]traceentry.Event, evs.Len())
		for i := range out.Events {
			e := evs.At(i)
			out.Events[i] = traceentry.Event{TimeUnixNano: int64(e.Timestamp()), Name: e.Name(),
				Attributes: attrs(e.Attributes(), 0), DroppedAttributesCount: e.DroppedAttributesCount()}
		}
	}
	if ls := sp.Links(); ls.Len() > 0 {
		out.Links = make([]traceentry.Link, ls.Len())
		for i := range out.Links {
			l := ls.At(i)
			out.Links[i] = traceentry.Link{TraceID: traceentry.TraceID(l.TraceID()), SpanID: traceentry.SpanID(l.SpanID()),
				TraceState: l.TraceState().AsRaw(), Attributes: attrs(l.Attributes(), 0),
				DroppedAttributesCount: l.DroppedAttributesCount(), Flags: l.Flags()}
		}
	}
	return out
}

func attrs(m pcommon.Map, depth int) traceentry.Attributes {
	if m.Len() == 0 {
		return nil
	}
	out := make(traceentry.Attributes, 0, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		out = append(out, traceentry.KeyValue{Key: k, Value: value(v, depth)})
		return true
	})
	return out
}

func value(v pcommon.Value, depth int) traceentry.Value {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return traceentry.StringValue(v.Str())
	case pcommon.ValueTypeInt:
		return traceentry.IntValue(v.Int())
	case pcommon.ValueTypeDouble:
		return traceentry.FloatValue(v.Double())
	case pcommon.ValueTypeBool:
		return traceentry.BoolValue(v.Bool())
	case pcommon.ValueTypeBytes:
		return traceentry.BytesValue(v.Bytes().AsRaw())
	case pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
		if depth >= maxValueDepth {
			return traceentry.StringValue(v.AsString())
		}
		if v.Type() == pcommon.ValueTypeMap {
			return traceentry.MapValue(attrs(v.Map(), depth+1)...)
		}
		s := v.Slice()
		arr := make([]traceentry.Value, s.Len())
		for i := range arr {
			arr[i] = value(s.At(i), depth+1)
		}
		return traceentry.ArrayValue(arr...)
	}
	return traceentry.Value{}
}
