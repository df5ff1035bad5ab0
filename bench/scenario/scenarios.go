package scenario

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// scenario injects one incident into the shared world and writes its
// ground truth (the evidence times are filled in after the run, from what
// the simulation observed).
type scenario struct {
	summary string
	inject  func(w *world, b *base) func(ev evidenceLog) GroundTruth
}

var scenarios = map[string]scenario{
	"nvlink-stall":          {"node 6's NVLink degrades to near-zero bandwidth; NCCL all-reduce times out on every step and the 8-node training run stalls, while pods and CPU look fine", nvlinkStall},
	"thermal-straggler":     {"one GPU's cooling fails; it throttles (thermal clock events, SM clock down) and its rank slows the whole run", thermalStraggler},
	"ecc-xid":               {"correctable ECC errors climb on one GPU, then XID 48 (double-bit ECC) and XID 79 (fell off the bus) kill its rank and the run", eccXID},
	"bad-model-version":     {"a model version promoted on one inference service raises its p99 latency and its error rate; the other services stay healthy", badModelVersion},
	"dataloader-starvation": {"the shared dataset export's throughput drops; every GPU of the run waits for data and its utilization falls together: no GPU is at fault", dataloaderStarvation},
	"noisy-neighbour":       {"another team's job on the same node saturates PCIe and host memory bandwidth; the ranks beside it slow their run", noisyNeighbour},
}

// Names returns the scenario names, sorted.
func Names() []string {
	out := make([]string, 0, len(scenarios))
	for k := range scenarios {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Summary returns a scenario's one-line description.
func Summary(name string) string { return scenarios[name].summary }

// Generate builds scenario name over opts: the whole world's telemetry and
// the incident's ground truth. It is a pure function of (name, opts).
func Generate(name string, opts Options) (*Data, error) {
	sc, ok := scenarios[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownScenario, name, strings.Join(Names(), ", "))
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := newWorld(name, o)
	b := w.build()
	truth := sc.inject(w, b)
	w.run()
	decoys := w.data.Truth.Decoys
	w.data.Truth = truth(w.ev)
	w.data.Truth.Scenario, w.data.Truth.Summary, w.data.Truth.Decoys = name, sc.summary, decoys
	slices.SortStableFunc(w.data.Spans, func(a, b Span) int { return cmp.Compare(a.End, b.End) })
	for _, st := range w.data.Streams {
		slices.SortStableFunc(st.Entries, func(a, b Entry) int { return cmp.Compare(a.T, b.T) })
	}
	return w.data, nil
}

// evidence builds an Evidence whose time is the first observation under
// key, or fallback when it was never observed.
func evidence(ev evidenceLog, key string, fallback int64, sig Signal, what, query string) Evidence {
	at, ok := ev[key]
	if !ok {
		at = ms(fallback)
	}
	return Evidence{Signal: sig, What: what, Query: query, At: at}
}

func uuidsOf(slots []*slot) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.dev.UUID
	}
	return out
}

