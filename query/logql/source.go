package logql

import (
	"context"

	"github.com/weftdb/weft/storage/logentry"
)

// The values a Source exchanges with the engine are defined in
// storage/logentry, below both the log store and this package, so that the
// store implements Source without importing query.
type (
	// Direction is the order in which a log query returns entries.
	Direction = logentry.Direction
	// Entry is one log line of a stream.
	Entry = logentry.Entry
	// LineFilterOp is the operator of a line filter pushed down to the Source.
	LineFilterOp = logentry.LineFilterOp
	// LineFilter is a literal line filter the Source may use to skip chunks.
	LineFilter = logentry.LineFilter
	// SelectParams describes the entries a query needs from the Source.
	SelectParams = logentry.SelectParams
	// EntryIterator yields a select's entries, stream by stream.
	EntryIterator = logentry.Iterator
)

// Directions and line filter operators, as in storage/logentry.
const (
	Forward         = logentry.Forward
	Backward        = logentry.Backward
	LineContains    = logentry.LineContains
	LineNotContains = logentry.LineNotContains
)

// Source is implemented by the log store. Safe for concurrent use.
type Source interface {
	Select(ctx context.Context, p SelectParams) (EntryIterator, error)
}
