package gpuagent

// MetricType is the Prometheus type of a metric family.
type MetricType uint8

const (
	// Gauge is a value that goes up and down.
	Gauge MetricType = iota
	// Counter is a monotonic total.
	Counter
)

func (t MetricType) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Label is one name/value pair.
type Label struct{ Name, Value string }

// MetricDef describes one exported metric family under both namings. Values
// are always collected in the DCGM unit; OTelScale converts to the OTel unit.
// Defs are immutable package-level values.
type MetricDef struct {
	DCGM      string     // dcgm-exporter name (or weft's own where DCGM has none)
	OTel      string     // OpenTelemetry name (dotted)
	Type      MetricType // same under both namings
	Unit      string     // unit of the DCGM value, for docs
	OTelUnit  string     // UCUM unit of the OTel value
	OTelScale float64    // OTel value = DCGM value * OTelScale (0 means 1)
	OTelExtra []Label    // constant labels added under OTel naming
	OTelGauge bool       // a gauge under OTel naming although DCGM types it counter
	Help      string
}

// TypeFor returns the type of d under naming n.
func (d *MetricDef) TypeFor(n Naming) MetricType {
	if n == NamingOTel && d.OTelGauge {
		return Gauge
	}
	return d.Type
}

// Name returns the family name under n.
func (d *MetricDef) Name(n Naming) string {
	if n == NamingOTel {
		return d.OTel
	}
	return d.DCGM
}

// Value converts v (DCGM unit) to the unit of naming n.
func (d *MetricDef) Value(n Naming, v float64) float64 {
	if n == NamingOTel && d.OTelScale != 0 {
		return v * d.OTelScale
	}
	return v
}

// Sample is one collected value. Labels hold only the metric-specific labels
// (link, xid, pid, ...); the exporter adds GPU identity and workload context.
type Sample struct {
	Def    *MetricDef
	Labels []Label
	Value  float64
}

func task(v string) []Label { return []Label{{"hw.gpu.task", v}} }