// nvlinkStall: the seeds' story. Node 6's NVLink bandwidth falls at the
// onset, its NVLink error counters climb; 20 s later every rank is stuck
// in the all-reduce (GPUs spin at 100%, no tensor work, no traffic), the
// step counter stops, and every 10 minutes each rank's NCCL watchdog
// times the collective out and the step is retried.
func nvlinkStall(w *world, b *base) func(evidenceLog) GroundTruth {
	r := b.pretrain
	bad := w.nodes[5]
	ranks, uuids, slots := ranksOn(r, bad)
	r.stallAt = w.onset + 20_000
	w.hooks = append(w.hooks, func(t int64) {
		if t < w.onset {
			return
		}
		for _, s := range slots {
			s.faults.NVLinkLoss, s.faults.NVLinkErrors = 0.999, 24
		}
	})
	w.observers = append(w.observers, func(s *slot, _ *gputelemetry.Reading, ts int64) {
		if s.faults.NVLinkLoss > 0 {
			w.ev.seen("nvlink", ts)
		}
		if s.n != bad && get(s.ctx, "run_id") == r.id && s.act.Phase == gputelemetry.PhaseSpin {
			w.ev.seen("peers", ts)
		}
	})
	return func(ev evidenceLog) GroundTruth {
		run := fmt.Sprintf(`run_id=%q`, r.id)
		return GroundTruth{
			Cause: CauseNVLinkDegradation, Onset: ms(w.onset),
			Where:    Where{Nodes: []string{bad.name}, GPUUUIDs: uuids, Ranks: ranks, RunID: r.id, Team: r.team},
			Affected: runWhere(r),
			CauseEvidence: []Evidence{
				evidence(ev, "nvlink", w.onset, Metrics, "NVLink throughput of node-6's GPUs falls to under 1% of their peers'",
					fmt.Sprintf(`sum by (Hostname) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{%s}[2m]))`, run)),
				evidence(ev, "nvlink", w.onset, Metrics, "NVLink replay and CRC errors climb on node-6 only",
					fmt.Sprintf(`sum by (Hostname) (increase(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{%s}[5m]))`, run)),
			},
			Symptoms: []Evidence{
				evidence(ev, "peers", r.stallAt, Metrics, "every other GPU of the run stops NVLink traffic and spins: utilization 100%, power low",
					fmt.Sprintf(`avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{%s})`, run)),
				evidence(ev, "peers", r.stallAt, Metrics, "the step counter stops on every rank",
					fmt.Sprintf(`sum(rate(%s{%s}[5m]))`, MetricStep, run)),
				evidence(ev, "watchdog/"+r.id, r.stallAt+ncclTimeout.Milliseconds(), Logs, "every rank's NCCL watchdog times out the all-reduce, every 10 minutes",
					fmt.Sprintf(`sum by (rank) (count_over_time({%s} |= "Watchdog caught collective operation timeout" [10m]))`, run)),
				evidence(ev, "watchdog/"+r.id, r.stallAt+ncclTimeout.Milliseconds(), Traces, "the timed-out step's nccl:all_reduce spans last 10 minutes, with an error",
					fmt.Sprintf(`{resource.ai.run.id=%q && name="nccl:all_reduce" && status=error}`, r.id)),
			},
		}
	}
}

// thermalStraggler: one GPU's cooling fails at the onset. Its temperature
// climbs past the slowdown threshold a few minutes later; from then its
// clocks throttle, its rank computes slower, and every other rank waits
// for it at the all-reduce.
func thermalStraggler(w *world, b *base) func(evidenceLog) GroundTruth {
	r := b.pretrain
	hot := r.slots[21] // node-3, GPU 5
	w.hooks = append(w.hooks, func(t int64) {
		if t >= w.onset {
			hot.faults.CoolingLoss = math.Min(20, 20*float64(t-w.onset)/float64(3*time.Minute.Milliseconds()))
		}
	})
	w.observers = append(w.observers, func(s *slot, rd *gputelemetry.Reading, ts int64) {
		if s == hot && rd.ClockReasons&gputelemetry.ReasonHWThermal != 0 {
			w.ev.seen("throttle", ts)
		}
		if s == hot && s.faults.CoolingLoss > 0 {
			w.ev.seen("warming", ts)
		}
	})
	return func(ev evidenceLog) GroundTruth {
		run := fmt.Sprintf(`run_id=%q`, r.id)
		gpu := fmt.Sprintf(`UUID=%q`, hot.dev.UUID)
		return GroundTruth{
			Cause: CauseThermalThrottle, Onset: ms(w.onset),
			Where:    Where{Nodes: []string{hot.n.name}, GPUUUIDs: []string{hot.dev.UUID}, Ranks: []int{21}, RunID: r.id, Team: r.team},
			Affected: runWhere(r),
			Precursors: []Evidence{evidence(ev, "warming", w.onset, Metrics, "the GPU's temperature climbs towards its slowdown threshold",
				fmt.Sprintf(`DCGM_FI_DEV_GPU_TEMP{%s}`, gpu))},
			CauseEvidence: []Evidence{
				evidence(ev, "throttle", w.onset, Metrics, "thermal clock-event reasons are active and the SM clock drops on that GPU only",
					fmt.Sprintf(`DCGM_FI_DEV_SM_CLOCK{%s} and on (UUID) weft_gpu_clock_event_active{reason="hw_thermal_slowdown"} == 1`, run)),
				evidence(ev, "throttle", w.onset, Metrics, "its thermal violation time grows",
					fmt.Sprintf(`rate(weft_gpu_clock_event_seconds_total{%s,reason="thermal"}[5m])`, gpu)),
			},
			Symptoms: []Evidence{
				evidence(ev, "throttle", w.onset, Metrics, "the run's step time grows; its rank's compute time is the outlier",
					fmt.Sprintf(`%s{%s}`, MetricCompute, run)),
				evidence(ev, "throttle", w.onset, Metrics, "the other GPUs' utilization drops (they wait at the all-reduce)",
					fmt.Sprintf(`avg(DCGM_FI_DEV_GPU_UTIL{%s})`, run)),
				evidence(ev, "throttle", w.onset, Traces, "the straggler's forward and backward spans are the long ones",
					fmt.Sprintf(`{resource.ai.run.id=%q && name="backward"} | select(resource.ai.rank)`, r.id)),
			},
		}
	}
}

