// Package querier is the scale-out querier's storage: a Prometheus
// Queryable and a log store whose reads fan out to the ingesters that own
// the recent data and to the blocks in the bucket for older windows, and
// merge what comes back, so that weft's own PromQL and LogQL engines and
// HTTP APIs answer over the cluster as they do over one node.
//
// Each partition is read from exactly one ready ingester that owns it
// (replicas are alternatives, tried when the first fails), so merged
// answers are a disjoint union. A partition no ingester could answer for
// makes the answer partial: flagged with a warning and the
// X-Weft-Partial-Response header (Middleware), or refused with
// ErrPartialResponse when DenyPartialResponse is set. docs/scale-out.md
// describes the role.
package querier
