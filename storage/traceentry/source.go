package traceentry

import (
	"context"
	"strconv"
)

// Source is what the TraceQL engine reads traces from; the trace store
// implements it. Fetch must be safe for concurrent use.
//
// Fetch returns an iterator over the traces that overlap the request's time
// range. It may return more traces than match: the engine re-evaluates the
// whole query on every trace (and re-checks the time range), so the Hints
// are only a way to skip blocks and traces that cannot match. It must not
// return fewer: a trace that could match must be yielded, whole.
type Source interface {
	Fetch(ctx context.Context, req FetchRequest) (Iterator, error)
}

// Iterator yields whole traces, each once, in any order (a store that can
// yield the most recent traces first should: the engine stops reading once
// it has the requested number of matches). At's trace, its spans and
// everything they point to are valid until the next call to Next or Close;
// the engine neither keeps nor modifies them, so a store may reuse its
// buffers. An iterator is used by one goroutine, stops early when the
// Fetch context is cancelled (Err then returns the context's error), and
// must be closed, also after an error.
type Iterator interface {
	Next() bool
	At() *Trace
	Err() error
	Close() error
}

// FetchRequest is what the engine asks of a Source.
type FetchRequest struct {
	// Start and End bound the search in unix nanoseconds: a trace overlaps
	// when its earliest span start is before End and its latest span end is
	// at or after Start. End 0 means no upper bound.
	Start, End int64
	// Hints are necessary conditions for a trace to match the query.
	Hints Hints
}

// Overlaps reports whether a trace that spans [start, end] (unix ns) overlaps
// the request's time range.
func (r FetchRequest) Overlaps(start, end int64) bool {
	return end >= r.Start && (r.End == 0 || start < r.End)
}

// Hints are conditions extracted from a query that a matching trace must
// meet; a store may use them to skip blocks and traces. They are necessary,
// not sufficient: the engine evaluates the whole query afterwards.
//
// With AllConditions, a trace can match only if one of its spans satisfies
// every condition at once (conditions on trace-level intrinsics hold for
// all spans of a trace or none). Without it, a trace can match only if one
// of its spans satisfies at least one condition. No conditions: any trace
// may match.
type Hints struct {
	Conditions    []Condition
	AllConditions bool
}

// Condition is one comparison "Field Op Operand" from the query, with
// TraceQL's semantics: a span lacking the field (or whose value is
// ValueEmpty) does not satisfy it, not even with OpNotEqual; an attribute of
// another type than the operand does not satisfy it, except that int, float
// and duration compare as numbers; strings compare byte-wise. An array
// attribute satisfies OpEqual, OpRegex and the orderings if one element
// does, OpNotEqual and OpNotRegex if no element is equal (matches). Bytes
// and map values satisfy nothing.
//
// Operand encoding: strings, ints, floats and booleans as such; durations
// (and the duration intrinsics) as ValueInt nanoseconds; status and kind as
// ValueInt of the OTLP enum value; for OpRegex and OpNotRegex the pattern as
// a ValueString that is already fully anchored ("^(?:...)$", Go RE2
// syntax); for the ID intrinsics a ValueString of lowercase hex with leading
// zeros trimmed (IDs compare that way: "0001" equals "1").
type Condition struct {
	Field   Field
	Op      Op
	Operand Value
}

// Op is a comparison operator of a Condition.
type Op uint8

// The comparison operators.
const (
	OpEqual Op = iota + 1
	OpNotEqual
	OpLess
	OpLessEqual
	OpGreater
	OpGreaterEqual
	OpRegex
	OpNotRegex
)

var opNames = [...]string{"", "=", "!=", "<", "<=", ">", ">=", "=~", "!~"}

// String returns the TraceQL spelling of the operator.
func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Field is what a Condition reads: an intrinsic (Scope ScopeIntrinsic,
// Intrinsic set, Name empty) or an attribute (Scope and Name set).
type Field struct {
	Scope     Scope
	Name      string
	Intrinsic Intrinsic
}

// Scope is where an attribute lives.
type Scope uint8

// The scopes. ScopeUnscoped (".name" in TraceQL) reads the span attribute,
// or the resource attribute when the span has none. Event and link
// attributes are satisfied by any one event or link of the span.
const (
	ScopeIntrinsic Scope = iota
	ScopeUnscoped
	ScopeSpan
	ScopeResource
	ScopeEvent
	ScopeLink
	ScopeInstrumentation
)

var scopeNames = [...]string{"intrinsic", "", "span", "resource", "event", "link", "instrumentation"}

// String returns the TraceQL prefix of the scope ("span", "resource", ...),
// "" for ScopeUnscoped and "intrinsic" for ScopeIntrinsic.
func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// Intrinsic is a built-in field of a span or of its trace.
type Intrinsic uint8

// The intrinsics (TraceQL spelling in the comment). Trace-level intrinsics
// are the same for every span of a trace.
const (
	IntrinsicNone                   Intrinsic = iota
	IntrinsicName                             // name, span:name (string)
	IntrinsicStatus                           // status, span:status (StatusCode)
	IntrinsicStatusMessage                    // statusMessage, span:statusMessage (string)
	IntrinsicKind                             // kind, span:kind (SpanKind)
	IntrinsicDuration                         // duration, span:duration (ns)
	IntrinsicSpanID                           // span:id (hex)
	IntrinsicParentID                         // span:parentID (hex; absent on roots)
	IntrinsicChildCount                       // span:childCount (int)
	IntrinsicTraceID                          // trace:id (hex)
	IntrinsicTraceRootName                    // rootName, trace:rootName (string; absent without a root)
	IntrinsicTraceRootService                 // rootServiceName, trace:rootService (string; absent without a root)
	IntrinsicTraceDuration                    // traceDuration, trace:duration (ns: latest end - earliest start)
	IntrinsicEventName                        // event:name (string, any event)
	IntrinsicEventTimeSinceStart              // event:timeSinceStart (ns after span start, any event)
	IntrinsicLinkTraceID                      // link:traceID (hex, any link)
	IntrinsicLinkSpanID                       // link:spanID (hex, any link)
	IntrinsicInstrumentationName              // instrumentation:name (string)
	IntrinsicInstrumentationVersion           // instrumentation:version (string)
)

var intrinsicNames = [...]string{"", "name", "status", "statusMessage", "kind", "duration",
	"span:id", "span:parentID", "span:childCount", "trace:id", "rootName", "rootServiceName",
	"traceDuration", "event:name", "event:timeSinceStart", "link:traceID", "link:spanID",
	"instrumentation:name", "instrumentation:version"}

// String returns the intrinsic's TraceQL name, the unscoped spelling where
// one exists ("name", "traceDuration"), else the scoped one ("span:id").
// Tempo uses the same names as attribute keys in search results.
func (i Intrinsic) String() string {
	if int(i) < len(intrinsicNames) && i != IntrinsicNone {
		return intrinsicNames[i]
	}
	return "Intrinsic(" + strconv.Itoa(int(i)) + ")"
}

// TraceLevel reports whether the intrinsic is a property of the whole trace.
func (i Intrinsic) TraceLevel() bool {
	switch i {
	case IntrinsicTraceID, IntrinsicTraceRootName, IntrinsicTraceRootService, IntrinsicTraceDuration:
		return true
	}
	return false
}
