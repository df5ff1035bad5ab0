package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Payload is one pre-encoded, pre-compressed write request.
type Payload struct {
	Protocol Protocol
	Body     []byte
	Samples  int
	Series   int
	// Lane is the ordered send lane: payloads of one lane are sent in order
	// by one worker, which keeps every series' samples in time order.
	Lane int
}

// Expectation is what a target must answer after a segment was written,
// derived from the generator itself (not from any target).
type Expectation struct {
	// EvalTime (ms) is half a scrape interval after the segment's last
	// scrape: the natural instant for "now" queries about the segment.
	EvalTime int64
	// LastScrape is the nominal time (ms) of the segment's last scrape.
	LastScrape int64
	// ActiveGPUs is the number of series of each GPU metric at EvalTime.
	ActiveGPUs int
	// FBUsedSum is sum(DCGM_FI_DEV_FB_USED) at EvalTime.
	FBUsedSum float64
	// Created is the cumulative number of distinct series per metric name
	// written up to the end of the segment.
	Created map[string]int
	// UtilSamples is the number of DCGM_FI_DEV_GPU_UTIL samples (staleness
	// markers not counted) in the segment itself.
	UtilSamples int
	// Runs is the number of distinct training runs so far; ActiveRuns of
	// them are running at EvalTime.
	Runs, ActiveRuns int
}

// SegmentData is a segment's payloads with what it leaves behind.
type SegmentData struct {
	Protocol   Protocol
	Payloads   []Payload
	Samples    int
	Bytes      int
	FirstScrap int64 // ms, nominal
	Expect     Expectation
}

// Workload is a fully generated, encoded workload. It is immutable after
// Generate returns and safe to replay against any number of targets.
type Workload struct {
	Opts         WorkloadOptions
	Start        int64 // ms of the first scrape
	Nodes        int
	Replicas     int
	ActiveSeries int
	Segments     []*SegmentData
	// Spike is the burst of new series, nil when SpikeSeries is 0.
	Spike       *SegmentData
	SpikeSeries int
	GenTime     time.Duration
}

// TotalSamples is the number of samples over all segments and the spike.
func (w *Workload) TotalSamples() int {
	n := 0
	for _, s := range w.Segments {
		n += s.Samples
	}
	if w.Spike != nil {
		n += w.Spike.Samples
	}
	return n
}

type chunk struct {
	units []unit
	lane  int
}

// generator holds the mutable fleet state while a workload is generated.
type generator struct {
	opts        WorkloadOptions
	rng         *rand.Rand
	nodes       []*gpuNode
	replicas    []*replica
	runs        []*run // FIFO, oldest first
	runSeq      int
	churnBudget float64
	segUtil     int // GPU util samples of the segment being generated
	created     map[string]int
	step        struct {
		fbUsedSum  float64
		activeGPUs int
	}
}

// Generate builds the workload for opts: the fleet, every scrape, and every
// payload encoded and compressed. It is deterministic in opts (Start
// included) and single-threaded.
func Generate(opts WorkloadOptions) (*Workload, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("validate workload options: %w", err)
	}
	began := time.Now()
	iv := opts.ScrapeInterval
	nSteps := int(opts.Duration / iv)
	if opts.Start.IsZero() {
		back := opts.Duration + time.Duration(opts.SpikeSteps)*iv + 2*time.Minute
		opts.Start = time.Now().Add(-back).Truncate(time.Minute)
	}
	g := &generator{opts: opts, rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed)), created: map[string]int{}}
	w := &Workload{Opts: opts, Start: opts.Start.UnixMilli()}

	nNodes := max(1, int(math.Round(0.9*float64(opts.ActiveSeries)/float64(SeriesPerNode))))
	nRep := max(1, int(math.Round(0.1*float64(opts.ActiveSeries)/float64(SeriesPerReplica))))
	for i := range nNodes {
		g.nodes = append(g.nodes, newGPUNode(opts.Seed, i, "node", opts.LabelsPerSeries))
	}
	g.startRuns(g.nodes)
	for i := range nRep {
		g.replicas = append(g.replicas, newReplica(g, i))
	}
	w.Nodes, w.Replicas = nNodes, nRep
	w.ActiveSeries = nNodes*SeriesPerNode + nRep*SeriesPerReplica

	var units []unit
	for _, n := range g.nodes {
		units = append(units, n)
	}
	nodeChunks := chunkUnits(units, SeriesPerNode, opts, 0)
	units = nil // nodeChunks keep the old backing array
	for _, r := range g.replicas {
		units = append(units, r)
	}
	chunks := append(nodeChunks, chunkUnits(units, SeriesPerReplica, opts, len(nodeChunks))...)

	steps := segmentSteps(opts, nSteps)
	step := 0
	for i, seg := range opts.Segments {
		sd := &SegmentData{Protocol: seg.Protocol, FirstScrap: w.Start + int64(step)*iv.Milliseconds()}
		g.segUtil = 0
		end := step + steps[i]
		for step < end {
			bEnd := min(step+opts.SamplesPerSeriesPerRequest, end)
			for ; step < bEnd; step++ {
				t := w.Start + int64(step)*iv.Milliseconds()
				if step > 0 {
					g.rotateRuns(t)
				}
				g.step.fbUsedSum, g.step.activeGPUs = 0, 0
				for _, c := range chunks {
					for _, u := range c.units {
						u.scrape(g, step, t)
					}
				}
			}
			if err := encodeChunks(sd, chunks); err != nil {
				return nil, err
			}
		}
		sd.Expect = g.expect(w.Start + int64(step-1)*iv.Milliseconds())
		w.Segments = append(w.Segments, sd)
	}

	if opts.SpikeSeries > 0 && opts.SpikeSteps > 0 {
		if err := g.spike(w, step); err != nil {
			return nil, err
		}
	}
	w.GenTime = time.Since(began)
	return w, nil
}

