// Package readapi is the internal HTTP API between queriers and the
// ingesters that hold recent data: the ingester's status (its partitions,
// how far it has applied each, whether it is ready) and the log store's
// reads (select, label names and values, series, per-stream totals),
// answered for a subset of partitions. Metric samples travel over
// Prometheus' remote-read protocol and metric labels over the Prometheus
// HTTP API, which every weft node serves anyway.
//
// Paths are under /weft/internal/v1/. Requests are JSON; the select answer
// is a stream of frames (docs/scale-out.md#internal-read-api) that ends with
// an end frame, so a cut connection is never mistaken for a complete answer.
// Handler and Client are safe for concurrent use.
package readapi
