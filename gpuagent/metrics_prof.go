package gpuagent

// Profiling families (DCGM_FI_PROF_*). dcgm-exporter gets them from DCGM's
// profiling module; weft-agent computes them from NVML's GPM API (GPU
// Performance Monitoring, Hopper and newer) as DCGM itself does on those
// GPUs: each is NVML's figure between two GPM samples one collection interval
// apart, ratios converted from NVML's percent to DCGM's 0..1 and throughputs
// from NVML's MiB/s to DCGM's bytes/s. docs/gpu-agent.md ("Profiling metrics")
// lists where the meaning differs from DCGM's profiling module on older GPUs.
var (
	MetricProfGrEngineActive = &MetricDef{DCGM: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", OTel: "hw.gpu.prof.gr_engine.active", Type: Gauge, Unit: "ratio", OTelUnit: "1",
		Help: "Ratio of time the graphics engine is active."}
	MetricProfSMActive = &MetricDef{DCGM: "DCGM_FI_PROF_SM_ACTIVE", OTel: "hw.gpu.prof.sm.active", Type: Gauge, Unit: "ratio", OTelUnit: "1",
		Help: "The ratio of cycles an SM has at least 1 warp assigned."}
	MetricProfSMOccupancy = &MetricDef{DCGM: "DCGM_FI_PROF_SM_OCCUPANCY", OTel: "hw.gpu.prof.sm.occupancy", Type: Gauge, Unit: "ratio", OTelUnit: "1",
		Help: "The ratio of number of warps resident on an SM."}
	MetricProfDRAMActive = &MetricDef{DCGM: "DCGM_FI_PROF_DRAM_ACTIVE", OTel: "hw.gpu.prof.dram.active", Type: Gauge, Unit: "ratio", OTelUnit: "1",
		Help: "Ratio of DRAM bandwidth used to its theoretical maximum (NVML GPM; DCGM's profiling module: ratio of cycles the memory interface is active)."}

	MetricProfTensorActive = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("tensor"),
		Help: "Ratio of cycles any tensor pipe is active."}
	MetricProfTensorDFMAActive = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("tensor_dfma"),
		Help: "Ratio of cycles the tensor (DFMA) pipe is active."}
	MetricProfTensorHMMAActive = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("tensor_hmma"),
		Help: "Ratio of cycles the tensor (HMMA) pipe is active."}
	MetricProfTensorIMMAActive = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("tensor_imma"),
		Help: "Ratio of cycles the tensor (IMMA) pipe is active."}
	MetricProfFP64Active = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_FP64_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("fp64"),
		Help: "Ratio of cycles the fp64 pipes are active."}
	MetricProfFP32Active = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_FP32_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("fp32"),
		Help: "Ratio of cycles the fp32 pipes are active."}
	MetricProfFP16Active = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_FP16_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("fp16"),
		Help: "Ratio of cycles the fp16 pipes are active (HMMA not included)."}
	MetricProfIntActive = &MetricDef{DCGM: "DCGM_FI_PROF_PIPE_INT_ACTIVE", OTel: "hw.gpu.prof.pipe.active", Type: Gauge, Unit: "ratio", OTelUnit: "1", OTelExtra: pipe("int"),
		Help: "Ratio of cycles the integer pipe is active."}

	MetricProfPCIeTxBytes = &MetricDef{DCGM: "DCGM_FI_PROF_PCIE_TX_BYTES", OTel: "hw.gpu.prof.pcie.throughput", Type: Gauge, Unit: "By/s", OTelUnit: "By/s", OTelExtra: dir("transmit"),
		Help: "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second."}
	MetricProfPCIeRxBytes = &MetricDef{DCGM: "DCGM_FI_PROF_PCIE_RX_BYTES", OTel: "hw.gpu.prof.pcie.throughput", Type: Gauge, Unit: "By/s", OTelUnit: "By/s", OTelExtra: dir("receive"),
		Help: "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second."}
	MetricProfNVLinkTxBytes = &MetricDef{DCGM: "DCGM_FI_PROF_NVLINK_TX_BYTES", OTel: "hw.gpu.prof.nvlink.throughput", Type: Gauge, Unit: "By/s", OTelUnit: "By/s", OTelExtra: dir("transmit"),
		Help: "The rate of data transmitted over NVLink, all links, in bytes per second."}
	MetricProfNVLinkRxBytes = &MetricDef{DCGM: "DCGM_FI_PROF_NVLINK_RX_BYTES", OTel: "hw.gpu.prof.nvlink.throughput", Type: Gauge, Unit: "By/s", OTelUnit: "By/s", OTelExtra: dir("receive"),
		Help: "The rate of data received over NVLink, all links, in bytes per second."}
)

func pipe(v string) []Label { return []Label{{"pipe", v}} }
func dir(v string) []Label  { return []Label{{"network.io.direction", v}} }
