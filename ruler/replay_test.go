package ruler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage/logentry"
)

// The seeds' 3 a.m. incident, generated here: 8 nodes of 8 GPUs train one
// run (rank = 8 × node + GPU, 2.4 s steps). At 02:47:00 node-6's NVLink
// falls to 0.1% of its bandwidth and its replay counters climb; 20 s later
// every rank is stuck in the all-reduce: the step counters stop, every
// GPU's NVLink traffic collapses while its utilization reads ~100% (NCCL
// spin). At 02:57:20 every rank logs PyTorch's NCCL watchdog line. The data
// follows weft-agent's names and semantics (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL
// is a KiB counter) and those of the scenario generator (bench/scenario,
// `weft-bench scenario nvlink-stall`), which is not in this branch yet.
var (
	incidentStart  = time.Date(2026, 12, 1, 1, 40, 0, 0, time.UTC)
	incidentOnset  = time.Date(2026, 12, 1, 2, 47, 0, 0, time.UTC)
	incidentStall  = incidentOnset.Add(20 * time.Second)
	incidentNCCL   = time.Date(2026, 12, 1, 2, 57, 20, 0, time.UTC)
	incidentEnd    = time.Date(2026, 12, 1, 3, 5, 0, 0, time.UTC)
	incidentScrape = 15 * time.Second
)

const (
	incidentRun      = "pt-llama70b-0427"
	incidentNodes    = 8
	incidentGPUs     = 8
	incidentBadNode  = "node-6"
	incidentStepSecs = 2.4
	// a rank's NVLink traffic while training, KiB per second (~240 GB/s)
	incidentNVLinkKiBps = 240e9 / 1024
)

