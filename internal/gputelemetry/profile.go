package gputelemetry

import (
	"math"
	"math/rand/v2"
)

// Profile is one interval's profiling figures (the DCGM_FI_PROF_* families)
// as weft-agent computes them from NVML GPM on Hopper: averages over the
// collection interval, ratios in 0..1 (GPM's percent / 100, unrounded), rates
// in whole bytes/s. A Device computes them on every GPU; the agent reports
// them only where Reading.GPM is set and the GPU is not in MIG mode.
type Profile struct {
	GrEngineActive, SMActive, SMOccupancy, DRAMActive                  float64
	TensorActive, TensorDFMAActive, TensorHMMAActive, TensorIMMAActive float64
	FP64Active, FP32Active, FP16Active, IntActive                      float64
	PCIeTxBytes, PCIeRxBytes                                           float64 // bytes/s, host↔device
	NVLinkTxBytes, NVLinkRxBytes                                       float64 // bytes/s, all links
}

// profStream tells the device's profiling stream from its aux stream (both
// are seeded from its UUID): the profiling figures draw from their own
// stream, so adding them changed no other family's values.
const profStream = 0x9b05688c2b3e6c1f

// commShare is the share of a healthy training step spent in collectives
// over NVLink (bench/scenario's step model uses the same share). When the
// links carry less than the collective asks for, that part of the step
// stretches by the shortfall and the time goes to NCCL's kernels.
const commShare = 0.18

// ncclSMShare is the share of an H100's 132 SMs that NCCL's kernels occupy
// in a collective (one block per channel, 16 channels): a GPU spinning in an
// all-reduce reads ~100% GPU_UTIL but a low SM_ACTIVE.
const ncclSMShare = 16.0 / 132

// ncclWarpShare is the share of an SM's warp slots one NCCL block fills
// (16 of 64 warps).
const ncclWarpShare = 0.25

// pipeMix is how the workloads on a device use its SMs and pipes while they
// compute: shares of the compute time. Training in bf16 uses only the
// half-precision tensor path (HMMA); the DFMA (fp64), IMMA (int8) and fp64
// pipes stay idle.
type pipeMix struct {
	smFill    float64 // SM_ACTIVE per unit of compute time
	occupancy float64 // SM_OCCUPANCY per unit of compute time
	dram      float64 // DRAM bandwidth used per unit of NVML memory utilization
	fp32      float64
	fp16      float64
	integer   float64
}

func newPipeMix(rng *rand.Rand) pipeMix {
	return pipeMix{
		smFill:    0.90 + 0.06*rng.Float64(),
		occupancy: 0.28 + 0.14*rng.Float64(),
		dram:      0.70 + 0.15*rng.Float64(),
		fp32:      0.08 + 0.06*rng.Float64(),
		fp16:      0.02 + 0.04*rng.Float64(),
		integer:   0.05 + 0.05*rng.Float64(),
	}
}

// mathShare is the share of a phase's busy, non-collective time that runs
// math kernels (the rest moves data: loading, checkpoint copies, stalls).
var mathShare = map[Phase]float64{
	PhaseLoading: 0.3, PhaseTraining: 1, PhaseEval: 1, PhaseCheckpoint: 0.2, PhaseStall: 0.3,
}

