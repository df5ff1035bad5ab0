// Package workload owns weft's canonical workload-context labels: the short,
// signal-independent names (model, run_id, gpu_uuid, namespace, pod, ...) under
// which every signal carries the workload it came from, and the aliases that
// sources use for them (OpenTelemetry resource attributes such as
// k8s.pod.name, exporter labels such as UUID).
//
// Ingest paths (OTLP metrics now; OTLP logs and traces, Loki push later)
// resolve a source's attributes through one [Mapping] so that a pivot from one
// signal to another finds the same workload whatever the source called it.
// The package knows nothing of wire formats: callers pass a lookup function.
package workload
