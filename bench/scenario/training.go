package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// Training metric names (docs/scenarios.md): what a PyTorch job's exporter
// reports per rank. The rule pack and the investigation rely on them.
const (
	MetricStep        = "training_step_total"
	MetricSamples     = "training_samples_total"
	MetricLoss        = "training_loss"
	MetricGradNorm    = "training_grad_norm"
	MetricStepSeconds = "training_step_duration_seconds"
	MetricCompute     = "training_step_compute_seconds"
	MetricDataWait    = "training_data_wait_seconds"
	MetricCheckpoint  = "training_checkpoint_last_success_timestamp_seconds"
)

var trainMetrics = []struct {
	name string
	typ  MetricType
}{
	{MetricStep, Counter}, {MetricSamples, Counter}, {MetricLoss, Gauge}, {MetricGradNorm, Gauge},
	{MetricStepSeconds, Gauge}, {MetricCompute, Gauge}, {MetricDataWait, Gauge}, {MetricCheckpoint, Gauge},
}

// Shares of a healthy step: compute (forward, backward, optimizer), the
// data loader's wait, and the exposed all-reduce.
const (
	computeShare = 0.78
	dataShare    = 0.04
	commShare    = 0.18
	// ncclTimeout is PyTorch's default collective timeout.
	ncclTimeout = 10 * time.Minute
	// nvlinkTrainGBps is a rank's NVLink traffic at the healthy step rate.
	nvlinkTrainGBps = 240
)

type runState uint8

const (
	runPending runState = iota
	runRunning
	runDone
)

// trainRun is one data-parallel training job: one rank per GPU slot, in
// rank order; every rank waits for the slowest at each step's all-reduce.
type trainRun struct {
	id, model, team, dataset, namespace string
	slots                               []*slot
	ranks                               []*rank
	rng                                 *rand.Rand
	startAt, endAt                      int64 // ms; endAt 0: past the window
	readsExport                         bool  // reads the shared dataset export
	bytesPerStep                        float64
	state                               runState
	baseStep                            float64 // healthy step time, s
	batch                               int     // samples per rank per step
	level, tensor, fb                   float64
	step, lossInf, lossA, tau           float64
	lastT                               int64
	elapsed                             float64 // s running
	ckptEvery, ckptDur, nextCkpt        float64 // s of elapsed
	ckptUntil                           int64   // ms; a checkpoint is being written until then
	ckptTS                              float64 // last successful checkpoint, unix s
	traceEvery, nextTrace               float64
	seq                                 int // NCCL collective sequence number
	logEvery                            int
	placedAt                            int64
	pcieRx, pcieTx                      float64 // host-device traffic of a data-heavy job, MB/s (0: a trainer's)

	// Conditions a scenario sets; advance reads them.
	stallAt      int64     // collectives hang from then on (0: never)
	nextWatchdog int64     // next watchdog timeout, ms
	slow         []float64 // extra compute factor per rank (1: none)
	extraWait    []float64 // extra data wait per rank, s
	killRank     int       // rank whose process dies at killAt (-1: none)
	killAt       int64
	killMsg      string
	teardownAt   int64 // the launcher kills every rank then
	stepT        float64
	computeT     []float64
	waitT        []float64
}

// rank is one process of a run.
type rank struct {
	idx    int
	slot   *slot
	pod    string
	series [8]*Series
	stream *Stream
	res    int // trace resource
	offset int64
	dead   bool
	warned int64 // last data-loader warning, ms
}

