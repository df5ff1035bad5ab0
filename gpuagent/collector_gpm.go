//go:build cgo

package gpuagent

import (
	"math"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// gpmMinWindow is the shortest span between two GPM samples that NVML turns
// into metrics: its counters refresh every 100 ms (nvml.h, nvmlGpmSampleGet),
// so a shorter window gives noise. A collection closer than this to the
// previous sample keeps the old sample as the start of the next window.
const gpmMinWindow = 100 * time.Millisecond

// mibPerSec converts NVML GPM's MiB/s throughputs to DCGM's bytes/s.
const mibPerSec = 1 << 20

// gpmMetrics maps NVML GPM metrics to the DCGM_FI_PROF_* families. The
// mapping and the conversions are the ones DCGM applies on GPUs with GPM (its
// DcgmFieldIdToNvmlGpmMetricId and GPM manager): a percentage is divided by
// 100 into a 0..1 ratio, MiB/s is multiplied by 2^20 and truncated to whole
// bytes/s.
var gpmMetrics = []struct {
	id    nvml.GpmMetricId
	def   *MetricDef
	scale float64 // 0.01: percent → ratio; mibPerSec: MiB/s → bytes/s
}{
	{nvml.GPM_METRIC_GRAPHICS_UTIL, MetricProfGrEngineActive, 0.01},
	{nvml.GPM_METRIC_SM_UTIL, MetricProfSMActive, 0.01},
	{nvml.GPM_METRIC_SM_OCCUPANCY, MetricProfSMOccupancy, 0.01},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, MetricProfDRAMActive, 0.01},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, MetricProfTensorActive, 0.01},
	{nvml.GPM_METRIC_DFMA_TENSOR_UTIL, MetricProfTensorDFMAActive, 0.01},
	{nvml.GPM_METRIC_HMMA_TENSOR_UTIL, MetricProfTensorHMMAActive, 0.01},
	{nvml.GPM_METRIC_IMMA_TENSOR_UTIL, MetricProfTensorIMMAActive, 0.01},
	{nvml.GPM_METRIC_FP64_UTIL, MetricProfFP64Active, 0.01},
	{nvml.GPM_METRIC_FP32_UTIL, MetricProfFP32Active, 0.01},
	{nvml.GPM_METRIC_FP16_UTIL, MetricProfFP16Active, 0.01},
	{nvml.GPM_METRIC_INTEGER_UTIL, MetricProfIntActive, 0.01},
	{nvml.GPM_METRIC_PCIE_TX_PER_SEC, MetricProfPCIeTxBytes, mibPerSec},
	{nvml.GPM_METRIC_PCIE_RX_PER_SEC, MetricProfPCIeRxBytes, mibPerSec},
	{nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, MetricProfNVLinkTxBytes, mibPerSec},
	{nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, MetricProfNVLinkRxBytes, mibPerSec},
}

// gpmSymbols are the NVML entry points the GPM path calls; drivers before
// R520 lack them, and go-nvml would crash calling a missing one.
var gpmSymbols = []string{"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlGpmSampleFree"}

// gpmState is one GPU's GPM sampling: two sample buffers used in turn, prev
// holding the sample that opens the current window. Owned by the collection
// goroutine; freed by Close.
type gpmState struct {
	supported bool
	prev, cur nvml.GpmSample
	prevAt    time.Time // zero: no sample taken yet
}

// gpmSupport reports whether GPU g supports GPM, asking NVML once per GPU
// per Init; GPUs found without it are remembered for gpmReport.
func (c *Collector) gpmSupport(g *gpuRun) *gpmState {
	uuid := g.snap.Info.UUID
	if st, ok := c.gpm[uuid]; ok {
		return st
	}
	for _, s := range gpmSymbols {
		if !c.hasSymbol(s) {
			st := &gpmState{}
			c.gpm[uuid] = st
			c.gpmNew = append(c.gpmNew, gpmNote{g.snap.Info.Index, "driver without NVML GPM (before R520)"})
			return st
		}
	}
	sup, ret := c.lib.GpmQueryDeviceSupport(g.dev)
	if ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
		g.ok("GpmQueryDeviceSupport", ret)
		return nil // ask again next collection
	}
	st := &gpmState{supported: ret == nvml.SUCCESS && sup.IsSupportedDevice != 0}
	c.gpm[uuid] = st
	if !st.supported {
		c.gpmNew = append(c.gpmNew, gpmNote{g.snap.Info.Index, "GPU without NVML GPM (before Hopper)"})
	}
	return st
}

