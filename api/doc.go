// Package api serves weft over HTTP.
//
// The Prometheus HTTP API (/api/v1/...) is Prometheus' own
// (github.com/prometheus/prometheus/web/api/v1), mounted over weft's storage,
// so response formats, error types and status codes are Prometheus' byte for
// byte. weft supplies the parts Prometheus takes from its TSDB, scrape
// manager and rule manager: metric metadata from the store, cardinality from
// weft's index, series deletion, and empty rule, alert and target lists.
// Beside it the package serves /-/healthy, /-/ready and /metrics.
//
// Only this package maps errors to HTTP status codes.
package api
