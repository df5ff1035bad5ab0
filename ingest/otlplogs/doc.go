// Package otlplogs maps OTLP logs (plog.Logs) to weft's log streams as
// Loki 3's OTLP endpoint does, and writes them through ingest/loki's
// validation into the log store.
//
// Mapping (see docs/logs.md, "OTLP logs"):
//
//   - Stream labels come from resource attributes only: the workload-context
//     keys of ingest/workload under their canonical names (k8s.pod.name →
//     pod, ai.run.id → run_id, ...), and Loki's default index-label
//     attributes (Options.IndexLabels: service.name, service.namespace,
//     deployment.environment, cloud.region, k8s.* ...) under their
//     Prometheus-normalized names (service.name → service_name). service_name
//     is always set: from service.name, else "unknown_service".
//   - Every other resource attribute, the scope name, version and attributes,
//     and the record's attributes, trace_id, span_id (lowercase hex),
//     severity_text, severity_number, flags and (when both times are set)
//     observed_timestamp become structured metadata, names normalized as
//     Prometheus labels (dots → underscores), nested maps flattened with "_"
//     (http.request → {method} gives http_request_method). A record
//     attribute wins over a scope attribute, which wins over a resource
//     attribute of the same normalized name.
//   - The body is the line: a string as is, any other value JSON-encoded
//     (pcommon.Value.AsString).
//   - The timestamp is time_unix_nano, else observed_time_unix_nano, else
//     the time of ingest.
//   - detected_level comes from severity_text, else from severity_number,
//     else from the line (ingest/loki's detection).
//
// Validation and limits are ingest/loki's (Options.Loki): a record that
// breaks one is rejected alone and counted; the valid rest is written.
//
// An Ingester is safe for concurrent use and knows nothing of HTTP or gRPC.
package otlplogs
