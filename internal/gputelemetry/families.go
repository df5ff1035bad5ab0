package gputelemetry

// Type is a family's Prometheus metric type.
type Type uint8

// Metric types.
const (
	Gauge Type = iota
	Counter
)

func (t Type) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Label is one name/value pair.
type Label struct{ Name, Value string }

// Emitter receives the samples of a reading: the family, the value and the
// labels that tell the family's series apart (link, direction, reason, xid,
// pid, ...). extra is shared by every reading of the device: it must not be
// modified, and its first element's address identifies the series within
// the family.
type Emitter interface {
	Emit(k Kind, v float64, extra []Label)
}

// EmitterFunc adapts a function to an Emitter.
type EmitterFunc func(k Kind, v float64, extra []Label)

// Emit calls f.
func (f EmitterFunc) Emit(k Kind, v float64, extra []Label) { f(k, v, extra) }

// Family is one metric family weft-agent exports, under its default
// (dcgm-exporter) naming.
type Family struct {
	Name string
	Type Type
	// GPU emits the family's (kind k's) samples of one GPU reading; nil
	// for host families.
	GPU func(r *Reading, k Kind, e Emitter)
	// Host emits the family's samples of one node's agent; nil for GPU
	// families. HostLabel says whether the agent labels them with Hostname.
	Host      func(h *HostReading, k Kind, e Emitter)
	HostLabel bool
	// Fixed families have the same series at every scrape of a healthy
	// GPU of one model (no event, process or MIG series, and the GPU model's
	// memory-error families only).
	Fixed bool
}

// Kind identifies a family: its index in the family table.
type Kind int

