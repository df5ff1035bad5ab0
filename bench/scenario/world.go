package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// gpuKinds are the GPU families every agent sends: weft-agent's default
// set plus its violation-time and XID counters (the thermal and XID
// scenarios need them).
var gpuKinds = append(gputelemetry.DefaultKinds(),
	gputelemetry.MustKinds("weft_gpu_clock_event_seconds_total", "weft_gpu_xid_errors_total")...)

// hostKinds are the agent's own families (it is scraped, and pushes its
// GPU events to Loki).
var hostKinds = gputelemetry.MustKinds("gpu_agent_nvml_up", "gpu_agent_loki_push_failures_total")

// world is the simulated cluster of one scenario: GPU nodes with their
// agents, training runs and inference services, stepped one scrape
// interval at a time. Single-goroutine.
type world struct {
	o                        Options
	start, end, onset, iv    int64 // ms
	seed                     uint64
	nodes                    []*node
	runs                     []*trainRun
	services                 []*service
	hooks                    []func(t int64) // scenario conditions, run first at every step
	observers                []func(s *slot, r *gputelemetry.Reading, ts int64)
	data                     *Data
	ev                       evidenceLog
	ids                      *rand.Rand // trace and span ids
	storageMBps, storageFull float64    // the shared dataset export's throughput now, and healthy
	deployer                 *Stream    // the rollout controller's log
	now                      int64      // the step being simulated, ms
}

func newWorld(name string, o Options) *world {
	w := &world{
		o: o, seed: uint64(o.Seed),
		start: o.Start.UnixMilli(), end: o.Start.Add(o.Duration).UnixMilli(),
		onset: o.Start.Add(o.Onset).UnixMilli(), iv: o.Interval.Milliseconds(),
		data: &Data{Name: name, Options: o}, ev: evidenceLog{},
		storageFull: 12_000,
	}
	w.storageMBps = w.storageFull
	w.now = w.start
	w.ids = w.rand(0x1d5)
	return w
}

// rand returns a generator for one entity of the world: a pure function
// of the seed and the entity's number.
func (w *world) rand(entity uint64) *rand.Rand {
	return rand.New(rand.NewPCG(w.seed, entity*0x9E3779B97F4A7C15+0x5ce))
}

func (w *world) traceID() (id TraceID) {
	for i := range id {
		id[i] = byte(w.ids.Uint32())
	}
	return id
}

func (w *world) spanID() (id SpanID) {
	for i := range id {
		id[i] = byte(w.ids.Uint32())
	}
	return id
}

// newSeries registers a series; labels are merged and sorted. Its columns
// are sized for a sample per scrape until the window ends.
func (w *world) newSeries(name string, typ MetricType, groups ...[]Label) *Series {
	n := int((w.end-w.now)/w.iv) + 2
	s := &Series{Labels: gputelemetry.SeriesLabels(name, groups...), Type: typ, T: make([]int64, 0, n), V: make([]float64, 0, n)}
	w.data.Series = append(w.data.Series, s)
	return s
}

// newStream registers a Loki stream.
func (w *world) newStream(labels ...Label) *Stream {
	s := &Stream{Via: Loki, Labels: gputelemetry.SeriesLabels("", labels)}
	w.data.Streams = append(w.data.Streams, s)
	return s
}

// newOTLPStream registers an OTLP log stream of one resource.
func (w *world) newOTLPStream(scope string, resource ...Label) *Stream {
	s := &Stream{Via: OTLP, Resource: resource, Scope: scope}
	w.data.Streams = append(w.data.Streams, s)
	return s
}

func (w *world) newResource(attrs ...Label) int {
	w.data.Resources = append(w.data.Resources, attrs)
	return len(w.data.Resources) - 1
}

// stale ends series with a staleness marker at t.
func stale(t int64, ss ...*Series) {
	for _, s := range ss {
		if s != nil && len(s.T) > 0 && math.Float64bits(s.V[len(s.V)-1]) != staleNaN && s.T[len(s.T)-1] < t {
			s.add(t, math.Float64frombits(staleNaN))
		}
	}
}

// run steps the world over the window.
func (w *world) run() {
	for t := w.start; t < w.end; t += w.iv {
		w.now = t
		for _, h := range w.hooks {
			h(t)
		}
		for _, r := range w.runs {
			r.advance(w, t)
		}
		for _, s := range w.services {
			s.advance(w, t)
		}
		for _, n := range w.nodes {
			n.scrape(w, t)
		}
	}
}