// spike adds new nodes running new training runs, all at once, and encodes
// their first SpikeSteps scrapes as the spike segment (remote write 1.0).
func (g *generator) spike(w *Workload, step int) error {
	opts, iv := g.opts, g.opts.ScrapeInterval
	n := (opts.SpikeSeries + SeriesPerNode - 1) / SeriesPerNode
	var nodes []*gpuNode
	var units []unit
	for i := range n {
		nd := newGPUNode(opts.Seed, len(g.nodes)+i, "burst", opts.LabelsPerSeries)
		nodes = append(nodes, nd)
		units = append(units, nd)
	}
	g.startRuns(nodes)
	chunks := chunkUnits(units, SeriesPerNode, opts, 0)
	sd := &SegmentData{Protocol: RW1, FirstScrap: w.Start + int64(step)*iv.Milliseconds()}
	g.segUtil = 0
	end := step + opts.SpikeSteps
	for step < end {
		bEnd := min(step+opts.SamplesPerSeriesPerRequest, end)
		for ; step < bEnd; step++ {
			t := w.Start + int64(step)*iv.Milliseconds()
			g.step.fbUsedSum, g.step.activeGPUs = 0, 0
			for _, u := range units {
				u.scrape(g, step, t)
			}
		}
		if err := encodeChunks(sd, chunks); err != nil {
			return err
		}
	}
	sd.Expect = g.expect(w.Start + int64(step-1)*iv.Milliseconds())
	w.Spike, w.SpikeSeries = sd, n*SeriesPerNode
	return nil
}

// startRuns partitions nodes into new training runs of runSizes nodes.
func (g *generator) startRuns(nodes []*gpuNode) {
	for i := 0; i < len(nodes); {
		sz := min(runSizes[g.rng.IntN(len(runSizes))], len(nodes)-i)
		g.newRun(nodes[i:i+sz:i+sz], -1)
		i += sz
	}
}

func (g *generator) expect(last int64) Expectation {
	c := make(map[string]int, len(g.created))
	for k, v := range g.created {
		c[k] = v
	}
	return Expectation{
		EvalTime:    last + g.opts.ScrapeInterval.Milliseconds()/2,
		LastScrape:  last,
		ActiveGPUs:  g.step.activeGPUs,
		FBUsedSum:   g.step.fbUsedSum,
		Created:     c,
		UtilSamples: g.segUtil,
		Runs:        g.runSeq,
		ActiveRuns:  len(g.runs),
	}
}

// chunkUnits groups units into requests of about SamplesPerRequest samples.
func chunkUnits(units []unit, seriesPerUnit int, opts WorkloadOptions, first int) []chunk {
	per := max(1, opts.SamplesPerRequest/(opts.SamplesPerSeriesPerRequest*seriesPerUnit))
	var out []chunk
	for i := 0; i < len(units); i += per {
		idx := first + len(out)
		out = append(out, chunk{units: units[i:min(i+per, len(units))], lane: idx % opts.Workers})
	}
	return out
}

// segmentSteps splits nSteps scrapes between the segments by share, each a
// whole number of request blocks and at least one scrape.
func segmentSteps(opts WorkloadOptions, nSteps int) []int {
	total := 0.0
	for _, s := range opts.Segments {
		total += s.Share
	}
	k := opts.SamplesPerSeriesPerRequest
	out := make([]int, len(opts.Segments))
	left := nSteps
	for i, s := range opts.Segments {
		if i == len(opts.Segments)-1 {
			out[i] = max(1, left)
			break
		}
		n := int(math.Round(s.Share / total * float64(nSteps) / float64(k)))
		n = max(1, n*k)
		n = min(n, max(1, left-(len(opts.Segments)-1-i)))
		out[i] = n
		left -= n
	}
	return out
}
