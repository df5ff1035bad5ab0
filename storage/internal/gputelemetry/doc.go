// Package gputelemetry generates realistic, deterministic GPU telemetry for
// weft's tests and benchmarks: the series a Prometheus-style scraper would
// collect from dcgm-exporter on a cluster of training nodes.
//
// The same Options (seed included) always produce the same series, label
// sets and samples, bit for bit, on a given architecture (Go may fuse
// floating-point multiply-adds differently on others, so a rare value can
// differ in its last rounded digit across architectures). What makes the data
// realistic, and therefore a fair benchmark for compression:
//
//   - timestamps on a 15 s scrape grid with a per-node scrape offset, a few
//     milliseconds of jitter per scrape (shared by every series of the
//     scrape), and rare missed scrapes;
//   - values formatted as dcgm-exporter reports them: integers for
//     utilization, temperatures, clocks, framebuffer MiB and counters, watts
//     with three decimals, profiling ratios with six decimals (%f);
//   - values that follow a workload: utilization plateaus during training,
//     with evaluation dips and checkpoint stalls; power follows utilization;
//     energy is a monotonic mJ counter; temperatures drift slowly; clocks
//     step between a few frequencies; error counters are mostly flat;
//   - run churn: each node runs a sequence of training jobs; the run_id, pod
//     and model labels change with every job, so series end (with a
//     Prometheus staleness marker) and new ones start.
//
// Values are never uniform random integers: every column comes from a process
// with state, as real telemetry does.
package gputelemetry
