package investigate

import (
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Kind names a probable cause, in words an answer (and an alert) carries.
type Kind string

// The causes weft knows the signs of (catalog), and the catch-alls.
const (
	KindNVLink          Kind = "nvlink_degradation"
	KindThermal         Kind = "thermal_throttle"
	KindGPUMemory       Kind = "gpu_memory_failure"
	KindPCIe            Kind = "pcie_errors"
	KindModelVersion    Kind = "model_version_change"
	KindStorage         Kind = "storage_throughput"
	KindNoisyNeighbour  Kind = "noisy_neighbour"
	KindLogPattern      Kind = "log_pattern_change"
	KindUnknownMetric   Kind = "metric_change"
	kindSymptomOnly     Kind = ""
	maxEvidencePerCause      = 8
)

// level is where a cause sits: what its candidates are grouped by.
type level int

const (
	levelGPU        level = iota // one GPU (gpu_uuid)
	levelNode                    // one node (node / host)
	levelDependency              // something every consumer shares (a storage export)
	levelWorkload                // the workload itself (a model version)
)

// family is one catalog entry: the metric family that shows a cause, the
// direction it moves in when it does, and where the cause sits.
type family struct {
	name   string // exact name, or a prefix when prefix is set
	prefix bool
	suffix string
	kind   Kind
	level  level
	dir    int    // +1: a rise shows the cause, -1: a fall
	events bool   // an error or event count: its appearance with a value > 0 is the event
	what   string // for the answer: "NVLink throughput"
	// dep is, for levelDependency, the label naming the dependency.
	dep string
	// reason restricts a family to series whose reason label contains it.
	reason string
	// severity, for events, is what one event weighs in robust standard
	// deviations: a double-bit ECC error or an XID is grave alone, a
	// replayed NVLink packet is not (healthy links replay a few).
	severity float64
	// support families corroborate a cause but never make one alone: a
	// hot GPU is not a throttled one, a loaded node is no neighbour.
	support bool
}

// catalog is weft's knowledge of how hardware and infrastructure causes
// show (docs/investigation.md, "Catalog"). Series of families not in it
// (utilization, power, step time, latency) are effects: they find the
// symptom's onset and the peers, never a cause.
var catalog = []family{
	{name: "DCGM_FI_DEV_NVLINK_BANDWIDTH", prefix: true, kind: KindNVLink, level: levelNode, dir: -1, what: "NVLink throughput"},
	{name: "DCGM_FI_DEV_NVLINK_", prefix: true, suffix: "ERROR_COUNT_TOTAL", kind: KindNVLink, level: levelNode, dir: +1, events: true, what: "NVLink replay/CRC/recovery errors", severity: 1},
	{name: "DCGM_FI_DEV_GPU_TEMP", kind: KindThermal, level: levelGPU, dir: +1, what: "GPU temperature", support: true},
	{name: "DCGM_FI_DEV_MEMORY_TEMP", kind: KindThermal, level: levelGPU, dir: +1, what: "GPU memory temperature", support: true},
	{name: "DCGM_FI_DEV_SM_CLOCK", kind: KindThermal, level: levelGPU, dir: -1, what: "SM clock", support: true},
	{name: "weft_gpu_clock_event_seconds_total", kind: KindThermal, level: levelGPU, dir: +1, events: true, reason: "thermal", what: "thermal clock events", severity: 1},
	{name: "DCGM_FI_DEV_ECC_DBE", prefix: true, kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "double-bit ECC errors", severity: 100},
	{name: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "uncorrectable remapped rows", severity: 100},
	{name: "DCGM_FI_DEV_ECC_", prefix: true, kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "ECC errors", severity: 1},
	{name: "DCGM_FI_DEV_", prefix: true, suffix: "REMAPPED_ROWS", kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "remapped rows", severity: 1},
	{name: "DCGM_FI_DEV_ROW_REMAP_", prefix: true, kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "row remapping", severity: 100},
	{name: "weft_gpu_xid_errors_total", kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "XID errors", severity: 100},
	{name: "gpu_agent_gpu_failed", kind: KindGPUMemory, level: levelGPU, dir: +1, events: true, what: "GPU failed (off the bus)", severity: 100},
	{name: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kind: KindPCIe, level: levelGPU, dir: +1, events: true, what: "PCIe replays", severity: 1},
	{name: "node_mountstats_nfs_read_bytes_total", kind: KindStorage, level: levelDependency, dir: -1, dep: "export", what: "NFS read throughput"},
	{name: "node_load1", kind: KindNoisyNeighbour, level: levelNode, dir: +1, what: "node load average", support: true},
	{name: "DCGM_FI_DEV_PCIE_", prefix: true, suffix: "_THROUGHPUT", kind: KindNoisyNeighbour, level: levelNode, dir: -1, what: "PCIe throughput", support: true},
	{name: "DCGM_FI_PROF_PCIE_", prefix: true, suffix: "_BYTES", kind: KindNoisyNeighbour, level: levelNode, dir: -1, what: "PCIe bytes", support: true},
}

// familyOf returns the catalog entry of a series, if any.
func familyOf(ls labels.Labels) (family, bool) {
	f, ok := lookupFamily(ls)
	if ok && f.events && f.severity <= 0 {
		f.severity = 1
	}
	return f, ok
}

func lookupFamily(ls labels.Labels) (family, bool) {
	name := ls.Get(labels.MetricName)
	for _, f := range catalog {
		if f.prefix {
			if !strings.HasPrefix(name, f.name) || !strings.HasSuffix(name, f.suffix) {
				continue
			}
		} else if name != f.name {
			continue
		}
		if f.reason != "" && !strings.Contains(ls.Get("reason"), f.reason) {
			continue
		}
		return f, true
	}
	return family{}, false
}

// SymptomClass is how a symptom moved.
type SymptomClass string

// Symptom classes.
const (
	SymptomStall    SymptomClass = "stall"    // throughput fell to a quarter or less (a rate window still averaging a halt)
	SymptomSlowdown SymptomClass = "slowdown" // throughput fell
	SymptomRise     SymptomClass = "rise"     // latency, errors or a gauge rose
	SymptomNone     SymptomClass = "none"     // no lasting change found
)

// relations are the known cause → symptom links: a stalled collective
// (every rank waiting in NCCL) follows a broken link or a lost GPU; a
// slowdown follows a straggler, a starved input pipeline or a contended
// host; latency and errors follow a release or a contended host.
var relations = map[SymptomClass][]Kind{
	SymptomStall:    {KindNVLink, KindGPUMemory},
	SymptomSlowdown: {KindThermal, KindStorage, KindNoisyNeighbour, KindNVLink, KindPCIe},
	SymptomRise:     {KindModelVersion, KindNoisyNeighbour, KindThermal},
}

// relationFactor weighs a cause by whether it is known to produce the
// symptom's class.
func relationFactor(c SymptomClass, k Kind) float64 {
	ks, ok := relations[c]
	if !ok {
		return 1
	}
	for _, x := range ks {
		if x == k {
			return 1.5
		}
	}
	return 0.5
}

// words names a kind in a sentence.
func (k Kind) words() string {
	switch k {
	case KindNVLink:
		return "NVLink degradation"
	case KindThermal:
		return "thermal throttling"
	case KindGPUMemory:
		return "GPU memory failure (ECC/XID)"
	case KindPCIe:
		return "PCIe errors"
	case KindModelVersion:
		return "model version change"
	case KindStorage:
		return "storage throughput drop"
	case KindNoisyNeighbour:
		return "noisy neighbour"
	case KindLogPattern:
		return "new log pattern"
	}
	return "metric change"
}
