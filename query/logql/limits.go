package logql

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
)

// Estimated bytes of what a query holds, charged to its memory budget
// (MaxQueryMemory). They are the sizes of the Go values on a 64-bit
// machine, rounded up for slice headroom; strings and label sets are
// charged by their length on top.
const (
	// entryCost is one kept log entry: its heap slot, collected struct
	// and ResultEntry, without the line and labels.
	entryCost = 160
	// seriesCost is one series of a range aggregation (rseries and its
	// map entry), without labels and samples.
	seriesCost = 128
	// pairCost is one (timestamp, value) pair an unwrapped or non-counting
	// range aggregation keeps, and one Point of a matrix result.
	pairCost = 16
	// cellCost is one step of a counting aggregation's difference arrays
	// (a count and a sum).
	cellCost = 16
	// sampleCost is one Sample of an instant vector at one step.
	sampleCost = 48
	// labelsCost is the fixed part of one label set.
	labelsCost = 24
)

// memBudget counts the estimated bytes one query holds. Charges are not
// returned when intermediate values become garbage, except for the
// entries a log query evicts, so it also bounds what a query allocates.
// Not safe for concurrent use.
type memBudget struct {
	limit int64 // < 0: no bound
	used  int64
}

// add charges n bytes; it returns ErrQueryMemory once the budget is
// exceeded.
func (b *memBudget) add(n int64) error {
	b.used += n
	if b.limit >= 0 && b.used > b.limit {
		return &limitError{kind: ErrQueryMemory, msg: fmt.Sprintf(
			"%s: the query would hold more than %s of log lines, series and samples in memory (max_query_memory_bytes); "+
				"consider adding more specific stream selectors, reducing the time range, increasing the step, "+
				"or aggregating results with functions like sum(), count() or topk()",
			ErrQueryMemory, formatBytes(b.limit))}
	}
	return nil
}

// release returns n bytes charged before.
func (b *memBudget) release(n int64) { b.used -= n }

// labelsBytes is the estimated size of a label set.
func labelsBytes(ls labels.Labels) int64 { return labelsCost + int64(ls.ByteSize()) }

// limitError is a limit's message in Loki's words; errors.Is matches its
// sentinel.
type limitError struct {
	kind error
	msg  string
}

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return e.kind }

func tooManySeries(limit int) error {
	return &limitError{kind: ErrTooManySeries, msg: fmt.Sprintf(
		"maximum number of series (%d) reached for a single query; consider reducing query cardinality by adding more specific stream selectors, "+
			"reducing the time range, or aggregating results with functions like sum(), count() or topk()", limit)}
}

// readBytes counts n bytes of lines read and enforces MaxQueryBytesRead.
func (ev *evaluator) readBytes(n int) error {
	ev.stats.BytesScanned += int64(n)
	if l := ev.opts.MaxQueryBytesRead; l > 0 && ev.stats.BytesScanned > l {
		return &limitError{kind: ErrBytesReadLimit, msg: fmt.Sprintf(
			"%s (query: more than %s, limit: %s); consider adding more specific stream selectors or reduce the time range of the query",
			ErrBytesReadLimit, formatBytes(l), formatBytes(l))}
	}
	return nil
}

// formatBytes writes n as Loki writes byte sizes in limit errors (IEC
// units, as humanize.IBytes).
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// setTemplateLimits sets the per-entry budget of every template of a
// parsed query.
func setTemplateLimits(e Expr, n int64) {
	walkStages(e, func(st Stage) {
		switch s := st.(type) {
		case *LineFormatStage:
			s.tmpl.setLimit(n)
		case *LabelFormatStage:
			for _, op := range s.Ops {
				if op.IsTmpl {
					op.tmpl.setLimit(n)
				}
			}
		}
	})
}

// walkStages calls f for every pipeline stage of e.
func walkStages(e Expr, f func(Stage)) {
	switch e := e.(type) {
	case *LogSelectorExpr:
		for _, st := range e.Stages {
			f(st)
		}
	case *RangeAggExpr:
		walkStages(e.Left.Left, f)
	case *VectorAggExpr:
		walkStages(e.Expr, f)
	case *BinOpExpr:
		walkStages(e.LHS, f)
		walkStages(e.RHS, f)
	case *LabelReplaceExpr:
		walkStages(e.Left, f)
	}
}