// eccXID: correctable ECC errors on one GPU climb from 40 minutes before the
// onset; at the onset an XID 48 (double-bit ECC) kills its rank, 20 s later
// XID 79 takes the GPU off the bus; the other ranks hang in the all-reduce
// until the watchdog fires and the launcher stops the run.
func eccXID(w *world, b *base) func(evidenceLog) GroundTruth {
	r := b.pretrain
	const victim = 34 // node-5, GPU 2
	bad := r.slots[victim]
	from := max(w.start+5*time.Minute.Milliseconds(), w.onset-40*time.Minute.Milliseconds())
	lost := w.onset + 20_000
	rng := w.rand(0xecc)
	r.killRank, r.killAt = victim, w.onset+1500
	r.killMsg = "RuntimeError: CUDA error: uncorrectable ECC error encountered. CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."
	r.teardownAt = r.killAt + ncclTimeout.Milliseconds() + 5000
	pci := "PCI:0000:" + strings.ToLower(bad.dev.PCIBusID[9:11]) + ":00"
	w.hooks = append(w.hooks, func(t int64) {
		switch {
		case t >= from && t < w.onset:
			lam := 0.05 * math.Exp(float64(t-from)/float64(7*time.Minute.Milliseconds()))
			bad.faults.SBE = math.Max(0, math.Round(lam+rng.NormFloat64()*math.Sqrt(lam)))
			if bad.faults.SBE > 0 {
				w.ev.seen("sbe", t+bad.n.offset)
			}
		case w.at(t, w.onset):
			bad.faults.SBE, bad.faults.DBE, bad.faults.XID = 3, 1, []int{48}
			bad.n.kernel(w.onset, fmt.Sprintf("NVRM: Xid (%s): 48, pid=%d, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.", pci, 3000+17*victim))
			w.agentEvent(bad, w.onset+200, 48, "double bit ECC error")
			w.ev.seen("xid48", w.onset)
		case w.at(t, lost):
			bad.faults.XID, bad.faults.Lost = []int{79}, true
			bad.n.kernel(lost, fmt.Sprintf("NVRM: Xid (%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", pci))
			w.agentEvent(bad, lost+150, 79, "GPU has fallen off the bus")
			w.ev.seen("xid79", lost)
		}
	})
	return func(ev evidenceLog) GroundTruth {
		run := fmt.Sprintf(`run_id=%q`, r.id)
		gpu := fmt.Sprintf(`UUID=%q`, bad.dev.UUID)
		return GroundTruth{
			Cause: CauseGPUMemoryFailure, Onset: ms(w.onset),
			Where:    Where{Nodes: []string{bad.n.name}, GPUUUIDs: []string{bad.dev.UUID}, Ranks: []int{victim}, RunID: r.id, Team: r.team},
			Affected: runWhere(r),
			Precursors: []Evidence{evidence(ev, "sbe", from, Metrics, "correctable (single-bit) ECC errors climb on the GPU, and rows are remapped",
				fmt.Sprintf(`increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[10m])`, gpu))},
			CauseEvidence: []Evidence{
				evidence(ev, "xid48", w.onset, Logs, "the kernel logs XID 48 (double-bit ECC error) for the GPU",
					fmt.Sprintf(`{source="kmsg", host=%q} |= "NVRM: Xid" |= ": 48,"`, bad.n.name)),
				evidence(ev, "xid48", w.onset, Metrics, "its double-bit ECC counter and weft-agent's XID counter step up",
					fmt.Sprintf(`increase(weft_gpu_xid_errors_total{%s}[5m])`, gpu)),
				evidence(ev, "xid79", lost, Metrics, "XID 79: the GPU falls off the bus; only gpu_agent_gpu_failed is left of it",
					fmt.Sprintf(`gpu_agent_gpu_failed{%s} == 1`, gpu)),
			},
			Symptoms: []Evidence{
				evidence(ev, "", r.killAt, Logs, "rank 34 dies with an uncorrectable ECC error",
					fmt.Sprintf(`{%s, rank="34"} |= "uncorrectable ECC error"`, run)),
				evidence(ev, "", r.killAt, Metrics, "the step counter stops on every rank",
					fmt.Sprintf(`sum(rate(%s{%s}[5m]))`, MetricStep, run)),
				evidence(ev, "watchdog/"+r.id, r.killAt+ncclTimeout.Milliseconds(), Logs, "the surviving ranks' NCCL watchdogs time out, and the launcher stops the run",
					fmt.Sprintf(`{%s} |= "Watchdog caught collective operation timeout"`, run)),
			},
		}
	}
}

