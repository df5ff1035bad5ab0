// Package query evaluates queries over weft's storage.
//
// For PromQL it wires Prometheus' own engine (promql.NewEngine) with the
// settings a Prometheus server uses, so that answers match Prometheus
// exactly; weft's part is the storage.Queryable the engine reads from.
// LogQL, TraceQL and pivots come later.
//
// This package never imports net/http, gRPC, api, web or a config package:
// options arrive as structs with documented defaults.
package query