// node is one GPU host: its agent (scraped as job weft-agent), its
// node-exporter figures, its kernel log.
type node struct {
	name   string
	idx    int
	rng    *rand.Rand
	offset int64 // scrape offset within the interval, ms
	gpus   []*slot
	host   gputelemetry.HostReading
	agent  []Label // job, instance of the agent's scrape
	hostS  map[seriesKey]*Series
	load1  *Series
	nfs    *Series // bytes read from the dataset export, when the node mounts it
	nfsB   float64
	nfsDem float64 // bytes/s the node's workloads asked of the export this interval
	kmsg   *Stream
	lastT  int64
	cpu    float64            // load average
	events map[string]*Stream // weft-agent's event streams, by GPU and XID
}

// slot is one GPU and the workload placed on it.
type slot struct {
	n      *node
	dev    *gputelemetry.Device
	ident  []Label
	ctx    []Label // workload context of the current placement; nil when idle
	act    gputelemetry.Activity
	faults gputelemetry.Faults
	series map[seriesKey]*Series
	order  []keyed // series in emission order: the common case needs no map lookup
	em     slotEmitter
	last   *gputelemetry.Reading
	clock  float64 // SM clock of the last reading
}

type seriesKey struct {
	kind  gputelemetry.Kind
	extra *Label // the family's shared label slice identifies the series
}

type keyed struct {
	key seriesKey
	s   *Series
}

func (w *world) addNode() *node {
	idx := len(w.nodes) + 1
	n := &node{name: fmt.Sprintf("node-%d", idx), idx: idx, rng: w.rand(uint64(1000 + idx))}
	n.offset = n.rng.Int64N(w.iv)
	n.agent = []Label{{Name: "instance", Value: n.name + ":9400"}, {Name: "job", Value: "weft-agent"}}
	n.host = gputelemetry.HostReading{NVMLUp: 1, Loki: true}
	n.hostS = map[seriesKey]*Series{}
	n.events = map[string]*Stream{}
	for i := 0; i < 8; i++ {
		d := gputelemetry.NewDevice(n.rng, i, gputelemetry.H100)
		d.RandomFaults = false
		s := &slot{n: n, dev: d, ident: d.IdentityLabels(n.name), series: map[seriesKey]*Series{}, clock: d.Model.BoostClock}
		s.act = gputelemetry.Activity{Phase: gputelemetry.PhaseIdle}
		n.gpus = append(n.gpus, s)
	}
	nodeLabels := []Label{{Name: "instance", Value: n.name + ":9100"}, {Name: "job", Value: "node-exporter"}, {Name: "node", Value: n.name}}
	n.load1 = w.newSeries("node_load1", Gauge, nodeLabels)
	n.kmsg = w.newStream(Label{Name: "host", Value: n.name}, Label{Name: "job", Value: "kmsg"}, Label{Name: "node", Value: n.name}, Label{Name: "source", Value: "kmsg"})
	n.cpu = 6 + 4*n.rng.Float64()
	w.nodes = append(w.nodes, n)
	return n
}

// mount makes the node read the shared dataset export (its node-exporter
// then reports the NFS client counters).
func (w *world) mount(n *node) {
	if n.nfs == nil {
		n.nfs = w.newSeries("node_mountstats_nfs_read_bytes_total", Counter,
			[]Label{{Name: "export", Value: datasetExport}, {Name: "instance", Value: n.name + ":9100"}, {Name: "job", Value: "node-exporter"}, {Name: "mountaddress", Value: "10.40.0.12"}, {Name: "node", Value: n.name}, {Name: "protocol", Value: "tcp"}})
		n.nfsB = float64(n.rng.Int64N(1 << 44))
	}
}

// datasetExport is the shared storage the big training runs read.
const datasetExport = "storage-01:/datasets"

// place puts a workload with context ctx on the slot (nil: idle). The
// series of the previous placement end.
func (s *slot) place(t int64, ctx []Label) {
	for _, sr := range s.series {
		stale(t, sr)
	}
	s.series = map[seriesKey]*Series{}
	s.order = s.order[:0]
	s.ctx = ctx
	if ctx == nil {
		s.act = gputelemetry.Activity{Phase: gputelemetry.PhaseIdle}
	}
}

// slotEmitter files a GPU reading's samples into the slot's series. The
// families emit in the same order at every scrape, so the series of the
// i-th sample is found by position; the map is the fallback.
type slotEmitter struct {
	w  *world
	s  *slot
	ts int64
	i  int
}

func (e *slotEmitter) Emit(k gputelemetry.Kind, v float64, extra []Label) {
	s := e.s
	key := seriesKey{kind: k}
	if len(extra) > 0 {
		key.extra = &extra[0]
	}
	i := e.i
	e.i++
	if i < len(s.order) && s.order[i].key == key {
		s.order[i].s.add(e.ts, v)
		return
	}
	sr := s.series[key]
	if sr == nil {
		typ := Gauge
		if k.IsCounter() {
			typ = Counter
		}
		sr = e.w.newSeries(k.MetricName(), typ, s.ident, s.ctx, extra, s.n.agent)
		s.series[key] = sr
	}
	if i < len(s.order) {
		s.order[i] = keyed{key, sr}
	} else {
		s.order = append(s.order, keyed{key, sr})
	}
	sr.add(e.ts, v)
}