// badModelVersion: version v2.4 of chat-api's model is rolled out replica
// by replica from the onset; its requests are 2.6x slower (3x to the first
// token) and 6% of them fail with a 500.
func badModelVersion(w *world, b *base) func(evidenceLog) GroundTruth {
	s := b.chat
	s.profiles["v2.4"] = profile{latency: 2.6, ttft: 3.2, errRate: 0.06}
	s.rollTo = "v2.4"
	for i := range s.replicas {
		s.rollAt = append(s.rollAt, w.onset+int64(i)*40_000)
	}
	w.hooks = append(w.hooks, func(t int64) {
		if w.at(t, w.onset) {
			w.deployLog(t, fmt.Sprintf("promoting %s model %s from v2.3 to v2.4: rolling %d replicas", s.name, s.model, len(s.replicas)))
		}
	})
	return func(ev evidenceLog) GroundTruth {
		var pods []string
		for _, rp := range s.replicas {
			pods = append(pods, rp.pod)
		}
		svc := fmt.Sprintf(`service=%q`, s.name)
		return GroundTruth{
			Cause: CauseModelVersion, Onset: ms(w.onset),
			Where:    Where{Service: s.name, Model: s.model, Version: "v2.4", PreviousVersion: "v2.3", Pods: pods, Team: s.team, Nodes: []string{s.replicas[0].slots[0].n.name}},
			Affected: Where{Service: s.name, Model: s.model, Team: s.team},
			CauseEvidence: []Evidence{
				evidence(ev, "", w.onset, Logs, "the rollout controller promotes v2.4",
					`{job="deployer"} |= "promoting chat-api"`),
				evidence(ev, "", w.onset, Metrics, "the service's series change model_version from v2.3 to v2.4",
					fmt.Sprintf(`count by (model_version) (%s_count{%s})`, MetricE2E, svc)),
			},
			Symptoms: []Evidence{
				evidence(ev, "", w.onset, Metrics, "p99 end-to-end latency of v2.4 is 2.6x v2.3's",
					fmt.Sprintf(`histogram_quantile(0.99, sum by (le, model_version) (rate(%s_bucket{%s}[5m])))`, MetricE2E, svc)),
				evidence(ev, "errors/chat-api/v2.4", w.onset, Metrics, "6% of v2.4's requests fail with HTTP 500",
					fmt.Sprintf(`sum by (model_version) (rate(%s{%s,code=~"5.."}[5m])) / sum by (model_version) (rate(%s{%s}[5m]))`, MetricHTTPRequests, svc, MetricHTTPRequests, svc)),
				evidence(ev, "errors/chat-api/v2.4", w.onset, Logs, "the model server logs the failures",
					fmt.Sprintf(`{service_name=%q} |= "failed"`, s.name)),
				evidence(ev, "errors/chat-api/v2.4", w.onset, Traces, "v2.4's server spans are slow and some end in an error",
					fmt.Sprintf(`{resource.service.name=%q && resource.service.version="v2.4" && status=error}`, s.name)),
			},
		}
	}
}

