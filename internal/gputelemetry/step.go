package gputelemetry

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Phase is what the workload on a GPU is doing during one scrape interval.
type Phase int

// Workload phases. The first five are the storage generator's training
// phases; the others serve scenario generators.
const (
	PhaseLoading    Phase = iota // the model loads: utilization ramps, framebuffer fills
	PhaseTraining                // steps run: utilization on a plateau
	PhaseEval                    // evaluation: lower utilization, more framebuffer
	PhaseCheckpoint              // checkpoint write: compute idle, PCIe busy
	PhaseStall                   // a short hiccup: utilization between 40 and 80%
	PhaseIdle                    // no process on the GPU
	PhaseSpin                    // blocked in a collective: NCCL kernels spin, no math
)

// Activity is what the workload asks of a GPU during one interval. Zero
// fields mean "as a healthy training job would".
type Activity struct {
	Phase Phase
	// Step is the scrape index since the workload started on the GPU; Warm
	// is how many scrapes its loading phase lasts.
	Step, Warm int
	// Level is the utilization plateau while training (%), Tensor the
	// tensor-pipe activity while training (0-1), FBMiB the framebuffer the
	// workload holds.
	Level, Tensor, FBMiB float64
	// Starved is the share of the interval the GPU sits idle waiting for
	// its inputs (the data loader): it scales utilization, power, tensor
	// activity and traffic down.
	Starved float64
	// Spin is the share of the interval spent in a collective (NCCL's
	// all-reduce, waiting for the slowest peer): its kernels keep the GPU
	// "utilized" but draw little power and do no tensor work.
	Spin float64
	// NVLinkGBps and PCIeRxMBps, PCIeTxMBps are the traffic the workload
	// drives (all links, both directions; host↔device). Zero: derived from
	// the phase.
	NVLinkGBps, PCIeRxMBps, PCIeTxMBps float64
	// PID is the compute process (0: none reported).
	PID int
}

// Faults are hardware conditions injected into one interval. The zero value
// is a healthy GPU.
type Faults struct {
	// NVLinkLoss is the share of NVLink bandwidth lost (0.99: near zero
	// left); NVLinkErrors the replay/recovery/CRC errors per scrape that
	// come with it.
	NVLinkLoss, NVLinkErrors float64
	// CoolingLoss raises the temperature the GPU settles at by this many
	// °C; above the slowdown threshold the clocks throttle (thermal clock
	// event reasons, SM clock down).
	CoolingLoss float64
	// SBE is the number of correctable (single-bit) ECC errors this scrape;
	// DBE of uncorrectable ones, each also remapping a row.
	SBE, DBE float64
	// XID records these XIDs this scrape (counted per code).
	XID []int
	// Lost: the GPU fell off the bus (XID 79); it stays lost.
	Lost bool
	// PCIeLoss is the share of host↔device bandwidth taken by a neighbour.
	PCIeLoss float64
}

// Step advances the device by one scrape interval of dtMs milliseconds and
// returns its reading. rng is the node's generator (shared by the GPUs of a
// node, as in the storage generator); the quantities that generator never
// had come from the device's own stream.
func (d *Device) Step(rng *rand.Rand, dtMs int64, a Activity, f Faults) *Reading {
	m := &d.Model
	r := &d.read
	if f.Lost {
		r.Failed = true
	}
	if r.Failed {
		return r
	}
	util := d.utilization(rng, a)
	load := util / 100

	// Power follows utilization; the reported value is one instantaneous
	// sensor reading with its noise. The energy counter integrates the
	// sensor continuously, so its increments carry the interval's mean
	// power, whose noise is far smaller.
	work := load
	switch {
	case a.Phase == PhaseSpin:
		work = 0.28 // spinning kernels draw little
	case a.Spin > 0:
		work = load*(1-a.Spin) + 0.28*a.Spin
	}
	mean := m.IdleWatts + (m.TDPWatts-m.IdleWatts)*math.Pow(work, 1.3)*d.eff
	if d.tempC > m.SlowdownTempC-2 && f.CoolingLoss > 0 {
		mean *= math.Max(0.4, 1-0.05*(d.tempC-(m.SlowdownTempC-2))) // throttled clocks draw less
	}
	d.watts = math.Max(55, mean+rng.NormFloat64()*5)
	d.energyMJ += int64(math.Max(55, mean+rng.NormFloat64()*0.5) * float64(max(dtMs, 0)))

	// Temperatures drift towards a load-dependent target.
	target := d.ambient + 10 + 45*load
	if a.Phase == PhaseSpin {
		target = d.ambient + 10 + 45*0.28
	}
	target += f.CoolingLoss
	d.tempC += (target-d.tempC)*0.06 + rng.NormFloat64()*0.15
	d.memTempC += (target+8-d.memTempC)*0.04 + rng.NormFloat64()*0.1

	// The SM clock steps between a few frequencies under load.
	clock := m.BoostClock
	switch a.Phase {
	case PhaseLoading:
		if a.Step < 3 {
			clock = m.IdleClock
		}
	case PhaseTraining, PhaseEval:
		if rng.Float64() < 0.03 {
			d.clockIdx = max(0, min(len(m.SMClocks)-1, d.clockIdx+[]int{-1, 1}[rng.IntN(2)]))
		}
		clock = m.SMClocks[d.clockIdx]
	case PhaseIdle:
		clock = m.IdleClock
	}

	// Framebuffer: context, then the model loads, then the caching
	// allocator grows in 2 MiB-aligned steps now and then.
	fb := 525.0
	if a.Phase == PhaseIdle {
		fb = 0
	} else if a.Step >= 2 {
		fill := math.Min(1, float64(a.Step-1)/float64(max(a.Warm-1, 1)))
		fb = math.Round(a.FBMiB*fill/2) * 2
		if rng.Float64() < 0.004 {
			d.fbDelta += 2 * math.Round(1+rng.ExpFloat64()*64)
		}
		fb += d.fbDelta
		if a.Phase == PhaseEval {
			fb += 1024
		}
	}

	// Tensor pipe activity, a DCGM profiling ratio printed with 6 decimals.
	tensor := 0.0
	switch a.Phase {
	case PhaseTraining:
		tensor = a.Tensor*(1-a.Starved-a.Spin) + rng.NormFloat64()*0.012
	case PhaseEval:
		tensor = a.Tensor*0.45 + rng.NormFloat64()*0.01
	case PhaseStall, PhaseLoading, PhaseSpin:
		tensor = math.Abs(rng.NormFloat64() * 0.01)
	}
	tensor = math.Max(0, math.Min(1, tensor))

	// Error counters: mostly flat.
	if d.badLink && rng.Float64() < 0.003 {
		d.pcie += float64(1 + rng.IntN(3))
	} else if rng.Float64() < 0.00002 {
		d.pcie++
	}
	if rng.Float64() < 0.0005 {
		d.sbe++
	}
	if rng.Float64() < 0.000005 && d.RandomFaults {
		d.dbe++
	}
	if d.xidLeft > 0 {
		d.xidLeft--
		if d.xidLeft == 0 {
			d.xid = 0
		}
	} else if rng.Float64() < 0.00005 {
		code, left := randomXIDs[rng.IntN(len(randomXIDs))], 20+rng.IntN(40)
		if d.RandomFaults {
			d.xid, d.xidLeft = code, left
			d.countXID(int(code))
		}
	}

	d.faults(f)
	if d.tempC > m.SlowdownTempC-2 {
		// Thermal slowdown: clocks drop with the excess, in 15 MHz bins.
		over := d.tempC - (m.SlowdownTempC - 2)
		clock = math.Min(clock, math.Max(m.IdleClock*2, math.Round((m.BoostClock-90*over)/15)*15))
	}

	r.Util = util
	r.Power = math.Round(d.watts*1000) / 1000
	r.Energy = float64(d.energyMJ)
	r.GPUTemp = math.Round(d.tempC)
	r.MemTemp = math.Round(d.memTempC)
	r.FBUsed = fb
	r.SMClock = clock
	r.MemClock = m.MemClock
	r.TensorActive = math.Round(tensor*1e6) / 1e6
	r.PCIeReplay = d.pcie
	r.LastXID = d.xid
	r.SBEVol = d.sbe
	r.DBEVol = d.dbe
	d.auxStep(a, f, dtMs)
	return r
}

