package gputelemetry

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// H100 SXM figures the simulation is calibrated on.
const (
	idleWatts  = 72.0
	tdpWatts   = 700.0
	memClock   = 2619
	idleClock  = 345
	boostClock = 1980
)

// Clock steps the SM clock moves between under load (power and thermal
// capping).
var smClocks = []float64{1980, 1755, 1650, 1410}

// Last XID values dcgm-exporter reports for the common faults.
var xids = []float64{13, 31, 43, 48, 63, 79, 94}

// gpu is one device's state; it persists across runs on its node.
type gpu struct {
	uuid      string
	rank      int
	eff       float64 // power efficiency spread between devices
	ambient   float64 // inlet temperature, °C
	tempC     float64
	memTempC  float64
	energyMJ  int64
	watts     float64
	clockIdx  int
	pcie      float64
	badLink   bool
	sbe, dbe  float64
	xid       float64
	xidLeft   int
	fbDelta   float64
	levelBias float64
}

func newGPU(rng *rand.Rand, rank int) gpu {
	g := gpu{
		uuid: fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
			rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff),
		rank:      rank,
		eff:       0.92 + 0.1*rng.Float64(),
		ambient:   24 + 6*rng.Float64(),
		energyMJ:  int64(2e11 + 4e12*rng.Float64()),
		badLink:   rng.Float64() < 0.08,
		sbe:       math.Floor(rng.ExpFloat64() * 3),
		levelBias: -2 * rng.Float64(),
		watts:     idleWatts,
	}
	g.tempC, g.memTempC = g.ambient+8, g.ambient+12
	return g
}

// step advances the device by one scrape of run r in phase ph (scrape j of
// the run, dtMs since the previous one) and writes the scraped values.
func (g *gpu) step(rng *rand.Rand, r *run, ph phase, j int, dtMs int64, out *[numKinds]float64) {
	util := g.utilization(rng, r, ph, j)
	load := util / 100

	// Power follows utilization; the reported value is one instantaneous
	// sensor reading with its noise. The energy counter integrates the sensor
	// continuously, so its increments carry the interval's mean power, whose
	// noise is far smaller.
	mean := idleWatts + (tdpWatts-idleWatts)*math.Pow(load, 1.3)*g.eff
	g.watts = math.Max(55, mean+rng.NormFloat64()*5)
	g.energyMJ += int64(math.Max(55, mean+rng.NormFloat64()*0.5) * float64(max(dtMs, 0)))

	// Temperatures drift towards a load-dependent target.
	target := g.ambient + 10 + 45*load
	g.tempC += (target-g.tempC)*0.06 + rng.NormFloat64()*0.15
	g.memTempC += (target+8-g.memTempC)*0.04 + rng.NormFloat64()*0.1

	// The SM clock steps between a few frequencies under load.
	clock := float64(boostClock)
	switch ph {
	case phaseLoading:
		if j < 3 {
			clock = idleClock
		}
	case phaseTraining, phaseEval:
		if rng.Float64() < 0.03 {
			g.clockIdx = max(0, min(len(smClocks)-1, g.clockIdx+[]int{-1, 1}[rng.IntN(2)]))
		}
		clock = smClocks[g.clockIdx]
	}

	// Framebuffer: context, then the model loads, then the caching allocator
	// grows in 2 MiB-aligned steps now and then.
	fb := 525.0
	if j >= 2 {
		fill := math.Min(1, float64(j-1)/float64(max(r.warm-1, 1)))
		fb = math.Round(r.fb*fill/2) * 2
		if rng.Float64() < 0.004 {
			g.fbDelta += 2 * math.Round(1+rng.ExpFloat64()*64)
		}
		fb += g.fbDelta
		if ph == phaseEval {
			fb += 1024
		}
	}

	// Tensor pipe activity, a DCGM profiling ratio printed with 6 decimals.
	tensor := 0.0
	switch ph {
	case phaseTraining:
		tensor = r.tensor + rng.NormFloat64()*0.012
	case phaseEval:
		tensor = r.tensor*0.45 + rng.NormFloat64()*0.01
	case phaseStall, phaseLoading:
		tensor = math.Abs(rng.NormFloat64() * 0.01)
	}
	tensor = math.Max(0, math.Min(1, tensor))

	// Error counters: mostly flat.
	if g.badLink && rng.Float64() < 0.003 {
		g.pcie += float64(1 + rng.IntN(3))
	} else if rng.Float64() < 0.00002 {
		g.pcie++
	}
	if rng.Float64() < 0.0005 {
		g.sbe++
	}
	if rng.Float64() < 0.000005 {
		g.dbe++
	}
	if g.xidLeft > 0 {
		g.xidLeft--
		if g.xidLeft == 0 {
			g.xid = 0
		}
	} else if rng.Float64() < 0.00005 {
		g.xid, g.xidLeft = xids[rng.IntN(len(xids))], 20+rng.IntN(40)
	}

	out[Utilization] = util
	out[Power] = math.Round(g.watts*1000) / 1000
	out[Energy] = float64(g.energyMJ)
	out[GPUTemp] = math.Round(g.tempC)
	out[MemTemp] = math.Round(g.memTempC)
	out[FBUsed] = fb
	out[SMClock] = clock
	out[MemClock] = memClock
	out[TensorActive] = math.Round(tensor*1e6) / 1e6
	out[PCIeReplay] = g.pcie
	out[XID] = g.xid
	out[ECCSBE] = g.sbe
	out[ECCDBE] = g.dbe
}

// utilization is DCGM_FI_DEV_GPU_UTIL: an integer percent that sits on a
// plateau while training and drops for evaluation, checkpoints and stalls.
func (g *gpu) utilization(rng *rand.Rand, r *run, ph phase, j int) float64 {
	var u float64
	switch ph {
	case phaseLoading:
		u = float64(j) / float64(r.warm) * 30 * rng.Float64()
	case phaseCheckpoint:
		u = math.Abs(rng.NormFloat64() * 2)
	case phaseEval:
		u = 62 + rng.NormFloat64()*3
	case phaseStall:
		u = 40 + 40*rng.Float64()
	default:
		level := math.Round(r.level + g.levelBias)
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
	}
	return math.Max(0, math.Min(100, math.Round(u)))
}

// idle advances the device through an idle gap of ms milliseconds between
// runs: it cools down and draws idle power.
func (g *gpu) idle(rng *rand.Rand, ms int64) {
	g.watts = idleWatts + rng.NormFloat64()*2
	g.energyMJ += int64(g.watts * float64(ms))
	cool := 1 - math.Pow(0.94, float64(ms)/15000)
	g.tempC += (g.ambient + 8 - g.tempC) * cool
	g.memTempC += (g.ambient + 12 - g.memTempC) * cool
	g.fbDelta = 0
	g.clockIdx = 0
	g.xid, g.xidLeft = 0, 0
}
