package gputelemetry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// Options configure Generate. Zero fields take the value DefaultOptions gives.
type Options struct {
	// Seed selects the data set; the same Options give the same series.
	Seed uint64
	// Nodes is the number of GPU nodes (scrape targets). Default 2.
	Nodes int
	// GPUsPerNode is the number of GPUs per node. Default 8.
	GPUsPerNode int
	// Start is the first scrape slot, in ms since the epoch. Default
	// 2026-01-01T00:00:00Z.
	Start int64
	// Duration of the generated window. Default 2h.
	Duration time.Duration
	// Interval is the scrape interval. Default 15s.
	Interval time.Duration
	// JitterMs bounds the scrape timestamp jitter (±ms). Default 4. Use
	// NoJitter for timestamps exactly on the grid.
	JitterMs int
	// MeanRun is the mean length of a training run. Default 3h.
	MeanRun time.Duration
	// MissRate is the probability that a scrape is missed. Default 0.0005.
	// Use a negative value for none.
	MissRate float64
	// NoStaleMarkers, when set, omits the StaleNaN sample Prometheus writes
	// one interval after a series' last scrape.
	NoStaleMarkers bool
	// Families are the families generated. Default CompactKinds (13 series
	// per GPU); AllKinds is weft-agent's whole set.
	Families []Kind
	// Models are the GPU models of the nodes, cycled node by node. Default
	// H100 only.
	Models []GPUModel
	// MIGNodes is how many nodes (the first ones) run their GPUs as two
	// 3g.40gb MIG devices each. Default 0.
	MIGNodes int
	// Job is the scrape job label. Default "weft-agent".
	Job string
}

// NoJitter as Options.JitterMs puts every timestamp exactly on the grid.
const NoJitter = -1

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{
		Seed:        1,
		Nodes:       2,
		GPUsPerNode: 8,
		Start:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		Duration:    2 * time.Hour,
		Interval:    15 * time.Second,
		JitterMs:    4,
		MeanRun:     3 * time.Hour,
		MissRate:    0.0005,
		Families:    CompactKinds(),
		Models:      []GPUModel{H100},
		Job:         "weft-agent",
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Nodes <= 0 {
		o.Nodes = d.Nodes
	}
	if o.GPUsPerNode <= 0 {
		o.GPUsPerNode = d.GPUsPerNode
	}
	if o.Start == 0 {
		o.Start = d.Start
	}
	if o.Duration <= 0 {
		o.Duration = d.Duration
	}
	if o.Interval < time.Millisecond {
		o.Interval = d.Interval
	}
	switch {
	case o.JitterMs == 0:
		o.JitterMs = d.JitterMs
	case o.JitterMs < 0:
		o.JitterMs = 0
	}
	if o.MeanRun <= 0 {
		o.MeanRun = d.MeanRun
	}
	switch {
	case o.MissRate == 0:
		o.MissRate = d.MissRate
	case o.MissRate < 0:
		o.MissRate = 0
	}
	if len(o.Families) == 0 {
		o.Families = d.Families
	}
	if len(o.Models) == 0 {
		o.Models = d.Models
	}
	if o.Job == "" {
		o.Job = d.Job
	}
	return o
}

// Series is one generated time series: its label set and its samples as two
// parallel columns, timestamps ascending.
type Series struct {
	Labels labels.Labels
	Kind   Kind
	T      []int64
	V      []float64
}

// Generate returns every series of the simulated cluster over the window,
// node by node: the agent's own series first, then run by run, GPU by GPU,
// in family order. The result is a pure function of opts. Safe for
// concurrent use.
func Generate(opts Options) []Series {
	opts = opts.withDefaults()
	slots := int(opts.Duration / opts.Interval)
	var out []Series
	for node := 0; node < opts.Nodes; node++ {
		out = append(out, simulateNode(opts, node, slots)...)
	}
	return out
}

var (
	models     = []string{"llama-3-70b", "llama-3-8b", "mixtral-8x7b", "gpt-neox-20b", "vit-h-14", "whisper-large-v3"}
	namespaces = []string{"llm-pretrain", "llm-finetune", "vision", "speech", "research"}
)

