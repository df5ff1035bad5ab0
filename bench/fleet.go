package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/prometheus/prometheus/prompb"
)

// GPUsPerNode is the number of GPUs on every generated node (HGX/DGX H100).
const GPUsPerNode = 8

// gpuMetrics is the dcgm-exporter / weft-agent metric set every GPU emits.
var gpuMetrics = []struct {
	name string
	kind metricKind
}{
	{"DCGM_FI_DEV_GPU_UTIL", kindGauge},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", kindGauge},
	{"DCGM_FI_DEV_FB_USED", kindGauge},
	{"DCGM_FI_DEV_FB_FREE", kindGauge},
	{"DCGM_FI_DEV_POWER_USAGE", kindGauge},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kindCounter},
	{"DCGM_FI_DEV_GPU_TEMP", kindGauge},
	{"DCGM_FI_DEV_MEMORY_TEMP", kindGauge},
	{"DCGM_FI_DEV_SM_CLOCK", kindGauge},
	{"DCGM_FI_DEV_MEM_CLOCK", kindGauge},
	{"DCGM_FI_DEV_XID_ERRORS", kindGauge},
	{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", kindCounter},
	{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kindCounter},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kindCounter},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", kindGauge},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", kindGauge},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", kindGauge},
}

// Indexes into gpuMetrics used by the dynamics.
const (
	mUtil = iota
	mMemCopy
	mFBUsed
	mFBFree
	mPower
	mEnergy
	mTemp
	mMemTemp
	mSMClock
	mMemClock
	mXID
	mSBE
	mDBE
	mReplay
	mPCIeTX
	mPCIeRX
	mGrActive
)

// SeriesPerNode is the number of series one node emits.
var SeriesPerNode = GPUsPerNode * len(gpuMetrics)

var (
	trainModels = []string{"llama-3-70b", "llama-3-8b", "mixtral-8x22b", "qwen2-72b", "gpt-neox-20b", "dit-xl", "whisper-large"}
	datasets    = []string{"fineweb-edu", "redpajama-v2", "the-stack-v2", "laion-5b", "c4-en", "slimpajama", "internal-chat-v7"}
	teams       = []string{"pretrain", "post-train", "multimodal", "speech", "research", "eval", "infra"}
)

const fbTotalMiB = 81559 // H100 80GB HBM3 as dcgm-exporter reports it

// run is a training run occupying whole nodes; ending it and starting its
// successor on the same nodes is the churn.
type run struct {
	id                           string
	model, dataset, team, tenant string
	nodes                        []*gpuNode
	fbMiB                        float64 // per-GPU memory the run holds
	ckptEvery, ckptLen           int     // checkpoint period and length in scrapes
	phase                        int
}

// gpu is the dynamic state of one GPU.
type gpu struct {
	idx               int
	uuid              string
	util, temp, power float64
	energy            float64 // mJ since boot
	sbe, dbe, replay  float64
	xid               float64
	series            []*series // one per gpuMetrics entry, current run's labels
}

// gpuNode is one host with GPUsPerNode GPUs; it is a scrape unit.
type gpuNode struct {
	idx     int
	host    string
	static  []prompb.Label
	rng     *rand.Rand
	run     *run
	slot    int // position of this node in its run (for ranks)
	gpus    [GPUsPerNode]*gpu
	retired []*series // series of the previous run still holding samples
}

func newGPUNode(seed int64, idx int, prefix string, labelsPerSeries int) *gpuNode {
	n := &gpuNode{idx: idx, host: fmt.Sprintf("%s-%05d", prefix, idx)}
	n.rng = rand.New(rand.NewPCG(uint64(seed), uint64(idx)<<1|1))
	n.static = []prompb.Label{
		{Name: "Hostname", Value: n.host},
		{Name: "instance", Value: n.host + ":9400"},
		{Name: "job", Value: "dcgm-exporter"},
		{Name: "cluster", Value: "gpu-east-" + itoa(idx%3)},
		{Name: "modelName", Value: "NVIDIA H100 80GB HBM3"},
	}
	// natural label count: static 5 + gpu 3 + run 10 + __name__ 1.
	n.static = append(n.static, padLabels(19, labelsPerSeries, idx)...)
	for i := range n.gpus {
		n.gpus[i] = &gpu{
			idx:  i,
			uuid: fmt.Sprintf("GPU-%08x-%04x-%04x", n.rng.Uint32(), n.rng.Uint32()&0xffff, idx&0xffff),
			temp: 30 + n.rng.Float64()*5, energy: float64(n.rng.Int64N(1e12)),
		}
	}
	return n
}

// assign puts the node into run r at position slot and creates the series of
// its GPUs; the previous run's series get a staleness marker at t.
func (n *gpuNode) assign(g *generator, r *run, slot int, t int64) {
	if n.run != nil && t >= 0 {
		for _, gp := range n.gpus {
			for _, s := range gp.series {
				s.add(t, staleNaN)
				n.retired = append(n.retired, s)
			}
		}
	}
	n.run, n.slot = r, slot
	for _, gp := range n.gpus {
		ctx := []prompb.Label{
			{Name: "gpu", Value: itoa(gp.idx)},
			{Name: "UUID", Value: gp.uuid},
			{Name: "device", Value: "nvidia" + itoa(gp.idx)},
			{Name: "run_id", Value: r.id},
			{Name: "model", Value: r.model},
			{Name: "dataset", Value: r.dataset},
			{Name: "rank", Value: itoa(slot*GPUsPerNode + gp.idx)},
			{Name: "team", Value: r.team},
			{Name: "tenant", Value: r.tenant},
			{Name: "namespace", Value: r.team},
			{Name: "pod", Value: fmt.Sprintf("%s-worker-%d", r.id, slot)},
			{Name: "container", Value: "trainer"},
		}
		ls := append(ctx, n.static...)
		gp.series = gp.series[:0]
		for _, m := range gpuMetrics {
			gp.series = append(gp.series, newSeries(m.name, m.name, m.kind, ls))
			g.created[m.name]++
		}
	}
}

