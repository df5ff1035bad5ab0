// Package scenario generates AI-cluster incidents with their ground truth and
// replays them into a weft through its public APIs only: metrics by
// Prometheus remote write, logs by Loki push and OTLP/HTTP, traces by
// OTLP/HTTP. It backs `weft-bench scenario` and lets tests of other packages
// (rules, investigation, UI, e2e) build an incident in process, replay it and
// check their answer against the truth (docs/scenarios.md).
//
// Generate simulates one cluster a scrape interval at a time: GPU nodes whose
// GPUs come from internal/gputelemetry (weft-agent's families and labels),
// data-parallel training runs with per-rank exporters, logs and traced steps,
// vLLM inference services behind a router, and node-level metrics. A
// scenario injects one incident (a degraded NVLink, a failing fan, ECC errors
// and XIDs, a bad model version, a slow storage export, a PCIe-hungry
// neighbour) and writes its GroundTruth, whose evidence times are the ones
// the simulation observed. Everything is a pure function of the scenario name
// and Options: the same seed and start give the same bytes.
//
// Data is immutable once generated and safe for concurrent reads; Encode
// turns it into deterministic request bodies on ordered lanes, and Replay
// sends them block by block with bounded concurrency, retries and a report
// of what was delivered. Replay starts goroutines and joins them all before
// it returns.
package scenario