// run is one training job occupying a whole node.
type run struct {
	id, model, namespace, pod string
	seq                       int
	slots                     int     // scrapes the run lasts
	warm                      int     // loading phase, scrapes
	level                     float64 // utilization plateau while training
	tensor                    float64 // tensor pipe activity while training
	fb                        float64 // framebuffer footprint, MiB
	evalEvery, ckptEvery      int
}

func newRun(rng *rand.Rand, opts Options, node, seq int) run {
	model := models[rng.IntN(len(models))]
	id := fmt.Sprintf("run-%08x", rng.Uint32())
	meanSlots := float64(opts.MeanRun / opts.Interval)
	return run{
		id:        id,
		seq:       seq,
		model:     model,
		namespace: namespaces[rng.IntN(len(namespaces))],
		pod:       fmt.Sprintf("%s-%s-worker-%d", model, id[4:], node),
		slots:     max(80, int(rng.ExpFloat64()*meanSlots)),
		warm:      8 + rng.IntN(12),
		level:     93 + 6*rng.Float64(),
		tensor:    0.30 + 0.25*rng.Float64(),
		fb:        42_000 + 36_000*rng.Float64(),
		evalEvery: 100 + rng.IntN(60),
		ckptEvery: 220 + rng.IntN(40),
	}
}

func (r *run) phase(rng *rand.Rand, j int) Phase {
	switch {
	case j < r.warm:
		return PhaseLoading
	case (j-r.warm)%r.ckptEvery >= r.ckptEvery-6:
		return PhaseCheckpoint
	case (j-r.warm)%r.evalEvery >= r.evalEvery-8:
		return PhaseEval
	case rng.Float64() < 0.01:
		return PhaseStall
	}
	return PhaseTraining
}

// seriesSet collects the series of one scope (a run's GPUs, or a node's
// agent) keyed by GPU, family and extra labels, in first-seen order.
type seriesSet struct {
	index map[string]int
	all   []Series
	key   strings.Builder
}

func (s *seriesSet) get(gpu int, k Kind, extra []Label, lbls func() labels.Labels) *Series {
	s.key.Reset()
	s.key.WriteString(strconv.Itoa(gpu))
	s.key.WriteByte(0)
	s.key.WriteString(strconv.Itoa(int(k)))
	for _, l := range extra {
		s.key.WriteByte(0)
		s.key.WriteString(l.Name)
		s.key.WriteByte(0)
		s.key.WriteString(l.Value)
	}
	if i, ok := s.index[s.key.String()]; ok {
		return &s.all[i]
	}
	if s.index == nil {
		s.index = map[string]int{}
	}
	s.index[s.key.String()] = len(s.all)
	s.all = append(s.all, Series{Kind: k, Labels: lbls()})
	return &s.all[len(s.all)-1]
}

func toLabels(ls []Label) labels.Labels {
	b := labels.NewScratchBuilder(len(ls))
	for _, l := range ls {
		b.Add(l.Name, l.Value)
	}
	b.Sort()
	return b.Labels()
}