// gpmNote is a GPU found without GPM, for the one log line about it.
type gpmNote struct {
	index  int
	reason string
}

// gpmReport logs, once per GPU, the GPUs found without GPM since the last
// call, so an older node says once why it has no DCGM_FI_PROF_* series.
func (c *Collector) gpmReport() {
	var idx []int
	var reasons []string
	for _, n := range c.gpmNew {
		if c.gpmLogged[n.index] {
			continue
		}
		c.gpmLogged[n.index] = true
		idx = append(idx, n.index)
		if !slices.Contains(reasons, n.reason) {
			reasons = append(reasons, n.reason)
		}
	}
	c.gpmNew = c.gpmNew[:0]
	if len(idx) > 0 {
		c.log.Info("gpm_unsupported: DCGM_FI_PROF_* profiling metrics are not collected on these GPUs (NVML GPM needs a Hopper or newer GPU and an R520+ driver); gpu_agent_gpm_supported is 0 for them",
			"gpus", idx, "reason", reasons)
	}
}

// profiling takes a GPM sample of g and, when a sample from the previous
// collection opens the window, reports the DCGM_FI_PROF_* figures over it.
// GPUs without GPM report gpu_agent_gpm_supported 0 and nothing else; GPUs
// in MIG mode report nothing (GPM is then sampled per GPU instance, which the
// agent does not do).
func (c *Collector) profiling(g *gpuRun) {
	if isMIGEnabled(g.dev) {
		return
	}
	st := c.gpmSupport(g)
	if st == nil {
		return
	}
	g.add(MetricGPMSupported, b2f(st.supported))
	if !st.supported {
		return
	}
	if st.cur == nil {
		a, ret := c.lib.GpmSampleAlloc()
		if !g.ok("GpmSampleAlloc", ret) {
			return
		}
		b, ret := c.lib.GpmSampleAlloc()
		if !g.ok("GpmSampleAlloc", ret) {
			c.lib.GpmSampleFree(a)
			return
		}
		st.prev, st.cur = a, b
	}
	now := c.now()
	if !st.prevAt.IsZero() && now.Sub(st.prevAt) < gpmMinWindow {
		return // too soon: keep the open window
	}
	if !g.ok("GpmSampleGet", c.lib.GpmSampleGet(g.dev, st.cur)) {
		st.prevAt = time.Time{} // the next sample opens a new window
		return
	}
	if !st.prevAt.IsZero() {
		c.gpmValues(g, st)
	}
	st.prev, st.cur, st.prevAt = st.cur, st.prev, now
}

// gpmValues asks NVML for every mapped metric between st.prev and st.cur.
// A metric the GPU lacks (NVLink on a PCIe card) is omitted silently.
func (c *Collector) gpmValues(g *gpuRun, st *gpmState) {
	mg := &c.gpmReq
	mg.Version = nvml.GPM_METRICS_GET_VERSION
	mg.NumMetrics = uint32(len(gpmMetrics))
	mg.Sample1, mg.Sample2 = st.prev, st.cur
	for i, m := range gpmMetrics {
		mg.Metrics[i] = nvml.GpmMetric{MetricId: uint32(m.id)}
	}
	if !g.ok("GpmMetricsGet", c.lib.GpmMetricsGet(mg)) {
		return
	}
	for i, m := range gpmMetrics {
		r := mg.Metrics[i]
		if r.MetricId != uint32(m.id) || !g.ok("GpmMetric", nvml.Return(r.NvmlReturn)) || math.IsNaN(r.Value) {
			continue
		}
		var v float64
		if m.scale == mibPerSec {
			v = math.Trunc(r.Value * mibPerSec) // DCGM stores these as integer bytes/s
		} else {
			v = r.Value / 100
		}
		g.add(m.def, v)
	}
	mg.Sample1, mg.Sample2 = nil, nil
}

// NeedsWindow reports whether a GPU supports GPM, so its profiling figures
// appear only from the second collection on.
func (c *Collector) NeedsWindow() bool {
	for _, st := range c.gpm {
		if st.supported {
			return true
		}
	}
	return false
}

// freeGPM releases every GPM sample buffer; called by Close before Shutdown.
func (c *Collector) freeGPM() {
	for _, st := range c.gpm {
		for _, s := range []nvml.GpmSample{st.prev, st.cur} {
			if s != nil {
				c.lib.GpmSampleFree(s)
			}
		}
	}
	clear(c.gpm)
}
