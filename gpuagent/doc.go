// Package gpuagent is weft's GPU node agent: it collects NVIDIA GPU telemetry
// through NVML (github.com/NVIDIA/go-nvml, always through nvml.Interface so
// tests inject the mock), attributes every GPU and process to the workload
// that holds it (Kubernetes pod-resources, /proc cgroups and environments, a
// local registration endpoint), and exports the result three ways: a
// dcgm-exporter compatible /metrics page, Prometheus remote write 2.0 (with a
// 1.0 fallback) behind a bounded on-disk queue, and Loki push for XID and ECC
// events.
//
// Only the files that talk to NVML need cgo (build tag cgo); without cgo the
// package still builds and the agent runs with NVML reported as down.
//
// See docs/gpu-agent.md for the metric list, units and label conventions.
package gpuagent
