// Package logentry defines what the log store hands to the LogQL engine: a
// log entry, the parameters of a select, and the iterator over its entries.
// It sits below both (storage/logstore produces these values, query/logql
// consumes them through its own Source interface), so that storage never
// imports query.
package logentry

import "github.com/prometheus/prometheus/model/labels"

// Direction is the order in which a log query returns entries.
type Direction uint8

const (
	// Forward returns the oldest entries first.
	Forward Direction = 0
	// Backward returns the newest entries first (Loki's default for log queries).
	Backward Direction = 1
)

// String returns "forward" or "backward", as the Loki HTTP API spells them.
func (d Direction) String() string {
	if d == Backward {
		return "backward"
	}
	return "forward"
}

// Entry is one log line of a stream.
type Entry struct {
	Timestamp int64         // unix nanoseconds
	Line      string        // the log line
	Metadata  labels.Labels // structured metadata (trace_id, span_id, detected_level, ...)
}

// LineFilterOp is the operator of a line filter pushed down to the store.
type LineFilterOp uint8

const (
	// LineContains keeps lines that contain Value (literal, case-sensitive).
	LineContains LineFilterOp = 0
	// LineNotContains keeps lines that do not contain Value (literal, case-sensitive).
	LineNotContains LineFilterOp = 1
)

// LineFilter is a literal line filter that the store may use to skip
// chunks that cannot match. Only LineContains and LineNotContains are pushed
// down; regular expressions and patterns are not.
type LineFilter struct {
	Op    LineFilterOp
	Value string
}

// SelectParams describes the entries a query needs from the store.
type SelectParams struct {
	Start, End  int64             // unix ns, [Start, End)
	Matchers    []*labels.Matcher // the stream selector
	LineFilters []LineFilter      // hints: the store may skip chunks that cannot match; the engine re-applies every filter
	Direction   Direction
}

// Iterator yields the entries of one stream after another (stream order
// unspecified), each stream's entries in ascending timestamp order. At's
// values are valid until Next. An iterator is used by one goroutine and must
// be closed.
type Iterator interface {
	Next() bool
	At() (stream labels.Labels, e Entry)
	Err() error
	Close() error
}