// incidentData returns the generated series (one value per scrape from
// incidentStart) and the log streams.
func incidentData() ([]feedSeries, []feedStream) {
	rng := rand.New(rand.NewPCG(3, 47))
	steps := int(incidentEnd.Sub(incidentStart)/incidentScrape) + 1
	at := func(i int) time.Time { return incidentStart.Add(time.Duration(i) * incidentScrape) }
	var series []feedSeries
	var streams []feedStream
	for n := 1; n <= incidentNodes; n++ {
		host := fmt.Sprintf("node-%d", n)
		for g := 0; g < incidentGPUs; g++ {
			rank := (n-1)*incidentGPUs + g
			uuid := fmt.Sprintf("GPU-%02d%02d-4c1e-9a00", n, g)
			gpu := []string{"gpu", fmt.Sprint(g), "UUID", uuid, "gpu_uuid", uuid, "Hostname", host,
				"modelName", "NVIDIA H100 80GB HBM3", "pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", 0x18+g),
				"run_id", incidentRun, "rank", fmt.Sprint(rank), "team", "pretrain"}
			mk := func(name string, extra ...string) *feedSeries {
				series = append(series, feedSeries{labels: labels.FromStrings(append(append([]string{"__name__", name}, gpu...), extra...)...)})
				return &series[len(series)-1]
			}
			util, bw, replay := mk("DCGM_FI_DEV_GPU_UTIL"), mk("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), mk("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL")
			temp, clocks := mk("DCGM_FI_DEV_GPU_TEMP"), mk("DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
			xid := mk("weft_gpu_xid_errors_total", "xid", "13") // primed at 0, never moves
			failed := mk("gpu_agent_gpu_failed")
			ls := labels.FromStrings("job", "trainer", "run_id", incidentRun, "rank", fmt.Sprint(rank), "node", host)
			stepS := feedSeries{labels: labels.FromStrings("__name__", "training_step_total", "run_id", incidentRun, "rank", fmt.Sprint(rank), "Hostname", host)}
			samplesS := feedSeries{labels: labels.FromStrings("__name__", "training_samples_total", "run_id", incidentRun, "rank", fmt.Sprint(rank), "Hostname", host)}
			computeS := feedSeries{labels: labels.FromStrings("__name__", "training_step_compute_seconds", "run_id", incidentRun, "rank", fmt.Sprint(rank), "Hostname", host)}
			var kib, steps0, repl float64
			for i := 0; i < steps; i++ {
				t := at(i)
				rate := incidentNVLinkKiBps * (0.95 + 0.1*rng.Float64())
				stepping := t.Before(incidentStall)
				switch {
				case host == incidentBadNode && !t.Before(incidentOnset):
					rate *= 0.001
					repl += 24
				case !stepping:
					rate *= 0.002 // nobody communicates while one rank waits
				}
				kib += rate * incidentScrape.Seconds()
				if stepping {
					steps0 += incidentScrape.Seconds() / incidentStepSecs
				}
				u := 90 + 6*rng.Float64()
				if !stepping {
					u = 99 + rng.Float64() // NCCL kernels spin
				}
				util.values = append(util.values, parser.SequenceValue{Value: math.Round(u)})
				bw.values = append(bw.values, parser.SequenceValue{Value: math.Round(kib)})
				replay.values = append(replay.values, parser.SequenceValue{Value: repl})
				temp.values = append(temp.values, parser.SequenceValue{Value: math.Round(66 + 4*rng.Float64())})
				clocks.values = append(clocks.values, parser.SequenceValue{Value: 0}) // no clock event
				xid.values = append(xid.values, parser.SequenceValue{Value: 0})
				failed.values = append(failed.values, parser.SequenceValue{Value: 0})
				stepS.values = append(stepS.values, parser.SequenceValue{Value: math.Floor(steps0)})
				samplesS.values = append(samplesS.values, parser.SequenceValue{Value: 8 * math.Floor(steps0)})
				computeS.values = append(computeS.values, parser.SequenceValue{Value: 1.9 + 0.04*rng.Float64()})
			}
			series = append(series, stepS, samplesS, computeS)
			stream := feedStream{labels: ls}
			for ts := incidentStart.Add(time.Minute); ts.Before(incidentEnd); ts = ts.Add(2 * time.Minute) {
				if ts.Before(incidentStall) {
					stream.entries = append(stream.entries, logentry.Entry{Timestamp: ts.UnixNano(),
						Line: fmt.Sprintf(`{"level":"INFO","rank":%d,"msg":"step=%d loss=1.93 grad_norm=0.41"}`, rank, int(ts.Sub(incidentStart).Seconds()/incidentStepSecs))})
				}
			}
			stream.entries = append(stream.entries, logentry.Entry{Timestamp: incidentNCCL.UnixNano(),
				Line: fmt.Sprintf("[rank%d]:[E1201 02:57:20.123456 ProcessGroupNCCL.cpp:632] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600481 milliseconds before timing out.", rank, rank)})
			slices.SortFunc(stream.entries, func(a, b logentry.Entry) int { return int(a.Timestamp - b.Timestamp) })
			streams = append(streams, stream)
		}
	}
	return series, streams
}

// TestIncidentReplay evaluates the whole shipped rule pack, PromQL and
// LogQL, over the incident, each group at its own interval: nothing fires on the healthy
// hour and more before the onset; the NVLink rule fires for node-6's GPUs
// within 2 minutes of the drop, before any other node's; NVLink errors point
// at node-6 alone; the run is reported stalled, and the NCCL watchdog lines
// alert once they are logged.
func TestIncidentReplay(t *testing.T) {
	ctx := context.Background()
	h, err := newHarness(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.close(); err != nil {
			t.Error(err)
		}
	}()
	promFiles, _ := filepath.Glob("../rules/*.yml")
	logFiles, _ := filepath.Glob("../rules/logs/*.yml")
	lang := map[string]Language{}
	for _, f := range logFiles {
		lang[f] = LogQL
	}
	if err := h.load(DefaultEvaluationInterval, append(promFiles, logFiles...), lang, labels.EmptyLabels(), "http://weft.example:9338", nil); err != nil {
		t.Fatal(err)
	}

	series, streams := incidentData()
	feed := &seriesFeed{start: incidentStart, interval: incidentScrape, series: series}
	logs := &logFeed{streams: streams}

	// first firing time of each alert, by alert labels
	first := map[string]time.Time{}
	var firingBeforeOnset []string
	for ts := incidentStart; !ts.After(incidentEnd); ts = ts.Add(incidentScrape) {
		if err := feed.appendUntil(ctx, h.db, ts); err != nil {
			t.Fatal(err)
		}
		if err := logs.pushUntil(ctx, h.logs, ts); err != nil {
			t.Fatal(err)
		}
		if errs := h.evalDue(ctx, ts); len(errs) > 0 {
			t.Fatalf("evaluation at %s: %v", ts.Format(time.TimeOnly), errs)
		}
		for _, g := range h.groups {
			for _, r := range g.Rules() {
				ar, ok := r.(*rules.AlertingRule)
				if !ok {
					continue
				}
				for _, a := range ar.ActiveAlerts() {
					if a.State != rules.StateFiring {
						continue
					}
					k := a.Labels.String()
					if _, seen := first[k]; !seen {
						first[k] = ts
						if ts.Before(incidentOnset) {
							firingBeforeOnset = append(firingBeforeOnset, k+" at "+ts.Format(time.TimeOnly))
						}
					}
				}
			}
		}
	}
	if len(firingBeforeOnset) > 0 {
		t.Errorf("alerts fired on the healthy data before the onset:\n%s", strings.Join(firingBeforeOnset, "\n"))
	}

	byAlert := map[string]map[string]time.Time{} // alertname → Hostname (or run_id) → first firing
	for k, ts := range first {
		ls, err := query.NewParser().ParseMetric(k)
		if err != nil {
			t.Fatal(err)
		}
		name := ls.Get(labels.AlertName)
		key := ls.Get("Hostname")
		if key == "" {
			key = ls.Get("run_id")
		}
		if byAlert[name] == nil {
			byAlert[name] = map[string]time.Time{}
		}
		if prev, ok := byAlert[name][key]; !ok || ts.Before(prev) {
			byAlert[name][key] = ts
		}
		t.Logf("%s first firing at %s: %s", name, ts.Format(time.TimeOnly), k)
	}

	nv := byAlert["GPUNVLinkBandwidthDegraded"]
	bad, ok := nv[incidentBadNode]
	if !ok {
		t.Fatalf("GPUNVLinkBandwidthDegraded never fired for %s (fired for %v)", incidentBadNode, nv)
	}
	if d := bad.Sub(incidentOnset); d > 2*time.Minute {
		t.Errorf("GPUNVLinkBandwidthDegraded fired for %s %s after the drop, want within 2m", incidentBadNode, d)
	}
	for host, ts := range nv {
		if host != incidentBadNode && !ts.After(bad) {
			t.Errorf("GPUNVLinkBandwidthDegraded fired for %s at %s, not after %s's %s", host, ts.Format(time.TimeOnly), incidentBadNode, bad.Format(time.TimeOnly))
		}
	}
	n6 := 0
	for k := range first {
		if strings.Contains(k, `alertname="GPUNVLinkBandwidthDegraded"`) && strings.Contains(k, `Hostname="`+incidentBadNode+`"`) {
			n6++
		}
	}
	if n6 != incidentGPUs {
		t.Errorf("GPUNVLinkBandwidthDegraded fired for %d of %s's %d GPUs", n6, incidentBadNode, incidentGPUs)
	}

	if errs := byAlert["GPUNVLinkErrors"]; len(errs) != 1 || errs[incidentBadNode].IsZero() || errs[incidentBadNode].Sub(incidentOnset) > time.Minute {
		t.Errorf("GPUNVLinkErrors fired for %v, want %s alone within a minute of the onset", errs, incidentBadNode)
	}
	stalled, ok := byAlert["TrainingStalled"][incidentRun]
	if !ok || stalled.Sub(incidentStall) > 3*time.Minute {
		t.Errorf("TrainingStalled for %s: fired %v at %s, want within 3m of the stall at %s", incidentRun, ok, stalled.Format(time.TimeOnly), incidentStall.Format(time.TimeOnly))
	}
	nccl, ok := byAlert["NCCLWatchdogTimeout"][incidentRun]
	if !ok || nccl.Before(incidentNCCL) || nccl.Sub(incidentNCCL) > time.Minute {
		t.Errorf("NCCLWatchdogTimeout for %s: fired %v at %s, want within a minute of the lines at %s", incidentRun, ok, nccl.Format(time.TimeOnly), incidentNCCL.Format(time.TimeOnly))
	}
	// The pack's other detectors have nothing to say about this incident.
	for name := range byAlert {
		switch name {
		case "GPUNVLinkBandwidthDegraded", "GPUNVLinkErrors", "TrainingStalled", "NCCLWatchdogTimeout":
		default:
			t.Errorf("%s fired during the incident: %v", name, byAlert[name])
		}
	}
}
