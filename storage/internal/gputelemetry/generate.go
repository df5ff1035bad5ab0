package gputelemetry

import (
	"fmt"
	"math"
	"math/rand/v2"
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
// node by node, run by run, then GPU by GPU in Kind order. The result is a
// pure function of opts. Safe for concurrent use.
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
	slots                     int     // scrapes the run lasts
	warm                      int     // loading phase, scrapes
	level                     float64 // utilization plateau while training
	tensor                    float64 // tensor pipe activity while training
	fb                        float64 // framebuffer footprint, MiB
	evalEvery, ckptEvery      int
}

func newRun(rng *rand.Rand, opts Options, node int) run {
	model := models[rng.IntN(len(models))]
	id := fmt.Sprintf("run-%08x", rng.Uint32())
	meanSlots := float64(opts.MeanRun / opts.Interval)
	return run{
		id:        id,
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

type phase int

const (
	phaseLoading phase = iota
	phaseTraining
	phaseEval
	phaseCheckpoint
	phaseStall
)

func (r *run) phase(rng *rand.Rand, j int) phase {
	switch {
	case j < r.warm:
		return phaseLoading
	case (j-r.warm)%r.ckptEvery >= r.ckptEvery-6:
		return phaseCheckpoint
	case (j-r.warm)%r.evalEvery >= r.evalEvery-8:
		return phaseEval
	case rng.Float64() < 0.01:
		return phaseStall
	}
	return phaseTraining
}

func simulateNode(opts Options, node, slots int) []Series {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(node)*0x9E3779B97F4A7C15+1))
	interval := opts.Interval.Milliseconds()
	offset := rng.Int64N(interval) // Prometheus spreads targets over the interval
	host := fmt.Sprintf("gpu-node-%03d", node)
	instance := fmt.Sprintf("10.2.%d.%d:9400", node/250, node%250+2)
	gpus := make([]gpu, opts.GPUsPerNode)
	for i := range gpus {
		gpus[i] = newGPU(rng, i)
	}
	slotTime := func(k int) int64 { return opts.Start + offset + int64(k)*interval }

	var out []Series
	k := 0
	// A third of the nodes are busy when the window opens.
	if rng.Float64() > 0.33 {
		k = rng.IntN(20)
	}
	for k < slots {
		r := newRun(rng, opts, node)
		series := make([]Series, 0, len(gpus)*int(numKinds))
		for g := range gpus {
			for kind := Kind(0); kind < numKinds; kind++ {
				series = append(series, Series{Kind: kind, Labels: labels.FromStrings(
					"__name__", kind.MetricName(),
					"job", "dcgm-exporter",
					"instance", instance,
					"Hostname", host,
					"gpu", fmt.Sprint(g),
					"UUID", gpus[g].uuid,
					"modelName", "NVIDIA H100 80GB HBM3",
					"namespace", r.namespace,
					"pod", r.pod,
					"container", "trainer",
					"run_id", r.id,
					"model", r.model,
				)})
			}
		}
		var vals [numKinds]float64
		lastT := slotTime(k)
		for j := 0; j < r.slots && k < slots; j, k = j+1, k+1 {
			t := slotTime(k) + jitter(rng, opts.JitterMs)
			ph := r.phase(rng, j)
			missed := rng.Float64() < opts.MissRate
			for g := range gpus {
				gpus[g].step(rng, &r, ph, j, t-lastT, &vals)
				if missed {
					continue
				}
				for kind, v := range vals {
					s := &series[g*int(numKinds)+kind]
					s.T = append(s.T, t)
					s.V = append(s.V, v)
				}
			}
			lastT = t
		}
		if !opts.NoStaleMarkers && k < slots {
			t := slotTime(k) + jitter(rng, opts.JitterMs)
			for i := range series {
				series[i].T = append(series[i].T, t)
				series[i].V = append(series[i].V, math.Float64frombits(value.StaleNaN))
			}
		}
		for _, s := range series {
			if len(s.T) > 0 {
				out = append(out, s)
			}
		}
		// Idle gap until the scheduler places the next job: 2-20 minutes.
		gap := int((2*time.Minute + time.Duration(rng.ExpFloat64()*float64(6*time.Minute))) / opts.Interval)
		gap = min(gap, int(20*time.Minute/opts.Interval))
		for g := range gpus {
			gpus[g].idle(rng, int64(gap)*interval)
		}
		k += max(gap, 1)
	}
	return out
}

// jitter is the scrape's deviation from its slot: roughly normal, ±max ms.
func jitter(rng *rand.Rand, maxMs int) int64 {
	if maxMs == 0 {
		return 0
	}
	j := math.Round(rng.NormFloat64() * float64(maxMs) / 2)
	return int64(math.Max(-float64(maxMs), math.Min(float64(maxMs), j)))
}