func simulateNode(opts Options, node, slots int) []Series {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(node)*0x9E3779B97F4A7C15+1))
	interval := opts.Interval.Milliseconds()
	offset := rng.Int64N(interval) // Prometheus spreads targets over the interval
	host := fmt.Sprintf("gpu-node-%03d", node)
	target := []Label{{"instance", fmt.Sprintf("10.2.%d.%d:9400", node/250, node%250+2)}, {"job", opts.Job}}
	model := opts.Models[node%len(opts.Models)]
	gpus := make([]*Device, opts.GPUsPerNode)
	idents := make([][]Label, opts.GPUsPerNode)
	for i := range gpus {
		gpus[i] = NewDevice(rng, i, model)
		idents[i] = gpus[i].IdentityLabels(host)
		if node < opts.MIGNodes {
			gpus[i].EnableMIG(2, "3g.40gb")
		}
	}
	agent := newHostSim(opts.Seed, node)
	hostSet := &seriesSet{}
	slotTime := func(k int) int64 { return opts.Start + offset + int64(k)*interval }

	var out []Series
	k := 0
	// A third of the nodes are busy when the window opens.
	if rng.Float64() > 0.33 {
		k = rng.IntN(20)
	}
	for seq := 0; k < slots; seq++ {
		r := newRun(rng, opts, node, seq)
		ctx := []Label{{"container", "trainer"}, {"model", r.model}, {"namespace", r.namespace}, {"pod", r.pod}, {"run_id", r.id}}
		set := &seriesSet{}
		lastT := slotTime(k)
		for j := 0; j < r.slots && k < slots; j, k = j+1, k+1 {
			t := slotTime(k) + jitter(rng, opts.JitterMs)
			ph := r.phase(rng, j)
			missed := rng.Float64() < opts.MissRate
			if !missed {
				agent.scrape(opts.Families, hostSet, t, host, target)
			}
			for g, d := range gpus {
				a := Activity{Phase: ph, Step: j, Warm: r.warm, Level: r.level, Tensor: r.tensor, FBMiB: r.fb,
					PID: 4000 + 97*r.seq + g}
				reading := d.Step(rng, t-lastT, a, Faults{})
				if missed {
					continue
				}
				EmitGPU(opts.Families, reading, EmitterFunc(func(kd Kind, v float64, extra []Label) {
					s := set.get(g, kd, extra, func() labels.Labels {
						return toLabels(SeriesLabels(kd.MetricName(), idents[g], ctx, extra, target))
					})
					s.T = append(s.T, t)
					s.V = append(s.V, v)
				}))
			}
			lastT = t
		}
		if !opts.NoStaleMarkers && k < slots {
			t := slotTime(k) + jitter(rng, opts.JitterMs)
			for i := range set.all {
				set.all[i].T = append(set.all[i].T, t)
				set.all[i].V = append(set.all[i].V, math.Float64frombits(value.StaleNaN))
			}
		}
		for _, s := range set.all {
			if len(s.T) > 0 {
				out = append(out, s)
			}
		}
		// Idle gap until the scheduler places the next job: 2-20 minutes.
		gap := int((2*time.Minute + time.Duration(rng.ExpFloat64()*float64(6*time.Minute))) / opts.Interval)
		gap = min(gap, int(20*time.Minute/opts.Interval))
		for _, d := range gpus {
			d.Idle(rng, int64(gap)*interval)
		}
		k += max(gap, 1)
	}
	return append(hostSet.all, out...)
}

// hostSim is a node's agent: its NVML health and its queue, from its own
// random stream (so adding its families changes no GPU value).
type hostSim struct {
	rng   *rand.Rand
	h     HostReading
	flaky bool // one NVML call on this node fails now and then
}

func newHostSim(seed uint64, node int) *hostSim {
	s := &hostSim{rng: rand.New(rand.NewPCG(seed^0x6a09e667f3bcc908, uint64(node)))}
	s.h = HostReading{NVMLUp: 1, Queue: true, Loki: true}
	s.flaky = s.rng.Float64() < 0.3
	if s.flaky {
		s.h.Errors = []CallErrors{NewCallErrors("GetProcessUtilization")}
	}
	return s
}

func (s *hostSim) scrape(kinds []Kind, set *seriesSet, t int64, host string, target []Label) {
	h := &s.h
	h.QueueBytes = math.Round(2048 + 1024*s.rng.Float64())
	if s.flaky && s.rng.Float64() < 0.01 {
		h.Errors[0].Count++
	}
	if s.rng.Float64() < 0.0005 {
		h.SendFailures++
	}
	EmitHost(kinds, h, EmitterFunc(func(kd Kind, v float64, extra []Label) {
		sr := set.get(-1, kd, extra, func() labels.Labels {
			var hl []Label
			if kd.Family().HostLabel {
				hl = HostLabels(host)
			}
			return toLabels(SeriesLabels(kd.MetricName(), hl, extra, target))
		})
		sr.T = append(sr.T, t)
		sr.V = append(sr.V, v)
	}))
}

// jitter is the scrape's deviation from its slot: roughly normal, ±max ms.
func jitter(rng *rand.Rand, maxMs int) int64 {
	if maxMs == 0 {
		return 0
	}
	j := math.Round(rng.NormFloat64() * float64(maxMs) / 2)
	return int64(math.Max(-float64(maxMs), math.Min(float64(maxMs), j)))
}
