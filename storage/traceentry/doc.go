// Package traceentry defines what the trace store hands to the TraceQL
// engine: the span data model (Span, Resource, InstrumentationScope, Event,
// Link, typed attribute Values), a whole Trace, and the read contract
// (Source, FetchRequest with pushdown Hints, Iterator).
//
// It sits below both the trace store (which produces these values) and
// query/traceql (which consumes them), so that storage never imports query,
// as storage/logentry does for logs. It imports nothing of weft and no
// third-party package.
//
// The model keeps what OTLP sent: IDs as fixed-size arrays, the OTLP enum
// values of span kind and status code, attribute values of every OTLP type
// (arrays, maps and bytes included), events, links, the instrumentation scope
// and the resource. Values are plain data: a Trace and everything it points
// to may be read by any number of goroutines as long as nobody writes it.
package traceentry