// dataloaderStarvation: the dataset export's throughput falls to 5% at
// the onset (a RAID rebuild on the storage server). Every rank of the run
// that reads it waits for its batches: step time grows, every GPU's
// utilization falls together. Nothing is wrong with any GPU.
func dataloaderStarvation(w *world, b *base) func(evidenceLog) GroundTruth {
	r := b.pretrain
	storage := w.newStream(Label{Name: "host", Value: "storage-01"}, Label{Name: "job", Value: "storage"}, Label{Name: "source", Value: "kmsg"})
	w.hooks = append(w.hooks, func(t int64) {
		if t < w.onset {
			return
		}
		w.storageMBps = w.storageFull * 0.05
		if w.at(t, w.onset) {
			storage.Entries = append(storage.Entries,
				Entry{T: w.onset * 1e6, Line: kmsgPrefix(w.onset) + "md: recovery of RAID array md0"},
				Entry{T: w.onset*1e6 + 4e8, Line: kmsgPrefix(w.onset+400) + "md: minimum _guaranteed_ speed: 1000 KB/sec/disk; using maximum available idle IO bandwidth for recovery"})
		}
		if (t-w.onset)%(5*time.Minute.Milliseconds()) < w.iv {
			storage.Entries = append(storage.Entries, Entry{T: t*1e6 + 7e8, Line: kmsgPrefix(t+700) + "nfsd: request queue full on storage-01: 512 pending RPCs (read), latency 1840 ms"})
		}
	})
	w.observers = append(w.observers, func(s *slot, rd *gputelemetry.Reading, ts int64) {
		if ts > w.onset && s.ctx != nil && get(s.ctx, "run_id") == r.id && rd.Util < 70 && s.act.Phase == gputelemetry.PhaseTraining {
			w.ev.seen("util", ts)
		}
	})
	return func(ev evidenceLog) GroundTruth {
		run := fmt.Sprintf(`run_id=%q`, r.id)
		wh := runWhere(r)
		return GroundTruth{
			Cause: CauseStorageThroughput, Onset: ms(w.onset), NoGPUAtFault: true,
			Where:    Where{Dependency: datasetExport, Nodes: wh.Nodes, RunID: r.id, Team: r.team},
			Affected: wh,
			CauseEvidence: []Evidence{
				evidence(ev, "", w.onset, Metrics, "reads from the dataset export fall on every node of the run at once",
					fmt.Sprintf(`sum by (node) (rate(node_mountstats_nfs_read_bytes_total{export=%q}[2m]))`, datasetExport)),
				evidence(ev, "", w.onset, Logs, "the storage server starts a RAID recovery and its NFS request queue fills",
					`{host="storage-01"} |~ "recovery of RAID|request queue full"`),
			},
			Symptoms: []Evidence{
				evidence(ev, "util", w.onset, Metrics, "every GPU of the run drops utilization together (no outlier)",
					fmt.Sprintf(`avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{%s})`, run)),
				evidence(ev, "util", w.onset, Metrics, "data wait per step grows on every rank; compute time does not",
					fmt.Sprintf(`avg(%s{%s}) and avg(%s{%s})`, MetricDataWait, run, MetricCompute, run)),
				evidence(ev, "loader_warning/"+r.id, w.onset, Logs, "every rank warns that its input pipeline stalls",
					fmt.Sprintf(`{%s} |= "input pipeline stalled"`, run)),
			},
		}
	}
}