// scrape is one collection of the node's agent and node exporter at t.
func (n *node) scrape(w *world, t int64) {
	ts := t + n.offset + n.rng.Int64N(7) - 3
	dt := w.iv
	if n.lastT != 0 {
		dt = ts - n.lastT
	}
	n.lastT = ts
	for _, s := range n.gpus {
		r := s.dev.Step(n.rng, dt, s.act, s.faults)
		s.last = r
		s.clock = r.SMClock
		for _, o := range w.observers {
			o(s, r, ts)
		}
		s.faults = gputelemetry.Faults{}
		s.em = slotEmitter{w: w, s: s, ts: ts}
		gputelemetry.EmitGPU(gpuKinds, r, &s.em)
		if r.Failed {
			// The agent now reports only gpu_agent_gpu_failed for it.
			for key, sr := range s.series {
				if key.kind.MetricName() != gputelemetry.FamilyGPUFailed {
					stale(ts, sr)
				}
			}
		}
	}
	gputelemetry.EmitHost(hostKinds, &n.host, gputelemetry.EmitterFunc(func(k gputelemetry.Kind, v float64, extra []Label) {
		key := seriesKey{kind: k}
		sr := n.hostS[key]
		if sr == nil {
			typ := Gauge
			if k.IsCounter() {
				typ = Counter
			}
			var hl []Label
			if k.Family().HostLabel {
				hl = gputelemetry.HostLabels(n.name)
			}
			sr = w.newSeries(k.MetricName(), typ, hl, extra, n.agent)
			n.hostS[key] = sr
		}
		sr.add(ts, v)
	}))
	n.cpu += (7-n.cpu)*0.05 + n.rng.NormFloat64()*0.3
	n.load1.add(ts, math.Round(math.Max(0.1, n.cpu)*100)/100)
	if n.nfs != nil {
		n.nfsB += math.Round(n.nfsDem * float64(dt) / 1000 * (1 + 0.03*n.rng.NormFloat64()))
		n.nfs.add(ts, n.nfsB)
	}
	n.nfsDem = 0
	// Now and then the kernel says something unrelated.
	if n.rng.Float64() < float64(w.iv)/float64(25*time.Minute.Milliseconds()) {
		n.kernel(ts, benignKernel[n.rng.IntN(len(benignKernel))])
	}
}

var benignKernel = []string{
	"systemd-journald[812]: Data hash table of /var/log/journal/system.journal has a fill level at 75.1 (8533 of 11377 items), suggesting rotation.",
	"IPv6: ADDRCONF(NETDEV_CHANGE): cali4f1c2a3b9e0: link becomes ready",
	"nvidia-persistenced[1422]: device 0000:18:00.0 - persistence mode enabled.",
	"EXT4-fs (nvme0n1p1): re-mounted. Opts: (null). Quota mode: none.",
	"mlx5_core 0000:c1:00.0: mlx5_fw_tracer_handle_traces:829: FW tracer: new trace cycle started",
}

// kernel writes a kernel log line at ts (ms), in dmesg's format.
func (n *node) kernel(ts int64, msg string) {
	n.kmsg.Entries = append(n.kmsg.Entries, Entry{T: ts*1e6 + int64(n.rng.IntN(1e6)), Line: kmsgPrefix(ts) + msg})
}

func kmsgPrefix(ts int64) string {
	sec := float64(ts%(90*86400*1000)) / 1000 // uptime of the node
	return "[" + strconv.FormatFloat(sec, 'f', 6, 64) + "] "
}

// agentEvent is weft-agent's Loki event line for an XID on s, with the
// GPU's labels and workload context split between the stream and
// structured metadata as the agent's pusher splits them.
func (w *world) agentEvent(s *slot, ts int64, xid int, what string) {
	key := s.dev.UUID + "/" + strconv.Itoa(xid)
	st := s.n.events[key]
	labels, meta := gputelemetry.EventStream(gputelemetry.EventLabels("xid", "xid", strconv.Itoa(xid), s.ident, s.ctx))
	if st == nil {
		st = w.newStream(labels...)
		s.n.events[key] = st
	}
	st.Entries = append(st.Entries, Entry{T: ts * 1e6, Line: fmt.Sprintf("XID %d on GPU %d (%s): %s", xid, s.dev.Index, s.dev.UUID, what), Meta: meta})
}

// at reports whether t is the scrape step holding instant x (ms).
func (w *world) at(t, x int64) bool { return x >= t && x < t+w.iv }

func ms(t int64) time.Time { return time.UnixMilli(t).UTC() }