// newRun declares a run on slots (rank order) of a model; it starts at
// startAt (0: the window's start).
func (w *world) newRun(id, model, team, dataset string, slots []*slot, baseStep float64, startAt int64) *trainRun {
	r := &trainRun{
		id: id, model: model, team: team, dataset: dataset, namespace: team, slots: slots,
		rng: w.rand(uint64(0x7a1 + len(w.runs))), startAt: max(startAt, w.start), baseStep: baseStep,
		killRank: -1, ckptEvery: 1800, ckptDur: 70, traceEvery: 120, logEvery: 50,
	}
	r.batch = 4 + 4*r.rng.IntN(3)
	r.level = 95 + 3*r.rng.Float64()
	r.tensor = 0.38 + 0.2*r.rng.Float64()
	r.fb = 62_000 + 14_000*r.rng.Float64()
	r.step = float64(2000 + r.rng.IntN(38000))
	r.lossInf, r.lossA, r.tau = 1.55+0.4*r.rng.Float64(), 2.5+r.rng.Float64(), 9000+6000*r.rng.Float64()
	r.nextCkpt = 300 + r.rng.Float64()*(r.ckptEvery-300)
	r.nextTrace = r.rng.Float64() * r.traceEvery
	r.seq = int(r.step) * 3
	r.slow = make([]float64, len(slots))
	r.extraWait = make([]float64, len(slots))
	r.computeT = make([]float64, len(slots))
	r.waitT = make([]float64, len(slots))
	for i := range r.slow {
		r.slow[i] = 1
	}
	r.bytesPerStep = 40e6
	w.runs = append(w.runs, r)
	return r
}

func (r *trainRun) gpusPerNode() int {
	n := 0
	for _, s := range r.slots {
		if s.n == r.slots[0].n {
			n++
		}
	}
	return n
}

// begin places the run's ranks and creates their series and log streams.
func (r *trainRun) begin(w *world, t int64) {
	r.state, r.lastT, r.placedAt = runRunning, t, t
	per := r.gpusPerNode()
	for i, s := range r.slots {
		rk := &rank{idx: i, slot: s, pod: fmt.Sprintf("%s-worker-%d", r.id, i/per), offset: r.rng.Int64N(w.iv)}
		ctx := []Label{{Name: "container", Value: "trainer"}, {Name: "dataset", Value: r.dataset}, {Name: "local_rank", Value: strconv.Itoa(i % per)},
			{Name: "model", Value: r.model}, {Name: "namespace", Value: r.namespace}, {Name: "pod", Value: rk.pod}, {Name: "rank", Value: strconv.Itoa(i)}, {Name: "run_id", Value: r.id}, {Name: "team", Value: r.team}}
		s.place(t, ctx)
		lbl := []Label{{Name: "Hostname", Value: s.n.name}, {Name: "instance", Value: fmt.Sprintf("%s:%d", rk.pod, 9090+i%per)}, {Name: "job", Value: "trainer"},
			{Name: "local_rank", Value: strconv.Itoa(i % per)}, {Name: "model", Value: r.model}, {Name: "namespace", Value: r.namespace}, {Name: "node", Value: s.n.name},
			{Name: "pod", Value: rk.pod}, {Name: "rank", Value: strconv.Itoa(i)}, {Name: "run_id", Value: r.id}, {Name: "team", Value: r.team}}
		for m, tm := range trainMetrics {
			rk.series[m] = w.newSeries(tm.name, tm.typ, lbl)
		}
		rk.stream = w.newStream(Label{Name: "container", Value: "trainer"}, Label{Name: "job", Value: "trainer"}, Label{Name: "namespace", Value: r.namespace},
			Label{Name: "node", Value: s.n.name}, Label{Name: "pod", Value: rk.pod}, Label{Name: "rank", Value: strconv.Itoa(i)}, Label{Name: "run_id", Value: r.id}, Label{Name: "team", Value: r.team})
		rk.res = w.newResource(Label{Name: "service.name", Value: "trainer"}, Label{Name: "service.instance.id", Value: fmt.Sprintf("%s/%d", rk.pod, i%per)},
			Label{Name: "host.name", Value: s.n.name}, Label{Name: "k8s.namespace.name", Value: r.namespace}, Label{Name: "k8s.pod.name", Value: rk.pod},
			Label{Name: "k8s.node.name", Value: s.n.name}, Label{Name: "ai.run.id", Value: r.id}, Label{Name: "ai.rank", Value: strconv.Itoa(i)},
			Label{Name: "ai.team", Value: r.team}, Label{Name: "ai.model.name", Value: r.model}, Label{Name: "gpu.uuid", Value: s.dev.UUID})
		if r.readsExport {
			w.mount(s.n)
		}
		r.ranks = append(r.ranks, rk)
	}
	r.ckptTS = float64(t)/1000 - r.rng.Float64()*r.ckptEvery*0.8
	r.log(w, 0, t, "INFO", fmt.Sprintf("starting training: world_size=%d model=%s dataset=%s resume_step=%d", len(r.slots), r.model, r.dataset, int(r.step)))
}