// GPU metric families. dcgm-exporter names, types and units follow its
// etc/default-counters.csv and DCGM's field list; names prefixed weft_ exist
// where DCGM has no equivalent or where DCGM's semantics are unsuitable (XID as
// a last-value gauge).
var (
	MetricGPUUtil = &MetricDef{DCGM: "DCGM_FI_DEV_GPU_UTIL", OTel: "hw.gpu.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01, OTelExtra: task("general"),
		Help: "GPU utilization (in %)."}
	MetricMemCopyUtil = &MetricDef{DCGM: "DCGM_FI_DEV_MEM_COPY_UTIL", OTel: "hw.gpu.memory.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01,
		Help: "Memory utilization (in %)."}
	MetricEncUtil = &MetricDef{DCGM: "DCGM_FI_DEV_ENC_UTIL", OTel: "hw.gpu.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01, OTelExtra: task("encoder"),
		Help: "Encoder utilization (in %)."}
	MetricDecUtil = &MetricDef{DCGM: "DCGM_FI_DEV_DEC_UTIL", OTel: "hw.gpu.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01, OTelExtra: task("decoder"),
		Help: "Decoder utilization (in %)."}

	MetricFBUsed = &MetricDef{DCGM: "DCGM_FI_DEV_FB_USED", OTel: "hw.gpu.memory.usage", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory used (in MiB)."}
	MetricFBFree = &MetricDef{DCGM: "DCGM_FI_DEV_FB_FREE", OTel: "hw.gpu.memory.free", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory free (in MiB)."}
	MetricFBTotal = &MetricDef{DCGM: "DCGM_FI_DEV_FB_TOTAL", OTel: "hw.gpu.memory.limit", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory total (in MiB)."}
	MetricFBReserved = &MetricDef{DCGM: "DCGM_FI_DEV_FB_RESERVED", OTel: "hw.gpu.memory.reserved", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory reserved (in MiB)."}

	MetricGPUTemp = &MetricDef{DCGM: "DCGM_FI_DEV_GPU_TEMP", OTel: "hw.gpu.temperature", Type: Gauge, Unit: "C", OTelUnit: "Cel", OTelExtra: []Label{{"sensor", "gpu"}},
		Help: "GPU temperature (in C)."}
	MetricMemTemp = &MetricDef{DCGM: "DCGM_FI_DEV_MEMORY_TEMP", OTel: "hw.gpu.temperature", Type: Gauge, Unit: "C", OTelUnit: "Cel", OTelExtra: []Label{{"sensor", "memory"}},
		Help: "Memory temperature (in C)."}
	MetricSlowdownTemp = &MetricDef{DCGM: "DCGM_FI_DEV_SLOWDOWN_TEMP", OTel: "hw.gpu.temperature.limit", Type: Gauge, Unit: "C", OTelUnit: "Cel", OTelExtra: []Label{{"limit_type", "slowdown"}},
		Help: "Slowdown temperature threshold (in C)."}

	MetricPower = &MetricDef{DCGM: "DCGM_FI_DEV_POWER_USAGE", OTel: "hw.power", Type: Gauge, Unit: "W", OTelUnit: "W", OTelExtra: []Label{{"hw.type", "gpu"}},
		Help: "Power draw (in W)."}
	MetricPowerLimit = &MetricDef{DCGM: "DCGM_FI_DEV_POWER_MGMT_LIMIT", OTel: "hw.gpu.power.limit", Type: Gauge, Unit: "W", OTelUnit: "W",
		Help: "Enforced power limit (in W)."}
	MetricEnergy = &MetricDef{DCGM: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", OTel: "hw.energy", Type: Counter, Unit: "mJ", OTelUnit: "J", OTelScale: 1e-3, OTelExtra: []Label{{"hw.type", "gpu"}},
		Help: "Total energy consumption since boot (in mJ)."}

	MetricSMClock = &MetricDef{DCGM: "DCGM_FI_DEV_SM_CLOCK", OTel: "hw.gpu.clock.frequency", Type: Gauge, Unit: "MHz", OTelUnit: "Hz", OTelScale: 1e6, OTelExtra: []Label{{"clock", "sm"}},
		Help: "SM clock frequency (in MHz)."}
	MetricMemClock = &MetricDef{DCGM: "DCGM_FI_DEV_MEM_CLOCK", OTel: "hw.gpu.clock.frequency", Type: Gauge, Unit: "MHz", OTelUnit: "Hz", OTelScale: 1e6, OTelExtra: []Label{{"clock", "memory"}},
		Help: "Memory clock frequency (in MHz)."}

	MetricClockEventReasons = &MetricDef{DCGM: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", OTel: "hw.gpu.clock_event.reasons", Type: Gauge, Unit: "bitmask", OTelUnit: "1",
		Help: "Current clock event (throttle) reasons as NVML's bitmask."}
	MetricClockEventActive = &MetricDef{DCGM: "weft_gpu_clock_event_active", OTel: "hw.gpu.clock_event.active", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "Whether a clock event (throttle) reason is active now (1) or not (0), per reason."}
	MetricClockEventSeconds = &MetricDef{DCGM: "weft_gpu_clock_event_seconds_total", OTel: "hw.gpu.clock_event.duration", Type: Counter, Unit: "s", OTelUnit: "s",
		Help: "Cumulative time clocks were held down, per reason (in s)."}

	MetricPCIeTx = &MetricDef{DCGM: "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", OTel: "hw.gpu.pcie.throughput", Type: Counter, Unit: "KB", OTelUnit: "By/s", OTelScale: 1024, OTelExtra: []Label{{"network.io.direction", "transmit"}}, OTelGauge: true,
		Help: "PCIe TX throughput as NVML reports it (KB/s over a 20 ms window; dcgm-exporter types it counter)."}
	MetricPCIeRx = &MetricDef{DCGM: "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", OTel: "hw.gpu.pcie.throughput", Type: Counter, Unit: "KB", OTelUnit: "By/s", OTelScale: 1024, OTelExtra: []Label{{"network.io.direction", "receive"}}, OTelGauge: true,
		Help: "PCIe RX throughput as NVML reports it (KB/s over a 20 ms window; dcgm-exporter types it counter)."}
	MetricPCIeReplay = &MetricDef{DCGM: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", OTel: "hw.gpu.pcie.replays", Type: Counter, Unit: "1", OTelUnit: "{replay}",
		Help: "Total number of PCIe retries."}

	MetricNVLinkBandwidthTotal = &MetricDef{DCGM: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", OTel: "hw.gpu.nvlink.io.total", Type: Counter, Unit: "KiB", OTelUnit: "By", OTelScale: 1024,
		Help: "Total NVLink data throughput over all links and both directions (in KiB)."}
	MetricNVLinkIO = &MetricDef{DCGM: "weft_gpu_nvlink_data_kib_total", OTel: "hw.gpu.io", Type: Counter, Unit: "KiB", OTelUnit: "By", OTelScale: 1024, OTelExtra: []Label{{"hw.gpu.link", "nvlink"}},
		Help: "NVLink data throughput per link and direction (in KiB)."}
	MetricNVLinkErrors = &MetricDef{DCGM: "weft_gpu_nvlink_errors_total", OTel: "hw.gpu.nvlink.errors", Type: Counter, Unit: "1", OTelUnit: "{error}",
		Help: "NVLink error counters per link and type (crc_flit, crc_data, replay, recovery)."}
	MetricNVLinkState = &MetricDef{DCGM: "weft_gpu_nvlink_link_up", OTel: "hw.gpu.nvlink.link.state", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "NVLink link state per link: 1 active, 0 inactive."}
	MetricNVLinkCRCFlit = &MetricDef{DCGM: "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: []Label{{"hw.type", "nvlink"}, {"error.type", "crc_flit"}},
		Help: "Total number of NVLink flow-control CRC errors."}
	MetricNVLinkCRCData = &MetricDef{DCGM: "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: []Label{{"hw.type", "nvlink"}, {"error.type", "crc_data"}},
		Help: "Total number of NVLink data CRC errors."}
	MetricNVLinkReplay = &MetricDef{DCGM: "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: []Label{{"hw.type", "nvlink"}, {"error.type", "replay"}},
		Help: "Total number of NVLink retries."}
	MetricNVLinkRecovery = &MetricDef{DCGM: "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: []Label{{"hw.type", "nvlink"}, {"error.type", "recovery"}},
		Help: "Total number of NVLink recovery errors."}

	MetricECCSBEVol = &MetricDef{DCGM: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: eccLabels("corrected", "volatile"),
		Help: "Total number of single-bit volatile ECC errors."}
	MetricECCDBEVol = &MetricDef{DCGM: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: eccLabels("uncorrected", "volatile"),
		Help: "Total number of double-bit volatile ECC errors."}
	MetricECCSBEAgg = &MetricDef{DCGM: "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: eccLabels("corrected", "aggregate"),
		Help: "Total number of single-bit persistent ECC errors."}
	MetricECCDBEAgg = &MetricDef{DCGM: "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", OTel: "hw.errors", Type: Counter, Unit: "1", OTelUnit: "{error}", OTelExtra: eccLabels("uncorrected", "aggregate"),
		Help: "Total number of double-bit persistent ECC errors."}

	MetricRemapCorr = &MetricDef{DCGM: "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", OTel: "hw.gpu.memory.remapped_rows", Type: Counter, Unit: "1", OTelUnit: "{row}", OTelExtra: []Label{{"error.type", "corrected"}},
		Help: "Number of remapped rows for correctable errors."}
	MetricRemapUnc = &MetricDef{DCGM: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", OTel: "hw.gpu.memory.remapped_rows", Type: Counter, Unit: "1", OTelUnit: "{row}", OTelExtra: []Label{{"error.type", "uncorrected"}},
		Help: "Number of remapped rows for uncorrectable errors."}
	MetricRemapPending = &MetricDef{DCGM: "DCGM_FI_DEV_ROW_REMAP_PENDING", OTel: "hw.gpu.memory.remap.pending", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "Whether a row remapping is pending (1) until the next GPU reset."}
	MetricRemapFailure = &MetricDef{DCGM: "DCGM_FI_DEV_ROW_REMAP_FAILURE", OTel: "hw.gpu.memory.remap.failure", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "Whether remapping of rows has failed."}

	MetricRetiredSBE = &MetricDef{DCGM: "DCGM_FI_DEV_RETIRED_SBE", OTel: "hw.gpu.memory.retired_pages", Type: Counter, Unit: "1", OTelUnit: "{page}", OTelExtra: []Label{{"cause", "single_bit"}},
		Help: "Total number of retired pages due to single-bit errors."}
	MetricRetiredDBE = &MetricDef{DCGM: "DCGM_FI_DEV_RETIRED_DBE", OTel: "hw.gpu.memory.retired_pages", Type: Counter, Unit: "1", OTelUnit: "{page}", OTelExtra: []Label{{"cause", "double_bit"}},
		Help: "Total number of retired pages due to double-bit errors."}
	MetricRetiredPending = &MetricDef{DCGM: "DCGM_FI_DEV_RETIRED_PENDING", OTel: "hw.gpu.memory.retired_pages.pending", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "Whether pages are pending retirement (1)."}

	MetricXIDErrors = &MetricDef{DCGM: "weft_gpu_xid_errors_total", OTel: "hw.gpu.xid.errors", Type: Counter, Unit: "1", OTelUnit: "{event}",
		Help: "XID events seen since the agent started, per XID code (a counter, so repeats are visible)."}
	// MetricXIDLast is dcgm-exporter's last-value XID gauge, kept beside
	// weft's counter for dashboards built on it: 0 until the first XID.
	MetricXIDLast = &MetricDef{DCGM: "DCGM_FI_DEV_XID_ERRORS", OTel: "hw.gpu.xid.last", Type: Gauge, Unit: "1", OTelUnit: "1",
		Help: "Value of the last XID error encountered."}

	MetricVGPULicense = &MetricDef{DCGM: "DCGM_FI_DEV_VGPU_LICENSE_STATUS", OTel: "hw.gpu.vgpu.license.status", Type: Gauge, Unit: "bool", OTelUnit: "1",
		Help: "vGPU License status"}

	MetricMIGInstance = &MetricDef{DCGM: "weft_gpu_mig_instance_info", OTel: "hw.gpu.mig.instance", Type: Gauge, Unit: "1", OTelUnit: "1",
		Help: "One series per MIG device (GPU instance / compute instance) with its profile; value 1."}
	MetricMIGFBUsed = &MetricDef{DCGM: "weft_gpu_mig_fb_used", OTel: "hw.gpu.mig.memory.usage", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory used by a MIG device (in MiB)."}

	MetricProcessMemory = &MetricDef{DCGM: "weft_gpu_process_memory_used", OTel: "hw.gpu.process.memory.usage", Type: Gauge, Unit: "MiB", OTelUnit: "By", OTelScale: 1 << 20,
		Help: "Framebuffer memory used by a running compute process (in MiB)."}
	MetricProcessSMUtil = &MetricDef{DCGM: "weft_gpu_process_sm_util", OTel: "hw.gpu.process.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01,
		Help: "SM utilization of a running compute process over the last interval (in %)."}
	MetricProcessMemUtil = &MetricDef{DCGM: "weft_gpu_process_mem_util", OTel: "hw.gpu.process.memory.utilization", Type: Gauge, Unit: "%", OTelUnit: "1", OTelScale: 0.01,
		Help: "Memory bandwidth utilization of a running compute process over the last interval (in %)."}

	MetricGPUFailed = &MetricDef{DCGM: "gpu_agent_gpu_failed", OTel: "gpu_agent_gpu_failed", Type: Gauge, Unit: "bool",
		Help: "1 when the GPU fell off the bus or stopped answering NVML (ERROR_GPU_IS_LOST), else 0."}
	MetricGPMSupported = &MetricDef{DCGM: "gpu_agent_gpm_supported", OTel: "gpu_agent_gpm_supported", Type: Gauge, Unit: "bool",
		Help: "1 when the GPU supports NVML GPM (Hopper and newer), so DCGM_FI_PROF_* are collected for it, else 0."}
)

// otelFamilyHelp is the HELP of OTel families that several defs share (the
// constant attributes tell the members apart), so one family has one HELP.
var otelFamilyHelp = map[string]string{
	"hw.gpu.utilization":            "Fraction of time the GPU engine named by hw.gpu.task was busy.",
	"hw.gpu.temperature":            "GPU temperature per sensor (gpu, memory).",
	"hw.gpu.clock.frequency":        "Current clock frequency per clock domain (sm, memory).",
	"hw.gpu.pcie.throughput":        "PCIe throughput per direction as NVML samples it (20 ms window).",
	"hw.errors":                     "Number of errors encountered by the component (hw.type gpu: ECC, by error.type and ecc.scope; hw.type nvlink: by error.type).",
	"hw.gpu.memory.remapped_rows":   "Number of remapped memory rows per error type.",
	"hw.gpu.memory.retired_pages":   "Number of retired memory pages per cause.",
	"hw.gpu.prof.pipe.active":       "Fraction of cycles the pipe named by pipe was active, from NVML GPM (DCGM_FI_PROF_PIPE_*_ACTIVE).",
	"hw.gpu.prof.pcie.throughput":   "PCIe throughput per direction from NVML GPM, averaged over the collection interval (DCGM_FI_PROF_PCIE_*_BYTES).",
	"hw.gpu.prof.nvlink.throughput": "NVLink throughput over all links per direction from NVML GPM, averaged over the collection interval (DCGM_FI_PROF_NVLINK_*_BYTES).",
}

// HelpFor returns the HELP text of d under naming n.
func (d *MetricDef) HelpFor(n Naming) string {
	if n == NamingOTel {
		if h, ok := otelFamilyHelp[d.OTel]; ok {
			return h
		}
	}
	return d.Help
}

func eccLabels(errType, scope string) []Label {
	return []Label{{"hw.type", "gpu"}, {"error.type", errType}, {"ecc.scope", scope}}
}

// Agent self-metrics: the same under both namings, no GPU labels.
var (
	MetricNVMLUp = &MetricDef{DCGM: "gpu_agent_nvml_up", OTel: "gpu_agent_nvml_up", Type: Gauge,
		Help: "1 when NVML is initialised and answering, 0 when there is no driver or Init failed."}
	MetricCollectErrors = &MetricDef{DCGM: "gpu_agent_nvml_errors_total", OTel: "gpu_agent_nvml_errors_total", Type: Counter,
		Help: "NVML calls that failed with an error other than NOT_SUPPORTED, per call."}
	MetricQueueDropped = &MetricDef{DCGM: "gpu_agent_queue_dropped_bytes_total", OTel: "gpu_agent_queue_dropped_bytes_total", Type: Counter,
		Help: "Bytes of queued remote-write requests dropped because the queue was full."}
	MetricQueueDroppedSegments = &MetricDef{DCGM: "gpu_agent_queue_dropped_segments_total", OTel: "gpu_agent_queue_dropped_segments_total", Type: Counter,
		Help: "Queued remote-write requests dropped because the queue was full."}
	MetricQueueBytes = &MetricDef{DCGM: "gpu_agent_queue_bytes", OTel: "gpu_agent_queue_bytes", Type: Gauge,
		Help: "Bytes waiting in the on-disk remote-write queue."}
	MetricSendFailures = &MetricDef{DCGM: "gpu_agent_remote_write_failures_total", OTel: "gpu_agent_remote_write_failures_total", Type: Counter,
		Help: "Remote-write attempts that failed and will be retried."}
	MetricLokiFailures = &MetricDef{DCGM: "gpu_agent_loki_push_failures_total", OTel: "gpu_agent_loki_push_failures_total", Type: Counter,
		Help: "Loki pushes of XID/ECC events that failed after retries."}
)

// AllMetrics lists every family the agent can export, for documentation and
// tests.
var AllMetrics = []*MetricDef{
	MetricGPUUtil, MetricMemCopyUtil, MetricEncUtil, MetricDecUtil,
	MetricFBUsed, MetricFBFree, MetricFBTotal, MetricFBReserved,
	MetricGPUTemp, MetricMemTemp, MetricSlowdownTemp,
	MetricPower, MetricPowerLimit, MetricEnergy,
	MetricSMClock, MetricMemClock,
	MetricClockEventReasons, MetricClockEventActive, MetricClockEventSeconds,
	MetricPCIeTx, MetricPCIeRx, MetricPCIeReplay,
	MetricNVLinkBandwidthTotal, MetricNVLinkIO, MetricNVLinkState, MetricNVLinkErrors,
	MetricNVLinkCRCFlit, MetricNVLinkCRCData, MetricNVLinkReplay, MetricNVLinkRecovery,
	MetricECCSBEVol, MetricECCDBEVol, MetricECCSBEAgg, MetricECCDBEAgg,
	MetricRemapCorr, MetricRemapUnc, MetricRemapPending, MetricRemapFailure,
	MetricRetiredSBE, MetricRetiredDBE, MetricRetiredPending,
	MetricXIDErrors, MetricXIDLast, MetricVGPULicense,
	MetricProfGrEngineActive, MetricProfSMActive, MetricProfSMOccupancy, MetricProfDRAMActive,
	MetricProfTensorActive, MetricProfTensorDFMAActive, MetricProfTensorHMMAActive, MetricProfTensorIMMAActive,
	MetricProfFP64Active, MetricProfFP32Active, MetricProfFP16Active, MetricProfIntActive,
	MetricProfPCIeTxBytes, MetricProfPCIeRxBytes, MetricProfNVLinkTxBytes, MetricProfNVLinkRxBytes,
	MetricMIGInstance, MetricMIGFBUsed,
	MetricProcessMemory, MetricProcessSMUtil, MetricProcessMemUtil,
	MetricGPUFailed, MetricGPMSupported, MetricNVMLUp, MetricCollectErrors,
	MetricQueueBytes, MetricQueueDropped, MetricQueueDroppedSegments, MetricSendFailures, MetricLokiFailures,
}