// families is weft-agent's metric set (gpuagent.AllMetrics), in its order.
// Adding a family the agent learns is one line here; the agent-parity test
// (families_test.go) names any family missing on either side.
var families = []Family{
	gpu("DCGM_FI_DEV_GPU_UTIL", Gauge, func(r *Reading) float64 { return r.Util }),
	gpu("DCGM_FI_DEV_MEM_COPY_UTIL", Gauge, func(r *Reading) float64 { return r.MemCopyUtil }),
	gpu("DCGM_FI_DEV_ENC_UTIL", Gauge, func(r *Reading) float64 { return r.EncUtil }),
	gpu("DCGM_FI_DEV_DEC_UTIL", Gauge, func(r *Reading) float64 { return r.DecUtil }),
	gpu("DCGM_FI_DEV_FB_USED", Gauge, func(r *Reading) float64 { return r.FBUsed }),
	gpu("DCGM_FI_DEV_FB_FREE", Gauge, func(r *Reading) float64 { return r.FBFree }),
	gpu("DCGM_FI_DEV_FB_TOTAL", Gauge, func(r *Reading) float64 { return r.FBTotal }),
	gpu("DCGM_FI_DEV_GPU_TEMP", Gauge, func(r *Reading) float64 { return r.GPUTemp }),
	gpu("DCGM_FI_DEV_MEMORY_TEMP", Gauge, func(r *Reading) float64 { return r.MemTemp }),
	gpu("DCGM_FI_DEV_SLOWDOWN_TEMP", Gauge, func(r *Reading) float64 { return r.SlowdownTemp }),
	gpu("DCGM_FI_DEV_POWER_USAGE", Gauge, func(r *Reading) float64 { return r.Power }),
	gpu("DCGM_FI_DEV_POWER_MGMT_LIMIT", Gauge, func(r *Reading) float64 { return r.PowerLimit }),
	gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Counter, func(r *Reading) float64 { return r.Energy }),
	gpu("DCGM_FI_DEV_SM_CLOCK", Gauge, func(r *Reading) float64 { return r.SMClock }),
	gpu("DCGM_FI_DEV_MEM_CLOCK", Gauge, func(r *Reading) float64 { return r.MemClock }),
	gpu("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", Gauge, func(r *Reading) float64 { return float64(r.ClockReasons) }),
	{Name: "weft_gpu_clock_event_active", Type: Gauge, GPU: clockEventActive, Fixed: true},
	{Name: "weft_gpu_clock_event_seconds_total", Type: Counter, GPU: clockEventSeconds, Fixed: true},
	gpu("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Counter, func(r *Reading) float64 { return r.PCIeTx }),
	gpu("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Counter, func(r *Reading) float64 { return r.PCIeRx }),
	gpu("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Counter, func(r *Reading) float64 { return r.PCIeReplay }),
	gpu("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Counter, func(r *Reading) float64 { return r.NVLinkKiB }),
	{Name: "weft_gpu_nvlink_data_kib_total", Type: Counter, GPU: nvlinkData, Fixed: true},
	{Name: "weft_gpu_nvlink_link_up", Type: Gauge, GPU: nvlinkUp, Fixed: true},
	{Name: "weft_gpu_nvlink_errors_total", Type: Counter, GPU: nvlinkErrors, Fixed: true},
	gpu("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", Counter, func(r *Reading) float64 { return r.LinkErrorTotals[LinkCRCFlit] }),
	gpu("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", Counter, func(r *Reading) float64 { return r.LinkErrorTotals[LinkCRCData] }),
	gpu("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", Counter, func(r *Reading) float64 { return r.LinkErrorTotals[LinkReplay] }),
	gpu("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", Counter, func(r *Reading) float64 { return r.LinkErrorTotals[LinkRecovery] }),
	gpu("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Counter, func(r *Reading) float64 { return r.SBEVol }),
	gpu("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Counter, func(r *Reading) float64 { return r.DBEVol }),
	gpu("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", Counter, func(r *Reading) float64 { return r.SBEAgg }),
	gpu("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", Counter, func(r *Reading) float64 { return r.DBEAgg }),
	remap("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Counter, func(r *Reading) float64 { return r.RemapCorr }),
	remap("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Counter, func(r *Reading) float64 { return r.RemapUnc }),
	remap("DCGM_FI_DEV_ROW_REMAP_PENDING", Gauge, func(r *Reading) float64 { return r.RemapPending }),
	remap("DCGM_FI_DEV_ROW_REMAP_FAILURE", Gauge, func(r *Reading) float64 { return r.RemapFailure }),
	retired("DCGM_FI_DEV_RETIRED_SBE", Counter, func(r *Reading) float64 { return r.RetiredSBE }),
	retired("DCGM_FI_DEV_RETIRED_DBE", Counter, func(r *Reading) float64 { return r.RetiredDBE }),
	retired("DCGM_FI_DEV_RETIRED_PENDING", Gauge, func(r *Reading) float64 { return r.RetiredPending }),
	{Name: "weft_gpu_xid_errors_total", Type: Counter, GPU: xidErrors},
	{Name: "weft_gpu_mig_instance_info", Type: Gauge, GPU: migInfo},
	{Name: "weft_gpu_mig_fb_used", Type: Gauge, GPU: migFBUsed},
	{Name: "weft_gpu_process_memory_used", Type: Gauge, GPU: perProcess(func(p *Process) float64 { return p.MemMiB })},
	{Name: "weft_gpu_process_sm_util", Type: Gauge, GPU: perProcess(func(p *Process) float64 { return p.SMUtil })},
	{Name: "weft_gpu_process_mem_util", Type: Gauge, GPU: perProcess(func(p *Process) float64 { return p.MemUtl })},
	{Name: FamilyGPUFailed, Type: Gauge, GPU: gpuFailed, Fixed: true},
	{Name: "gpu_agent_nvml_up", Type: Gauge, Host: func(h *HostReading, k Kind, e Emitter) { e.Emit(k, h.NVMLUp, nil) }, HostLabel: true},
	{Name: "gpu_agent_nvml_errors_total", Type: Counter, Host: nvmlErrors, HostLabel: true},
	{Name: "gpu_agent_queue_bytes", Type: Gauge, Host: queued(func(h *HostReading) float64 { return h.QueueBytes })},
	{Name: "gpu_agent_queue_dropped_bytes_total", Type: Counter, Host: queued(func(h *HostReading) float64 { return h.QueueDroppedBytes })},
	{Name: "gpu_agent_queue_dropped_segments_total", Type: Counter, Host: queued(func(h *HostReading) float64 { return h.QueueDroppedSegments })},
	{Name: "gpu_agent_remote_write_failures_total", Type: Counter, Host: queued(func(h *HostReading) float64 { return h.SendFailures })},
	{Name: "gpu_agent_loki_push_failures_total", Type: Counter, Host: func(h *HostReading, k Kind, e Emitter) {
		if h.Loki {
			e.Emit(k, h.LokiFailures, nil)
		}
	}},
}

// FamilyGPUFailed is the one family the agent still reports for a GPU that
// fell off the bus.
const FamilyGPUFailed = "gpu_agent_gpu_failed"

// Families returns the family table, in emission order. The result must not
// be modified.
func Families() []Family { return families }

// KindOf returns the kind of the family named name.
func KindOf(name string) (Kind, bool) {
	for i := range families {
		if families[i].Name == name {
			return Kind(i), true
		}
	}
	return -1, false
}

// MustKinds returns the kinds of the named families; it panics on an
// unknown name (a programming error in a preset).
func MustKinds(names ...string) []Kind {
	out := make([]Kind, len(names))
	for i, n := range names {
		k, ok := KindOf(n)
		if !ok {
			panic("BUG: gputelemetry: unknown family " + n)
		}
		out[i] = k
	}
	return out
}

// Family returns k's family.
func (k Kind) Family() *Family { return &families[k] }

// MetricName is the family name: the series' __name__.
func (k Kind) MetricName() string {
	if k < 0 || int(k) >= len(families) {
		return "unknown"
	}
	return families[k].Name
}

// String returns the metric name.
func (k Kind) String() string { return k.MetricName() }

// IsCounter reports whether the family is a counter.
func (k Kind) IsCounter() bool { return families[k].Type == Counter }

// AllKinds is every family weft-agent exports.
func AllKinds() []Kind {
	out := make([]Kind, len(families))
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Kinds returns the families Generate emits by default (CompactKinds), in
// emission order.
func Kinds() []Kind { return CompactKinds() }

// CompactKinds are thirteen single-series GPU families: the storage tests'
// and benchmarks' data set (13 series per GPU, as before this package moved).
func CompactKinds() []Kind {
	return MustKinds(
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
		"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_FB_USED",
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
		"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
}

// DefaultKinds are the families of dcgm-exporter's default counter set that
// weft-agent emits, plus its NVLink and ECC health counters: one series
// each per GPU (Hopper/Ampere), 28 in all. weft-bench's GPU fleet uses them.
func DefaultKinds() []Kind {
	return MustKinds(
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
		"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
		"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
		"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
		"DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_ROW_REMAP_FAILURE", FamilyGPUFailed)
}

// Emitters.

func gpu(name string, t Type, f func(*Reading) float64) Family {
	return Family{Name: name, Type: t, Fixed: true, GPU: func(r *Reading, k Kind, e Emitter) { e.Emit(k, f(r), nil) }}
}

// remap families exist on Ampere and newer, retired-page families before.
func remap(name string, t Type, f func(*Reading) float64) Family {
	return Family{Name: name, Type: t, Fixed: true, GPU: func(r *Reading, k Kind, e Emitter) {
		if r.Arch != ArchVolta {
			e.Emit(k, f(r), nil)
		}
	}}
}

func retired(name string, t Type, f func(*Reading) float64) Family {
	return Family{Name: name, Type: t, GPU: func(r *Reading, k Kind, e Emitter) {
		if r.Arch == ArchVolta {
			e.Emit(k, f(r), nil)
		}
	}}
}

// clockEventNames are the bits of nvmlClocksEventReasons under the agent's
// reason label.
var clockEventNames = []struct {
	bit uint64
	lbl []Label
}{
	{0x1, reason("gpu_idle")}, {0x2, reason("applications_clocks_setting")}, {0x4, reason("sw_power_cap")},
	{0x8, reason("hw_slowdown")}, {0x10, reason("sync_boost")}, {0x20, reason("sw_thermal_slowdown")},
	{0x40, reason("hw_thermal_slowdown")}, {0x80, reason("hw_power_brake_slowdown")}, {0x100, reason("display_clock_setting")},
}

// policyLabels are weft_gpu_clock_event_seconds_total's reason labels.
var policyLabels = [numPolicies][]Label{
	PolicyPower: reason("power"), PolicyThermal: reason("thermal"), PolicySyncBoost: reason("sync_boost"),
	PolicyBoardLimit: reason("board_limit"), PolicyLowUtilization: reason("low_utilization"), PolicyReliability: reason("reliability"),
}

func reason(v string) []Label { return []Label{{"reason", v}} }

func clockEventActive(r *Reading, k Kind, e Emitter) {
	for _, c := range clockEventNames {
		v := 0.0
		if r.ClockReasons&c.bit != 0 {
			v = 1
		}
		e.Emit(k, v, c.lbl)
	}
}

func clockEventSeconds(r *Reading, k Kind, e Emitter) {
	for i, l := range policyLabels {
		e.Emit(k, r.ClockEventSeconds[i], l)
	}
}

func nvlinkData(r *Reading, k Kind, e Emitter) {
	for i := range r.Links {
		l := &r.Links[i]
		e.Emit(k, l.TxKiB, l.labels[0])
		e.Emit(k, l.RxKiB, l.labels[1])
	}
}

func nvlinkUp(r *Reading, k Kind, e Emitter) {
	for i := range r.Links {
		v := 0.0
		if r.Links[i].Up {
			v = 1
		}
		e.Emit(k, v, r.Links[i].labels[2])
	}
}

func nvlinkErrors(r *Reading, k Kind, e Emitter) {
	for i := range r.Links {
		l := &r.Links[i]
		for t, v := range l.Errors {
			e.Emit(k, v, l.errLbl[t])
		}
	}
}

func xidErrors(r *Reading, k Kind, e Emitter) {
	for _, x := range r.XIDs {
		e.Emit(k, x.Count, x.labels)
	}
}

func migInfo(r *Reading, k Kind, e Emitter) {
	for _, m := range r.MIG {
		e.Emit(k, 1, m.labels)
	}
}

func migFBUsed(r *Reading, k Kind, e Emitter) {
	for _, m := range r.MIG {
		e.Emit(k, m.FBUsedMiB, m.labels)
	}
}

func perProcess(f func(*Process) float64) func(*Reading, Kind, Emitter) {
	return func(r *Reading, k Kind, e Emitter) {
		for i := range r.Processes {
			e.Emit(k, f(&r.Processes[i]), r.Processes[i].labels)
		}
	}
}

func gpuFailed(r *Reading, k Kind, e Emitter) {
	v := 0.0
	if r.Failed {
		v = 1
	}
	e.Emit(k, v, nil)
}

// HostReading is one collection's view of a node's agent itself.
type HostReading struct {
	NVMLUp float64
	// Errors counts failed NVML calls per call since the agent started.
	Errors []CallErrors
	// Queue is set when the agent pushes by remote write through its disk
	// queue; its figures are then reported. Loki likewise for event pushes.
	Queue, Loki                        bool
	QueueBytes, QueueDroppedBytes      float64
	QueueDroppedSegments, SendFailures float64
	LokiFailures                       float64
}

// CallErrors is the failure count of one NVML call.
type CallErrors struct {
	Call   string
	Count  float64
	labels []Label
}

// NewCallErrors returns a call's error count with its label precomputed.
func NewCallErrors(call string) CallErrors {
	return CallErrors{Call: call, labels: []Label{{"call", call}}}
}

func nvmlErrors(h *HostReading, k Kind, e Emitter) {
	for _, c := range h.Errors {
		e.Emit(k, c.Count, c.labels)
	}
}

func queued(f func(*HostReading) float64) func(*HostReading, Kind, Emitter) {
	return func(h *HostReading, k Kind, e Emitter) {
		if h.Queue {
			e.Emit(k, f(h), nil)
		}
	}
}

// EmitGPU gives e every sample kinds emit for reading r, family by family
// in the order of kinds. A failed GPU emits gpu_agent_gpu_failed only, as
// the agent does.
func EmitGPU(kinds []Kind, r *Reading, e Emitter) {
	for _, k := range kinds {
		f := &families[k]
		if f.GPU == nil || (r.Failed && f.Name != FamilyGPUFailed) {
			continue
		}
		f.GPU(r, k, e)
	}
}

// EmitHost gives e every host sample kinds emit for h.
func EmitHost(kinds []Kind, h *HostReading, e Emitter) {
	for _, k := range kinds {
		f := &families[k]
		if f.Host == nil {
			continue
		}
		f.Host(h, k, e)
	}
}