// noisyNeighbour: at the onset another team's ETL/embedding job starts on
// node-11's free GPUs 4-7, saturating PCIe and host memory bandwidth. The
// fine-tune run's ranks on GPUs 0-3 of that node get a third of their
// host-device bandwidth and wait for their inputs; their run slows.
func noisyNeighbour(w *world, b *base) func(evidenceLog) GroundTruth {
	victim := b.finetune
	host := w.nodes[10] // node-11
	ranks, _, vslots := ranksOn(victim, host)
	nb := w.newRun("etl-embed-9120", "bge-m3", "research", "web-crawl-2026-11", host.gpus[4:8], 0.3, w.onset)
	nb.pcieRx, nb.pcieTx = 24_000, 16_000
	w.hooks = append(w.hooks, func(t int64) {
		if t < w.onset {
			return
		}
		host.cpu = math.Max(host.cpu, 38+2*host.rng.NormFloat64()) // the ETL's host threads
		for i, s := range vslots {
			s.faults.PCIeLoss = 0.65
			victim.extraWait[ranks[i]] = 0.9
		}
	})
	w.observers = append(w.observers, func(s *slot, _ *gputelemetry.Reading, ts int64) {
		if s.faults.PCIeLoss > 0 {
			w.ev.seen("pcie", ts)
		}
	})
	return func(ev evidenceLog) GroundTruth {
		var pods []string
		for _, rk := range nb.ranks {
			if !slices.Contains(pods, rk.pod) {
				pods = append(pods, rk.pod)
			}
		}
		run := fmt.Sprintf(`run_id=%q`, victim.id)
		return GroundTruth{
			Cause: CauseNoisyNeighbour, Onset: ms(w.onset),
			Where:    Where{Nodes: []string{host.name}, RunID: nb.id, Team: nb.team, Pods: pods, GPUUUIDs: uuidsOf(host.gpus[4:8])},
			Affected: Where{RunID: victim.id, Team: victim.team, Nodes: []string{host.name}, Ranks: ranks, GPUUUIDs: uuidsOf(vslots)},
			CauseEvidence: []Evidence{
				evidence(ev, "pcie", w.onset, Metrics, "a new job of another team on the same node drives PCIe RX/TX near the link's limit",
					fmt.Sprintf(`sum by (run_id, team) (DCGM_FI_DEV_PCIE_RX_THROUGHPUT{Hostname=%q})`, host.name)),
				evidence(ev, "pcie", w.onset, Metrics, "the node's load average jumps (the job's host threads)",
					fmt.Sprintf(`node_load1{node=%q}`, host.name)),
			},
			Symptoms: []Evidence{
				evidence(ev, "pcie", w.onset, Metrics, "the victim ranks' PCIe throughput falls on that node only",
					fmt.Sprintf(`DCGM_FI_DEV_PCIE_RX_THROUGHPUT{%s}`, run)),
				evidence(ev, "loader_warning/"+victim.id, w.onset, Metrics, "their data wait grows and the whole run's step time with it",
					fmt.Sprintf(`%s{%s}`, MetricDataWait, run)),
			},
		}
	}
}