// profile derives the interval's profiling figures from the reading auxStep
// completed: the workload's compute and collective time (GPU_UTIL, Spin),
// its tensor activity, the clocks and their event reasons, and the PCIe and
// NVLink traffic. tensor is the tensor-pipe activity Step drew for the phase.
func (d *Device) profile(a Activity, tensor float64, dtMs int64) {
	r, m, rng, mix := &d.read, &d.Model, d.prof, &d.mix
	r.GPM = m.Arch == ArchHopper
	// The same draws at every step, whatever the phase.
	var n [9]float64
	for i := range n {
		n[i] = rng.NormFloat64()
	}
	jit := func(i int, sd float64) float64 { return math.Exp(n[i] * sd) }

	// Busy time splits into compute and time in collectives (NCCL's kernels:
	// resident on a few SMs, no math).
	util := r.Util / 100
	spin := 0.0
	switch a.Phase {
	case PhaseSpin:
		spin = util
	case PhaseTraining:
		spin = math.Min(util, a.Spin)
	}
	compute := util - spin
	// Links that carry less than the collective asks for stretch the step:
	// the compute share shrinks and the rest is spent waiting in NCCL.
	if a.Phase == PhaseTraining && d.nvCarried < d.nvWant {
		keep := (1 - commShare) / ((1 - commShare) + commShare*d.nvWant/math.Max(d.nvCarried, 1e-3))
		spin += compute * (1 - keep)
		compute *= keep
		tensor *= keep
	}
	// Held-down clocks deliver less work per second: power capping costs
	// little (memory-bound phases do not care), a thermal slowdown costs in
	// full (the scenario's straggler computes slower by the same factor).
	rate := 1.0
	if clock := math.Max(r.SMClock, 1); r.ClockReasons&(ReasonHWSlowdown|ReasonHWThermal|ReasonSWThermal) != 0 {
		rate = math.Min(1, clock/m.BoostClock)
	} else if r.ClockReasons&ReasonSWPowerCap != 0 {
		rate = 1 / (1 + 0.15*(m.BoostClock/clock-1))
	}
	work := compute * rate
	maths := work * mathShare[a.Phase]

	p := &r.Prof
	p.GrEngineActive = 0
	if util > 0 {
		p.GrEngineActive = ratio(util + 0.006*n[0])
	}
	p.SMActive = ratio((work*mix.smFill + spin*ncclSMShare) * jit(1, 0.01))
	p.SMOccupancy = ratio((work*mix.occupancy + spin*ncclSMShare*ncclWarpShare) * jit(2, 0.02))
	p.DRAMActive = ratio(work * d.memRatio * mix.dram * jit(3, 0.03))
	p.TensorActive = ratio(tensor * rate)
	p.TensorHMMAActive = p.TensorActive // bf16 training: every tensor op is HMMA
	p.TensorDFMAActive, p.TensorIMMAActive, p.FP64Active = 0, 0, 0
	p.FP32Active = ratio(maths * mix.fp32 * jit(4, 0.04))
	p.FP16Active = ratio(maths * mix.fp16 * jit(5, 0.04))
	// NCCL's kernels poll flags while they wait: integer work.
	p.IntActive = ratio((maths*mix.integer + spin*ncclSMShare*0.3) * jit(6, 0.04))

	// GPM's rates are means over the interval, where NVML's PCIe throughput
	// samples a 20 ms window: the same traffic, less noise. NVML's KB are
	// KiB (weft-agent scales them by 1024).
	p.PCIeRxBytes = math.Trunc(d.pcieRxKBps * 1024 * jit(7, 0.03))
	p.PCIeTxBytes = math.Trunc(d.pcieTxKBps * 1024 * jit(8, 0.03))
	p.NVLinkTxBytes, p.NVLinkRxBytes = 0, 0
	if dt := float64(dtMs) / 1000; dt > 0 {
		p.NVLinkTxBytes = math.Trunc(d.ivTxKiB * 1024 / dt)
		p.NVLinkRxBytes = math.Trunc(d.ivRxKiB * 1024 / dt)
	}
}

func ratio(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// profFamily is a DCGM_FI_PROF_* family: one series on a GPU with GPM that
// is not in MIG mode (weft-agent does not sample GPM per GPU instance).
func profFamily(name string, f func(*Profile) float64) Family {
	return Family{Name: name, Type: Gauge, Fixed: true, GPU: func(r *Reading, k Kind, e Emitter) {
		if r.GPM && len(r.MIG) == 0 {
			e.Emit(k, f(&r.Prof), nil)
		}
	}}
}

// gpmSupported is gpu_agent_gpm_supported: 1 on a GPU with GPM, 0 without;
// absent in MIG mode, as the agent skips profiling there altogether.
func gpmSupported(r *Reading, k Kind, e Emitter) {
	if len(r.MIG) > 0 {
		return
	}
	v := 0.0
	if r.GPM {
		v = 1
	}
	e.Emit(k, v, nil)
}
