// Package usageseries names the series weft writes into the metric store
// for chargeback (docs/chargeback.md): the ingest accounting
// (ingest/usage) writes them and the usage report (query/chargeback) reads
// them, so their names live below both.
//
// Each series belongs to the tenant whose ingest it counts (a tenant's own
// series, isolated by the index like any other) and carries the canonical
// team and namespace labels of what was counted ("" when absent). Each
// sample is what was accepted since the previous sample of the series, a
// delta rather than a running counter, so sum_over_time over a range is
// exact across restarts.
package usageseries

// The usage series' metric names.
const (
	Samples  = "weft_usage_ingested_samples"
	LogBytes = "weft_usage_ingested_log_bytes"
	Spans    = "weft_usage_ingested_spans"
)

// The context keys the usage is grouped by: canonical labels after the
// workload-context mapping (ingest/workload).
const (
	LabelTeam      = "team"
	LabelNamespace = "namespace"
)