// end stops every rank at t: series end, GPUs go idle.
func (r *trainRun) end(w *world, t int64, why string) {
	for _, rk := range r.ranks {
		if !rk.dead {
			stale(t+rk.offset, rk.series[:]...)
			rk.dead = true
		}
		if rk.slot.ctx != nil {
			rk.slot.place(t, nil)
		}
	}
	r.state = runDone
	if why != "" {
		r.log(w, 0, t, "ERROR", why)
	}
}

// advance simulates the run over the interval ending at t and records its
// ranks' metrics, logs and traced steps.
func (r *trainRun) advance(w *world, t int64) {
	switch {
	case r.state == runDone || t < r.startAt:
		return
	case r.state == runPending:
		r.begin(w, t)
	case r.endAt > 0 && t >= r.endAt:
		r.log(w, 0, t, "INFO", fmt.Sprintf("training finished at step %d", int(r.step)))
		r.end(w, t, "")
		return
	}
	dt := float64(t-r.lastT) / 1000
	r.lastT = t
	if r.killRank >= 0 && w.at(t, r.killAt) {
		rk := r.ranks[r.killRank]
		rk.dead = true
		r.log(w, rk.idx, r.killAt, "ERROR", r.killMsg)
		stale(t+w.iv+rk.offset, rk.series[:]...)
		if r.stallAt == 0 {
			r.stallAt = r.killAt
		}
	}
	if r.teardownAt > 0 && t >= r.teardownAt {
		r.end(w, t, fmt.Sprintf("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: rank %d (local_rank: %d) exited with exitcode 1; stopping all %d workers", r.killRank, r.killRank%r.gpusPerNode(), len(r.ranks)))
		return
	}
	stalled := r.stallAt > 0 && t >= r.stallAt
	inCkpt := t < r.ckptUntil
	warm := int((t - r.placedAt) / w.iv)
	boost := r.slots[0].dev.Model.BoostClock

	// The step time: every rank waits for the slowest at the all-reduce.
	comp, data, comm := computeShare*r.baseStep, dataShare*r.baseStep, commShare*r.baseStep
	if r.readsExport && w.storageMBps < w.storageFull {
		need := float64(len(r.ranks)) * r.bytesPerStep / 1e6 // MB per step
		// The loader prefetches while the GPUs compute; what the export
		// cannot deliver in a step's compute time is waited for.
		data = math.Max(data, need/w.storageMBps-comp-comm)
	}
	stepT := 0.0
	for i, rk := range r.ranks {
		// Power capping moves clocks a little and costs little (memory-bound
		// phases do not care); a thermal slowdown costs in full.
		f := 1 + 0.15*(boost/math.Max(rk.slot.clock, 1)-1)
		if rk.slot.last != nil && rk.slot.last.ClockReasons&gputelemetry.ReasonHWThermal != 0 {
			f = boost / math.Max(rk.slot.clock, 1)
		}
		f *= r.slow[i]
		r.computeT[i] = comp * f * (1 + 0.01*r.rng.NormFloat64())
		r.waitT[i] = data + r.extraWait[i]
		stepT = math.Max(stepT, r.computeT[i]+r.waitT[i])
	}
	stepT += comm
	r.stepT = stepT
	prev := r.step
	switch {
	case stalled, inCkpt, warm < 4:
	default:
		r.step += dt / stepT
		r.elapsed += dt
	}

	// What each GPU does in the interval.
	for i, rk := range r.ranks {
		if rk.dead {
			continue
		}
		a := gputelemetry.Activity{Phase: gputelemetry.PhaseTraining, Step: warm + 2, Warm: 4, Level: r.level, Tensor: r.tensor, FBMiB: r.fb, PID: 3000 + 17*i}
		switch {
		case warm < 4:
			a.Phase = gputelemetry.PhaseLoading
		case stalled:
			a.Phase = gputelemetry.PhaseSpin
		case inCkpt:
			a.Phase = gputelemetry.PhaseCheckpoint
		default:
			// Waiting for data leaves the GPU idle; waiting for the slowest
			// peer happens inside NCCL's all-reduce kernels (busy, cool).
			a.Starved = r.waitT[i] / stepT
			a.Spin = math.Max(0, 1-(r.computeT[i]+r.waitT[i])/stepT)
			a.NVLinkGBps = nvlinkTrainGBps * r.baseStep / stepT
			a.PCIeRxMBps = 1200 * r.baseStep / stepT
			a.PCIeTxMBps = 350 * r.baseStep / stepT
			if r.pcieRx > 0 {
				a.PCIeRxMBps, a.PCIeTxMBps = r.pcieRx, r.pcieTx
			}
		}
		rk.slot.act = a
		if r.readsExport && !stalled && !inCkpt {
			rk.slot.n.nfsDem += r.bytesPerStep / stepT
		}
	}

	if !stalled && !inCkpt && warm >= 4 {
		r.progressLogs(w, t, prev)
		r.checkpoints(w, t)
		r.traceStep(w, t)
		r.loaderWarnings(w, t)
	} else if inCkpt && t+w.iv >= r.ckptUntil {
		r.ckptTS = float64(r.ckptUntil) / 1000
		r.log(w, 0, r.ckptUntil, "INFO", fmt.Sprintf("Saved checkpoint step_%07d to s3://checkpoints/%s/step_%07d in %.1fs", int(r.step), r.id, int(r.step), r.ckptDur))
	}
	if stalled {
		r.watchdog(w, t)
	}
	r.scrape(w, t)
}