func (n *gpuNode) scrape(g *generator, step int, t int64) {
	t += jitter(n.rng, g.opts.ScrapeInterval)
	r := n.run
	if n.slot == 0 {
		r.phase++
	}
	inCkpt := r.ckptEvery > 0 && r.phase%r.ckptEvery < r.ckptLen
	dt := g.opts.ScrapeInterval.Seconds()
	for _, gp := range n.gpus {
		rng := n.rng
		// Utilization plateaus near 95% during steps, drops during checkpoints
		// and occasional data-loader stalls.
		target := 93 + rng.Float64()*6
		switch {
		case inCkpt:
			target = 4 + rng.Float64()*8
		case rng.Float64() < 0.02:
			target = 40 + rng.Float64()*30
		}
		gp.util = math.Round(gp.util + (target-gp.util)*0.8)
		// Power follows utilization with a little lag and noise.
		pw := 70 + gp.util/100*620 + rng.NormFloat64()*6
		gp.power = math.Round((gp.power*0.3+pw*0.7)*1000) / 1000
		gp.energy += math.Round(gp.power * dt * 1000)
		// Temperature drifts slowly towards a power-dependent equilibrium.
		eq := 28 + gp.power*0.07
		gp.temp += (eq-gp.temp)*0.05 + rng.NormFloat64()*0.1
		smClock := 1980.0
		switch {
		case gp.util < 10:
			smClock = 345
		case gp.temp > 82:
			smClock = 1755
		}
		if rng.Float64() < 1e-4 {
			gp.sbe++
		}
		if rng.Float64() < 2e-6 {
			gp.dbe++
		}
		if rng.Float64() < 5e-4 {
			gp.replay++
		}
		gp.xid = 0
		if rng.Float64() < 1e-5 {
			gp.xid = 79
		}
		fb := math.Round(r.fbMiB + rng.Float64()*64)
		if inCkpt {
			fb = math.Round(r.fbMiB * 0.97)
		}
		pcie := math.Round(gp.util / 100 * (2e9 + rng.Float64()*3e8))
		vals := [...]float64{
			mUtil: gp.util, mMemCopy: math.Round(gp.util * 0.42), mFBUsed: fb, mFBFree: fbTotalMiB - fb,
			mPower: gp.power, mEnergy: gp.energy, mTemp: math.Round(gp.temp), mMemTemp: math.Round(gp.temp + 6),
			mSMClock: smClock, mMemClock: 2619, mXID: gp.xid, mSBE: gp.sbe, mDBE: gp.dbe, mReplay: gp.replay,
			mPCIeTX: pcie, mPCIeRX: math.Round(pcie * 1.7), mGrActive: math.Round(gp.util/100*0.98*1e6) / 1e6,
		}
		for i, s := range gp.series {
			s.add(t, vals[i])
		}
		g.step.fbUsedSum += fb
		g.step.activeGPUs++
		g.segUtil++
	}
}

func (n *gpuNode) drain(f func(*series)) {
	for _, s := range n.retired {
		f(s)
		s.buf = s.buf[:0]
	}
	n.retired = n.retired[:0]
	for _, gp := range n.gpus {
		for _, s := range gp.series {
			if len(s.buf) > 0 {
				f(s)
				s.buf = s.buf[:0]
			}
		}
	}
}

// newRun creates the next training run on nodes. Run ids are r<n>, so a
// selector like run_id=~"r1.*" picks a deterministic slice of them.
func (g *generator) newRun(nodes []*gpuNode, t int64) *run {
	g.runSeq++
	rng := g.rng
	team := rng.IntN(len(teams))
	r := &run{
		id:        "r" + itoa(g.runSeq),
		model:     trainModels[rng.IntN(len(trainModels))],
		dataset:   datasets[rng.IntN(len(datasets))],
		team:      teams[team],
		tenant:    "tenant-" + itoa(team%3),
		nodes:     nodes,
		fbMiB:     float64(40000 + rng.IntN(38000)),
		ckptEvery: 20 + rng.IntN(40),
		ckptLen:   1 + rng.IntN(2),
		phase:     rng.IntN(20),
	}
	for i, n := range nodes {
		n.assign(g, r, i, t)
	}
	g.runs = append(g.runs, r)
	return r
}

// rotateRuns ends the oldest runs and starts successors on their nodes until
// the churn budget for this scrape is spent.
func (g *generator) rotateRuns(t int64) {
	g.churnBudget += float64(g.opts.ChurnPerMinute) * g.opts.ScrapeInterval.Minutes()
	for len(g.runs) > 0 {
		r := g.runs[0]
		cost := float64(len(r.nodes) * SeriesPerNode)
		if g.churnBudget < cost {
			return
		}
		g.churnBudget -= cost
		g.runs = g.runs[1:]
		g.newRun(r.nodes, t)
	}
}

// runSizes are the node counts a training run takes (1 to 8 nodes).
var runSizes = []int{1, 1, 2, 2, 4, 8}
