package gputelemetry

import (
	"math"
)

// Traffic a healthy workload drives per phase (NVLink GB/s over all links
// and both directions; PCIe MB/s host→device and device→host).
var phaseTraffic = map[Phase]struct{ nvlink, rx, tx float64 }{
	PhaseLoading:    {2, 12_000, 150},
	PhaseTraining:   {240, 1_200, 350},
	PhaseEval:       {15, 800, 200},
	PhaseCheckpoint: {1, 200, 9_000},
	PhaseStall:      {60, 400, 100},
	PhaseIdle:       {0, 3, 2},
	PhaseSpin:       {0.5, 20, 20},
}

// linkGBps is one NVLink's bandwidth, both directions (NVLink 4: 50 GB/s).
const linkGBps = 50

// auxStep derives, from the device's own random stream, every quantity the
// storage generator did not have: memory-copy utilization, framebuffer
// free, clock event reasons and violation time, PCIe and NVLink traffic
// and errors, aggregate ECC, row remapping, MIG and processes.
func (d *Device) auxStep(a Activity, f Faults, dtMs int64) {
	m, r, rng := &d.Model, &d.read, d.aux
	dt := float64(max(dtMs, 0)) / 1000
	load := r.Util / 100
	busy := a.Phase != PhaseIdle

	r.MemCopyUtil = 0
	if busy {
		r.MemCopyUtil = math.Max(0, math.Min(100, math.Round(r.Util*d.memRatio+rng.NormFloat64())))
	}
	r.EncUtil, r.DecUtil = 0, 0
	r.FBTotal = m.FBTotalMiB
	r.FBFree = math.Max(0, m.FBTotalMiB-r.FBUsed-fbReservedMiB)
	r.SlowdownTemp = m.SlowdownTempC
	r.PowerLimit = m.TDPWatts
	r.Arch = m.Arch

	// Clock event reasons and the time spent under each.
	var reasons uint64
	switch {
	case !busy:
		reasons |= ReasonGPUIdle
		d.policy[PolicyLowUtilization] += dt
	case d.clockIdx > 0 && (a.Phase == PhaseTraining || a.Phase == PhaseEval):
		reasons |= ReasonSWPowerCap
		d.policy[PolicyPower] += dt
	}
	if d.tempC > m.SlowdownTempC-2 {
		reasons |= ReasonSWThermal | ReasonHWThermal | ReasonHWSlowdown
		d.policy[PolicyThermal] += dt
	}
	r.ClockReasons = reasons
	for i, s := range d.policy {
		r.ClockEventSeconds[i] = math.Round(s*1000) / 1000
	}

	// PCIe: what the workload asks for, less what a neighbour takes.
	tr := phaseTraffic[a.Phase]
	rx, tx := tr.rx, tr.tx
	if a.Phase == PhaseTraining {
		rx, tx = rx*(1-a.Starved), tx*(1-a.Starved)
	}
	if a.PCIeRxMBps > 0 {
		rx = a.PCIeRxMBps
	}
	if a.PCIeTxMBps > 0 {
		tx = a.PCIeTxMBps
	}
	noise := func() float64 { return math.Exp(rng.NormFloat64() * 0.15) }
	r.PCIeRx = math.Round(rx * 1000 * (1 - f.PCIeLoss) * noise())
	r.PCIeTx = math.Round(tx * 1000 * (1 - f.PCIeLoss) * noise())

	// NVLink: demand capped by what the links still carry.
	nv := tr.nvlink
	if a.NVLinkGBps > 0 {
		nv = a.NVLinkGBps
	} else if a.Phase == PhaseTraining {
		nv *= load
	}
	if n := len(d.links); n > 0 {
		nv = math.Min(nv*noise(), float64(n)*linkGBps*(1-f.NVLinkLoss))
		perLink := nv * 1e9 / 1024 * dt / float64(n) / 2 // KiB per direction
		var total float64
		for i := range d.links {
			l := &d.links[i]
			x := perLink * (1 + 0.02*rng.NormFloat64())
			tx, rx := math.Round(math.Max(0, x)), math.Round(math.Max(0, x*(1+0.01*rng.NormFloat64())))
			l.TxKiB += tx
			l.RxKiB += rx
			total += tx + rx
			if rng.Float64() < 2e-5 {
				l.Errors[LinkCRCFlit]++
			}
		}
		d.nvlinkKiB += total
		if f.NVLinkErrors > 0 {
			d.linkErrors(f.NVLinkErrors)
		}
	}
	r.NVLinkKiB = d.nvlinkKiB
	r.Links = d.links
	r.LinkErrorTotals = [numLinkErrors]float64{}
	for _, l := range d.links {
		for e, v := range l.Errors {
			r.LinkErrorTotals[e] += v
		}
	}

	// Memory errors.
	r.SBEAgg = d.sbeAggBase + d.sbe
	r.DBEAgg = d.dbe
	r.RemapCorr, r.RemapUnc, r.RemapPending, r.RemapFailure = d.remapCorr, d.remapUnc, d.remapPending, 0
	r.RetiredSBE, r.RetiredDBE, r.RetiredPending = d.remapCorr, d.remapUnc, d.remapPending
	r.XIDs = d.xids

	r.MIG = d.mig
	for i := range d.mig {
		d.mig[i].FBUsedMiB = math.Round(r.FBUsed / float64(len(d.mig)))
	}
	r.Processes = r.Processes[:0]
	if a.PID > 0 && busy {
		p := d.process(a.PID)
		p.MemMiB = math.Max(0, r.FBUsed-12)
		p.SMUtil, p.MemUtl = r.Util, r.MemCopyUtil
		r.Processes = append(r.Processes, *p)
	}
}

// linkErrors spreads n errors of a failing link over two of the device's
// links: mostly replays, some recoveries and CRC errors.
func (d *Device) linkErrors(n float64) {
	rng := d.aux
	for _, li := range []int{2 % len(d.links), 3 % len(d.links)} {
		l := &d.links[li]
		share := n / 2 * (0.7 + 0.6*rng.Float64())
		l.Errors[LinkReplay] += math.Round(share * 0.6)
		l.Errors[LinkCRCFlit] += math.Round(share * 0.3)
		l.Errors[LinkCRCData] += math.Round(share * 0.05)
		if rng.Float64() < math.Min(1, share*0.05) {
			l.Errors[LinkRecovery]++
		}
	}
}

// process returns the device's process record for pid, reused across scrapes.
func (d *Device) process(pid int) *Process {
	if d.proc.PID != pid {
		d.proc = NewProcess(pid)
	}
	return &d.proc
}