func (r *trainRun) lossAt(step float64) float64 {
	return r.lossInf + r.lossA*math.Exp(-step/r.tau)
}

// scrape records every live rank's exporter at t.
func (r *trainRun) scrape(w *world, t int64) {
	loss := r.lossAt(r.step) + 0.015*r.rng.NormFloat64()
	grad := 0.35 + 0.5*math.Exp(-r.step/r.tau) + math.Abs(0.05*r.rng.NormFloat64())
	if r.rng.Float64() < 0.004 {
		grad *= 3 + 4*r.rng.Float64() // a spike now and then
	}
	step := math.Floor(r.step)
	for i, rk := range r.ranks {
		if rk.dead {
			continue
		}
		ts := t + rk.offset
		vals := [8]float64{step, step * float64(r.batch), round(loss, 4), round(grad, 4),
			round(r.stepT*(1+0.004*r.rng.NormFloat64()), 4), round(r.computeT[i], 4), round(r.waitT[i], 4), round(r.ckptTS, 3)}
		for m, s := range rk.series {
			s.add(ts, vals[m])
		}
	}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// log writes a line to rank i's stream at ts (ms), JSON as the trainer's
// structured logger writes it.
func (r *trainRun) log(w *world, i int, ts int64, level, msg string, meta ...Label) {
	if i >= len(r.ranks) {
		return
	}
	rk := r.ranks[i]
	ns := ts*1e6 + int64(r.rng.IntN(1e6))
	line := fmt.Sprintf(`{"ts":%q,"level":%q,"logger":"trainer","run_id":%q,"rank":%d,"msg":%q}`,
		time.Unix(0, ns).UTC().Format(time.RFC3339Nano), level, r.id, i, msg)
	rk.stream.Entries = append(rk.stream.Entries, Entry{T: ns, Line: line, Meta: meta})
}

// progressLogs: rank 0 logs every logEvery steps crossed in the interval.
func (r *trainRun) progressLogs(w *world, t int64, prev float64) {
	for s := (int(prev)/r.logEvery + 1) * r.logEvery; float64(s) <= r.step; s += r.logEvery {
		at := t - int64((r.step-float64(s))*r.stepT*1000)
		sps := float64(r.batch*len(r.ranks)) / r.stepT
		r.log(w, 0, at, "INFO", fmt.Sprintf("step=%d loss=%.4f grad_norm=%.3f lr=%.2e samples_per_s=%.1f step_time_s=%.3f",
			s, r.lossAt(float64(s))+0.01*r.rng.NormFloat64(), 0.35+0.5*math.Exp(-float64(s)/r.tau), 1.5e-4*math.Exp(-float64(s)/2e5), sps, r.stepT))
	}
}

// checkpoints starts a checkpoint when one is due.
func (r *trainRun) checkpoints(w *world, t int64) {
	if r.elapsed < r.nextCkpt {
		return
	}
	r.nextCkpt += r.ckptEvery
	r.ckptDur = 60 + 25*r.rng.Float64()
	r.ckptUntil = t + int64(r.ckptDur*1000)
	r.log(w, 0, t, "INFO", fmt.Sprintf("Saving checkpoint step_%07d to s3://checkpoints/%s/step_%07d", int(r.step), r.id, int(r.step)))
}

// loaderWarnings: a rank waiting more than a second per step for its input
// says so, at most once a minute.
func (r *trainRun) loaderWarnings(w *world, t int64) {
	for i, rk := range r.ranks {
		if rk.dead || r.waitT[i] < 1 || t-rk.warned < time.Minute.Milliseconds() {
			continue
		}
		rk.warned = t
		src := "local NVMe"
		if r.readsExport {
			src = datasetExport
		}
		r.log(w, i, t-r.rng.Int64N(w.iv), "WARNING", fmt.Sprintf("DataLoader: input pipeline stalled, waited %.2fs for batch %d (prefetch queue empty, reading %s)", r.waitT[i], int(r.step), src))
		w.ev.seen("loader_warning/"+r.id, t)
	}
}

// watchdog: every collective that hangs times out after ncclTimeout on
// every rank still alive, and the step is retried (and hangs again). Each
// timed-out step is traced, and the watchdog lines carry its trace ID.
func (r *trainRun) watchdog(w *world, t int64) {
	if r.nextWatchdog == 0 {
		r.nextWatchdog = r.stallAt + ncclTimeout.Milliseconds()
	}
	for r.nextWatchdog < t+w.iv {
		at := r.nextWatchdog
		hung := r.traceHung(w, at-ncclTimeout.Milliseconds())
		for i, rk := range r.ranks {
			if rk.dead {
				continue
			}
			ts := at + r.rng.Int64N(1500)
			ran := ncclTimeout.Milliseconds() + (ts - at)
			stamp := time.UnixMilli(ts).UTC()
			line := fmt.Sprintf("[rank%d]:[E%s ProcessGroupNCCL.cpp:632] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=%d) ran for %d milliseconds before timing out.",
				i, stamp.Format("0102 15:04:05.000000"), i, r.seq, ncclTimeout.Milliseconds(), ran)
			rk.stream.Entries = append(rk.stream.Entries, Entry{T: ts * 1e6, Line: line, Meta: []Label{{Name: "trace_id", Value: hexID(hung[:])}}})
		}
		w.ev.seen("watchdog/"+r.id, at)
		r.seq++
		r.nextWatchdog += ncclTimeout.Milliseconds()
	}
}