// Failed reports whether the GPU fell off the bus.
func (d *Device) Failed() bool { return d.read.Failed }

// utilization is DCGM_FI_DEV_GPU_UTIL: an integer percent that sits on a
// plateau while training and drops for evaluation, checkpoints and stalls.
func (d *Device) utilization(rng *rand.Rand, a Activity) float64 {
	var u float64
	switch a.Phase {
	case PhaseLoading:
		u = float64(a.Step) / float64(max(a.Warm, 1)) * 30 * rng.Float64()
	case PhaseCheckpoint:
		u = math.Abs(rng.NormFloat64() * 2)
	case PhaseEval:
		u = 62 + rng.NormFloat64()*3
	case PhaseStall:
		u = 40 + 40*rng.Float64()
	case PhaseIdle:
		u = 0
	case PhaseSpin:
		u = 100 - math.Abs(rng.NormFloat64()*0.6) // a spinning kernel is always resident
	default:
		level := math.Round(a.Level + d.levelBias)
		switch x := rng.Float64(); {
		case x < 0.72:
			u = level
		case x < 0.9:
			u = level - 1
		case x < 0.97:
			u = level + 1
		default:
			u = level - 2 - 4*rng.Float64()
		}
		if a.Starved > 0 {
			u = u*(1-a.Starved) + rng.NormFloat64()*2
		}
	}
	return math.Max(0, math.Min(100, math.Round(u)))
}

// Idle advances the device through an idle gap of ms milliseconds without
// scrapes (between the storage generator's runs): it cools down and draws
// idle power.
func (d *Device) Idle(rng *rand.Rand, ms int64) {
	d.watts = d.Model.IdleWatts + rng.NormFloat64()*2
	d.energyMJ += int64(d.watts * float64(ms))
	cool := 1 - math.Pow(0.94, float64(ms)/15000)
	d.tempC += (d.ambient + 8 - d.tempC) * cool
	d.memTempC += (d.ambient + 12 - d.memTempC) * cool
	d.fbDelta = 0
	d.clockIdx = 0
	d.xid, d.xidLeft = 0, 0
}

func (d *Device) countXID(code int) {
	i, found := slices.BinarySearchFunc(d.xids, code, func(x XIDCount, c int) int { return x.Code - c })
	if !found {
		d.xids = slices.Insert(d.xids, i, XIDCount{Code: code, labels: []Label{{"xid", strconv.Itoa(code)}}})
	}
	d.xids[i].Count++
}

// faults applies the injected conditions that act on the main state.
func (d *Device) faults(f Faults) {
	for _, x := range f.XID {
		d.countXID(x)
		d.xid, d.xidLeft = float64(x), 1<<30 // a fatal XID stays the last one
	}
	d.sbe += f.SBE
	d.dbe += f.DBE
	d.remapCorr += math.Floor(f.SBE / 8)
	if f.DBE > 0 {
		d.remapUnc += f.DBE
		d.remapPending = 1
	}
}
