package traceentry

import "strconv"

// SpanKind is the OTLP span kind; the values are OTLP's.
type SpanKind int32

// The OTLP span kinds.
const (
	SpanKindUnspecified SpanKind = 0
	SpanKindInternal    SpanKind = 1
	SpanKindServer      SpanKind = 2
	SpanKindClient      SpanKind = 3
	SpanKindProducer    SpanKind = 4
	SpanKindConsumer    SpanKind = 5
)

var spanKindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// String returns TraceQL's spelling of the kind ("server", "client", ...).
func (k SpanKind) String() string {
	if k >= 0 && int(k) < len(spanKindNames) {
		return spanKindNames[k]
	}
	return "SpanKind(" + strconv.Itoa(int(k)) + ")"
}

// StatusCode is the OTLP span status code; the values are OTLP's.
type StatusCode int32

// The OTLP status codes.
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

var statusNames = [...]string{"unset", "ok", "error"}

// String returns TraceQL's spelling of the status ("unset", "ok", "error").
func (c StatusCode) String() string {
	if c >= 0 && int(c) < len(statusNames) {
		return statusNames[c]
	}
	return "StatusCode(" + strconv.Itoa(int(c)) + ")"
}

// Resource is the entity that produced spans (OTLP Resource). Spans of the
// same OTLP ResourceSpans share one *Resource. The service name is the
// attribute "service.name".
type Resource struct {
	Attributes             Attributes
	DroppedAttributesCount uint32
	SchemaURL              string // of the ResourceSpans
}

// ServiceName returns the string value of the "service.name" attribute, ""
// if there is none.
func (r *Resource) ServiceName() string {
	if r == nil {
		return ""
	}
	v, _ := r.Attributes.Get("service.name")
	return v.Str()
}

// InstrumentationScope is the library that recorded spans (OTLP
// InstrumentationScope). Spans of the same ScopeSpans share one pointer.
type InstrumentationScope struct {
	Name                   string
	Version                string
	Attributes             Attributes
	DroppedAttributesCount uint32
	SchemaURL              string // of the ScopeSpans
}

// Event is a timestamped annotation of a span (OTLP Span.Event).
type Event struct {
	TimeUnixNano           int64
	Name                   string
	Attributes             Attributes
	DroppedAttributesCount uint32
}

// Link points from a span to another span, possibly of another trace (OTLP
// Span.Link).
type Link struct {
	TraceID                TraceID
	SpanID                 SpanID
	TraceState             string
	Attributes             Attributes
	DroppedAttributesCount uint32
	Flags                  uint32
}

// Span is one OTLP span with pointers to its resource and instrumentation
// scope. Times are unix nanoseconds (OTLP's fixed64 fits int64 until 2262).
type Span struct {
	TraceID      TraceID
	SpanID       SpanID
	ParentSpanID SpanID // zero for a root span
	TraceState   string
	Flags        uint32

	Name          string
	Kind          SpanKind
	StatusCode    StatusCode
	StatusMessage string

	StartUnixNano int64
	EndUnixNano   int64

	Attributes Attributes
	Events     []Event
	Links      []Link

	DroppedAttributesCount uint32
	DroppedEventsCount     uint32
	DroppedLinksCount      uint32

	Scope    *InstrumentationScope // nil when unknown
	Resource *Resource             // nil when unknown
}

// DurationNanos returns EndUnixNano - StartUnixNano.
func (s *Span) DurationNanos() int64 { return s.EndUnixNano - s.StartUnixNano }

// IsRoot reports whether the span has no parent.
func (s *Span) IsRoot() bool { return s.ParentSpanID.IsZero() }

// Trace is a whole trace: every stored span of one trace ID, from however
// many resources and batches, in no particular order.
type Trace struct {
	TraceID TraceID
	Spans   []Span
}

// Root returns the root span (no parent); among several, the one that
// started first (ties: the first in Spans). It returns nil when the root
// span has not been received.
func (t *Trace) Root() *Span {
	var root *Span
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.IsRoot() && (root == nil || s.StartUnixNano < root.StartUnixNano) {
			root = s
		}
	}
	return root
}

// TimeRange returns the earliest span start and the latest span end (unix
// ns); both are 0 for a trace without spans.
func (t *Trace) TimeRange() (start, end int64) {
	for i := range t.Spans {
		s := &t.Spans[i]
		if i == 0 || s.StartUnixNano < start {
			start = s.StartUnixNano
		}
		if i == 0 || s.EndUnixNano > end {
			end = s.EndUnixNano
		}
	}
	return start, end
}

// MergeSpans returns dst with the spans of src whose span ID dst lacks
// appended: the spans of one trace read from two places (two blocks, a
// block and an ingester), each once.
func MergeSpans(dst, src []Span) []Span {
	have := make(map[SpanID]struct{}, len(dst))
	for i := range dst {
		have[dst[i].SpanID] = struct{}{}
	}
	for _, sp := range src {
		if _, dup := have[sp.SpanID]; !dup {
			have[sp.SpanID] = struct{}{}
			dst = append(dst, sp)
		}
	}
	return dst
}

// Merge returns a with the spans of b that it lacks added (MergeSpans),
// one trace read from two places; either may be nil (none read there).
func Merge(a, b *Trace) *Trace {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	a.Spans = MergeSpans(a.Spans, b.Spans)
	return a
}
