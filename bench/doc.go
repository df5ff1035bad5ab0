// Package bench is weft's benchmark harness: a deterministic generator of AI
// cluster telemetry (weft-agent's dcgm-exporter-named GPU metrics of training
// runs, from the shared internal/gputelemetry generator, and vLLM inference
// histograms), a replayer that sends pre-encoded payloads over
// Prometheus remote write 1.0/2.0 and OTLP, a PromQL query suite that checks
// every target returns the same answer, and a side-by-side runner that starts
// weft, Prometheus and VictoriaMetrics one at a time and reports ingest rate,
// memory, CPU, disk and query latency.
//
// bench talks to targets only over their public HTTP APIs; it never imports
// weft's storage, index, query or api packages, so the same code measures
// every system the same way. Incident scenarios with ground truth live in
// bench/scenario.
package bench
