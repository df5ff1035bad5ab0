// Package gputelemetry is weft's one generator of GPU telemetry, shared by
// the storage tests and benchmarks, weft-bench's workload and its incident
// scenarios, and end-to-end tests. It emits exactly weft-agent's metric set
// under the agent's default (dcgm-exporter) naming and labels: the family
// table in families.go mirrors gpuagent.AllMetrics, and a test (the only
// place gpuagent is imported) fails when the two differ, naming the family.
// It is a leaf: it imports nothing of weft.
//
// Three layers:
//
//   - Device simulates one GPU (H100, A100 or V100): Step advances it by one
//     scrape interval under an Activity (the workload's phase, load and
//     traffic) and Faults (NVLink degradation, cooling loss, ECC errors,
//     XIDs, a GPU falling off the bus, a PCIe-hungry neighbour) and returns
//     a Reading of every value the agent collects.
//   - The family table turns a Reading into samples (EmitGPU, EmitHost),
//     with the family-specific labels (link and direction, reason, xid,
//     pid, MIG instance); IdentityLabels and SeriesLabels give the agent's
//     label set (gpu, UUID, pci_bus_id, device, modelName, Hostname,
//     gpu_uuid, plus workload context). Presets choose families:
//     CompactKinds (13 series per GPU, the storage data set), DefaultKinds
//     (28, dcgm-exporter's defaults plus health counters; weft-bench), and
//     AllKinds (everything the agent exports).
//   - Generate simulates a cluster of training nodes with run churn, as a
//     Prometheus-style scraper would collect it, for storage tests.
//
// The same Options (seed included) always produce the same series, label
// sets and samples, bit for bit, on a given architecture (Go may fuse
// floating-point multiply-adds differently on others, so a rare value can
// differ in its last rounded digit across architectures). Every family has
// its own random draws, so adding a family changes no other family's values.
// What makes the data realistic, and therefore a fair benchmark for
// compression:
//
//   - timestamps on a 15 s scrape grid with a per-node scrape offset, a few
//     milliseconds of jitter per scrape (shared by every series of the
//     scrape), and rare missed scrapes;
//   - values formatted as the agent reports them: integers for utilization,
//     temperatures, clocks, framebuffer MiB, PCIe KB/s and counters, watts
//     with three decimals, violation time in seconds with millisecond
//     precision;
//   - values that follow a workload: utilization plateaus during training,
//     with evaluation dips and checkpoint stalls; power follows utilization;
//     energy is a monotonic mJ counter; temperatures drift slowly; clocks
//     step between a few frequencies; NVLink and PCIe traffic follow the
//     phase; error counters are mostly flat;
//   - run churn: each node runs a sequence of training jobs; the run_id, pod
//     and model labels change with every job, so series end (with a
//     Prometheus staleness marker) and new ones start.
//
// Values are never uniform random integers: every column comes from a process
// with state, as real telemetry does. Devices are not safe for concurrent
// use; Generate is (it shares nothing between calls).
package gputelemetry
