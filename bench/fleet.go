package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/prometheus/prometheus/prompb"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// GPUsPerNode is the number of GPUs on every generated node (HGX/DGX H100).
const GPUsPerNode = 8

// gpuKinds are the families every GPU emits: weft-agent's default
// (dcgm-exporter) set from the shared generator, one series each.
var gpuKinds = gputelemetry.DefaultKinds()

// SeriesPerGPU is the number of series one GPU emits.
var SeriesPerGPU = len(gpuKinds)

// SeriesPerNode is the number of series one node emits.
var SeriesPerNode = GPUsPerNode * SeriesPerGPU

var (
	trainModels = []string{"llama-3-70b", "llama-3-8b", "mixtral-8x22b", "qwen2-72b", "gpt-neox-20b", "dit-xl", "whisper-large"}
	datasets    = []string{"fineweb-edu", "redpajama-v2", "the-stack-v2", "laion-5b", "c4-en", "slimpajama", "internal-chat-v7"}
	teams       = []string{"pretrain", "post-train", "multimodal", "speech", "research", "eval", "infra"}
)

// run is a training run occupying whole nodes; ending it and starting its
// successor on the same nodes is the churn.
type run struct {
	id                           string
	model, dataset, team, tenant string
	nodes                        []*gpuNode
	fbMiB                        float64 // per-GPU memory the run holds
	level, tensor                float64 // utilization plateau and tensor activity while training
	ckptEvery, ckptLen           int     // checkpoint period and length in scrapes
	phase                        int
	started                      int // scrapes since the run started (its loading phase)
}

// gpu is one device of a node and the series of its current run.
type gpu struct {
	dev    *gputelemetry.Device
	ident  []gputelemetry.Label
	series []*series // one per gpuKinds entry, current run's labels
}

// gpuNode is one host with GPUsPerNode GPUs; it is a scrape unit.
type gpuNode struct {
	idx     int
	host    string
	static  []prompb.Label
	rng     *rand.Rand
	run     *run
	slot    int // position of this node in its run (for ranks)
	lastT   int64
	gpus    [GPUsPerNode]*gpu
	retired []*series // series of the previous run still holding samples
}

// runWarm is the loading phase of a new run, in scrapes.
const runWarm = 4

func newGPUNode(seed int64, idx int, prefix string, labelsPerSeries int) *gpuNode {
	n := &gpuNode{idx: idx, host: fmt.Sprintf("%s-%05d", prefix, idx)}
	n.rng = rand.New(rand.NewPCG(uint64(seed), uint64(idx)<<1|1))
	n.static = []prompb.Label{
		{Name: "instance", Value: n.host + ":9400"},
		{Name: "job", Value: "weft-agent"},
		{Name: "cluster", Value: "gpu-east-" + itoa(idx%3)},
	}
	// natural label count: static 3 + GPU identity 7 + run 9 + __name__ 1.
	n.static = append(n.static, padLabels(20, labelsPerSeries, idx)...)
	for i := range n.gpus {
		d := gputelemetry.NewDevice(n.rng, i, gputelemetry.H100)
		n.gpus[i] = &gpu{dev: d, ident: d.IdentityLabels(n.host)}
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
		ls := make([]prompb.Label, 0, len(gp.ident)+9+len(n.static))
		for _, l := range gp.ident {
			ls = append(ls, prompb.Label{Name: l.Name, Value: l.Value})
		}
		ls = append(ls,
			prompb.Label{Name: "run_id", Value: r.id},
			prompb.Label{Name: "model", Value: r.model},
			prompb.Label{Name: "dataset", Value: r.dataset},
			prompb.Label{Name: "rank", Value: itoa(slot*GPUsPerNode + gp.dev.Index)},
			prompb.Label{Name: "team", Value: r.team},
			prompb.Label{Name: "tenant", Value: r.tenant},
			prompb.Label{Name: "namespace", Value: r.team},
			prompb.Label{Name: "pod", Value: fmt.Sprintf("%s-worker-%d", r.id, slot)},
			prompb.Label{Name: "container", Value: "trainer"},
		)
		ls = append(ls, n.static...)
		gp.series = gp.series[:0]
		for _, k := range gpuKinds {
			name := k.MetricName()
			kind := kindGauge
			if k.IsCounter() {
				kind = kindCounter
			}
			gp.series = append(gp.series, newSeries(name, name, kind, ls))
			g.created[name]++
		}
	}
}

func (n *gpuNode) scrape(g *generator, step int, t int64) {
	t += jitter(n.rng, g.opts.ScrapeInterval)
	dt := g.opts.ScrapeInterval.Milliseconds()
	if n.lastT != 0 {
		dt = t - n.lastT
	}
	n.lastT = t
	r := n.run
	if n.slot == 0 {
		r.phase++
		r.started++
	}
	// Training steps on a plateau, periodic checkpoints and occasional
	// data-loader stalls; the shared generator turns that into the GPUs'
	// telemetry.
	a := gputelemetry.Activity{Phase: gputelemetry.PhaseTraining, Step: r.started + 2, Warm: runWarm, Level: r.level, Tensor: r.tensor, FBMiB: r.fbMiB}
	switch {
	case r.started < runWarm:
		a.Phase = gputelemetry.PhaseLoading
	case r.ckptEvery > 0 && r.phase%r.ckptEvery < r.ckptLen:
		a.Phase = gputelemetry.PhaseCheckpoint
	case n.rng.Float64() < 0.02:
		a.Phase = gputelemetry.PhaseStall
	}
	for _, gp := range n.gpus {
		reading := gp.dev.Step(n.rng, dt, a, gputelemetry.Faults{})
		i := 0
		gputelemetry.EmitGPU(gpuKinds, reading, gputelemetry.EmitterFunc(func(_ gputelemetry.Kind, v float64, _ []gputelemetry.Label) {
			gp.series[i].add(t, v)
			i++
		}))
		g.step.fbUsedSum += reading.FBUsed
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
		level:     93 + 6*rng.Float64(),
		tensor:    0.3 + 0.25*rng.Float64(),
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
