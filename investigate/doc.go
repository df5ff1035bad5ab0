// Package investigate answers "what is this workload, and why is it
// unwell?" across signals: the workload context of a selector from the
// shared index (Context), the other signals of a series, stream or span
// (Pivot), the per-GPU / per-rank / per-node spread of a metric with robust
// outliers (Spread), a ranked list of probable causes of a symptom
// (Investigate), and the incidents kept as a log stream (Incidents).
//
// It reads weft through small interfaces it owns (Index, Logs, the
// Prometheus Queryable and PromQL engine) and imports no transport: the
// HTTP API (api/investigate.go) is a thin layer over it. The method, its
// scores and its blind spots are in docs/investigation.md.
package investigate
