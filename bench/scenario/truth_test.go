package scenario

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/weftdb/weft/internal/gputelemetry"
)

const (
	pretrain = "pt-llama70b-0427"
	finetune = "ft-mixtral-0311"
)

// checkTruthShape checks what every ground truth must hold: a cause with a
// place, an onset inside the window, and evidence and symptoms whose times
// were observed inside the window with a query each.
func checkTruthShape(t *testing.T, d *Data) {
	t.Helper()
	tr := d.Truth
	start, end := d.Options.Start, d.Options.Start.Add(d.Options.Duration)
	if tr.Scenario != d.Name || tr.Cause == "" || tr.Summary == "" {
		t.Errorf("truth %q: cause %q, summary %q", tr.Scenario, tr.Cause, tr.Summary)
	}
	if !tr.Onset.Equal(start.Add(d.Options.Onset)) {
		t.Errorf("onset %v, want %v", tr.Onset, start.Add(d.Options.Onset))
	}
	if len(tr.Where.Nodes) == 0 && tr.Where.Service == "" {
		t.Errorf("the cause has no place: %+v", tr.Where)
	}
	if len(tr.CauseEvidence) == 0 || len(tr.Symptoms) == 0 {
		t.Errorf("%d cause evidence, %d symptoms", len(tr.CauseEvidence), len(tr.Symptoms))
	}
	for _, e := range slices.Concat(tr.Precursors, tr.CauseEvidence, tr.Symptoms) {
		if e.Query == "" || e.What == "" || e.At.Before(start) || e.At.After(end) {
			t.Errorf("evidence %+v: needs a query, a description and a time inside the window", e)
		}
	}
	for _, e := range slices.Concat(tr.CauseEvidence, tr.Symptoms) {
		if e.At.Before(tr.Onset) {
			t.Errorf("%q at %v, before the onset %v", e.What, e.At, tr.Onset)
		}
	}
}

// healthyRun checks that a run's step rate is the same (±15%) before and
// after the onset.
func healthyRun(t *testing.T, d *Data, run string) {
	t.Helper()
	ss := d.SeriesNamed(MetricStep, l("run_id", run), l("rank", "0"))
	if len(ss) == 0 {
		t.Fatalf("run %s has no step counter", run)
	}
	before := rate(ss[len(ss)-1], minutes(d, 20), minutes(d, 33))
	after := rate(ss[len(ss)-1], minutes(d, 40), minutes(d, 58))
	if math.Abs(after/before-1) > 0.15 { // a checkpoint in one of the windows costs up to 9%
		t.Errorf("healthy run %s: %.3f steps/s before the onset, %.3f after", run, before, after)
	}
}

// gpuSeries returns a family's series for the GPUs of run, grouped by node.
func gpuSeries(d *Data, family, run string) map[string][]*Series {
	out := map[string][]*Series{}
	for _, s := range d.SeriesNamed(family, l("run_id", run)) {
		out[get(s.Labels, "Hostname")] = append(out[get(s.Labels, "Hostname")], s)
	}
	return out
}

func TestNVLinkStallTruth(t *testing.T) {
	d := generated(t, "nvlink-stall")
	checkTruthShape(t, d)
	tr := d.Truth
	if !slices.Equal(tr.Where.Nodes, []string{"node-6"}) || len(tr.Where.GPUUUIDs) != 8 || tr.Where.Ranks[0] != 40 {
		t.Fatalf("cause where %+v, want node-6, its 8 GPUs, ranks 40-47", tr.Where)
	}
	// The NVLink throughput of node-6 drops at the onset; its peers' 15-30 s
	// later. Before, every node carries about the same.
	nv := gpuSeries(d, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", pretrain)
	for host, ss := range nv {
		before := sumRate(ss, minutes(d, 25), minutes(d, 34))
		first := sumRate(ss, minutes(d, 35)+5_000, minutes(d, 35)+20_000)
		after := sumRate(ss, minutes(d, 37), minutes(d, 50))
		if after > 0.01*before {
			t.Errorf("%s: NVLink %.0f KiB/s after the stall, %.0f before: want a collapse", host, after, before)
		}
		if host == "node-6" && first > 0.01*before {
			t.Errorf("node-6: NVLink %.0f KiB/s in the first seconds after the onset, want near zero at once", first)
		}
		if host != "node-6" && first < 0.3*before {
			t.Errorf("%s: NVLink fell with node-6 (%.0f of %.0f): peers must echo it later", host, first, before)
		}
	}
	// NVLink errors rise on node-6 only.
	for host, ss := range gpuSeries(d, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", pretrain) {
		inc := sumRate(ss, minutes(d, 30), minutes(d, 50))
		if (host == "node-6") != (inc > 0) {
			t.Errorf("%s: NVLink replays %.3f/s after the onset", host, inc)
		}
	}
	// The step counter stops on every rank; GPUs spin at 100%.
	for _, s := range d.SeriesNamed(MetricStep, l("run_id", pretrain)) {
		if r := rate(s, minutes(d, 36), minutes(d, 59)); r != 0 {
			t.Fatalf("%v still steps (%.3f/s) after the stall", s.Labels, r)
		}
		if r := rate(s, minutes(d, 20), minutes(d, 34)); r < 0.3 {
			t.Fatalf("%v: %.3f steps/s before the stall", s.Labels, r)
		}
	}
	for host, ss := range gpuSeries(d, "DCGM_FI_DEV_GPU_UTIL", pretrain) {
		if u := meanOf(ss, minutes(d, 37), minutes(d, 59)); u < 98 {
			t.Errorf("%s: GPU utilization %.1f%% while stuck in the all-reduce, want the spin's ~100%%", host, u)
		}
	}
	// Every rank's watchdog times out, at 10 and 20 minutes after the stall,
	// and each line points to a trace of the timed-out step.
	n, streams := lines(d, "Watchdog caught collective operation timeout")
	if n != 2*64 || len(streams) != 64 {
		t.Errorf("%d watchdog lines in %d streams, want 128 in 64", n, len(streams))
	}
	traces := map[string]bool{}
	for _, sp := range d.Spans {
		if sp.Name == "nccl:all_reduce" && sp.Error {
			traces[hexID(sp.Trace[:])] = true
		}
	}
	for st := range streams {
		for _, e := range st.Entries {
			if strings.Contains(e.Line, "Watchdog") && !traces[get(e.Meta, "trace_id")] {
				t.Fatalf("watchdog line's trace_id %q has no failed all-reduce span", get(e.Meta, "trace_id"))
			}
		}
	}
	// Pods and CPU look fine: node-6's load average is like the others'.
	for _, s := range d.SeriesNamed("node_load1") {
		if m := mean(s, minutes(d, 37), minutes(d, 59)); m > 12 {
			t.Errorf("%s: load %.1f", get(s.Labels, "node"), m)
		}
	}
	healthyRun(t, d, finetune)
	healthyRun(t, d, "mm-dit-0158")
}

func TestThermalStragglerTruth(t *testing.T) {
	d := generated(t, "thermal-straggler")
	checkTruthShape(t, d)
	hot := d.Truth.Where.GPUUUIDs[0]
	if !slices.Equal(d.Truth.Where.Nodes, []string{"node-3"}) || d.Truth.Where.Ranks[0] != 21 {
		t.Fatalf("cause where %+v", d.Truth.Where)
	}
	throttle := d.Truth.CauseEvidence[0].At.UnixMilli()
	if throttle < minutes(d, 35) || throttle > minutes(d, 45) {
		t.Fatalf("throttling starts at %v, want within 10 minutes of the onset", d.Truth.CauseEvidence[0].At)
	}
	// The hot GPU's clock is far below every other's (power capping moves
	// theirs between 1410 and 1980 MHz).
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_SM_CLOCK", l("run_id", pretrain)) {
		c := mean(s, throttle+120_000, minutes(d, 59))
		if (get(s.Labels, "UUID") == hot) != (c < 1300) {
			t.Errorf("%s: SM clock %.0f MHz after the throttle", get(s.Labels, "UUID"), c)
		}
	}
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", l("run_id", pretrain)) {
		v := uint64(valueAt(s, minutes(d, 55)))
		if (get(s.Labels, "UUID") == hot) != (v&gputelemetry.ReasonHWThermal != 0) {
			t.Errorf("%s: clock event reasons %#x", get(s.Labels, "UUID"), v)
		}
	}
	// The straggler's rank computes slower; the run's step time grows; the
	// other GPUs wait (utilization drops), the hot one does not.
	step := d.SeriesNamed(MetricStepSeconds, l("run_id", pretrain), l("rank", "0"))[0]
	if b, a := mean(step, minutes(d, 20), minutes(d, 34)), mean(step, throttle+120_000, minutes(d, 59)); a < 1.2*b {
		t.Errorf("step time %.2fs before, %.2fs after: want the whole run slowed", b, a)
	}
	comp := d.SeriesNamed(MetricCompute, l("run_id", pretrain))
	for _, s := range comp {
		c := mean(s, throttle+120_000, minutes(d, 59))
		if (get(s.Labels, "rank") == "21") != (c > 2.2) {
			t.Errorf("rank %s computes %.2fs per step", get(s.Labels, "rank"), c)
		}
	}
	// The others spin in NCCL's all-reduce: still "utilized", but their
	// power falls; the hot GPU's does not fall as far.
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_POWER_USAGE", l("run_id", pretrain)) {
		b, a := mean(s, minutes(d, 20), minutes(d, 34)), mean(s, throttle+120_000, minutes(d, 59))
		if get(s.Labels, "UUID") != hot && a > 0.85*b {
			t.Errorf("%s: power %.0f W before, %.0f W after: want the waiting GPUs cooler", get(s.Labels, "UUID"), b, a)
		}
	}
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_GPU_UTIL", l("run_id", pretrain)) {
		if u := mean(s, throttle+120_000, minutes(d, 59)); u < 80 {
			t.Errorf("%s: utilization %.1f%%: NCCL's spin keeps it busy", get(s.Labels, "UUID"), u)
		}
	}
	healthyRun(t, d, finetune)
}

func TestECCXIDTruth(t *testing.T) {
	d := generated(t, "ecc-xid")
	checkTruthShape(t, d)
	bad := d.Truth.Where.GPUUUIDs[0]
	if !slices.Equal(d.Truth.Where.Nodes, []string{"node-5"}) || d.Truth.Where.Ranks[0] != 34 {
		t.Fatalf("cause where %+v", d.Truth.Where)
	}
	// Correctable errors climb before the onset on that GPU only.
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", l("run_id", pretrain)) {
		inc := valueAt(s, minutes(d, 34.9)) - valueAt(s, minutes(d, 5))
		if (get(s.Labels, "UUID") == bad) != (inc > 50) {
			t.Errorf("%s: %v single-bit errors before the onset", get(s.Labels, "UUID"), inc)
		}
	}
	var xid48 bool
	for _, s := range d.SeriesNamed("weft_gpu_xid_errors_total") {
		if get(s.Labels, "UUID") != bad {
			t.Errorf("an XID on a healthy GPU: %v", s.Labels)
		}
		xid48 = xid48 || get(s.Labels, "xid") == "48"
	}
	failed := d.SeriesNamed(gputelemetry.FamilyGPUFailed, l("UUID", bad))
	if !xid48 || len(failed) == 0 || valueAt(failed[len(failed)-1], minutes(d, 50)) != 1 {
		t.Fatalf("XID 48 counted %v; gpu_agent_gpu_failed series %d", xid48, len(failed))
	}
	// The GPU's other series end when it falls off the bus.
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_GPU_UTIL", l("UUID", bad)) {
		if last := s.T[len(s.T)-1]; last > minutes(d, 36) || math.Float64bits(s.V[len(s.V)-1]) != staleNaN {
			t.Errorf("the lost GPU's utilization goes on to %v", ms(last))
		}
	}
	n, _ := lines(d, ": 48, pid=")
	m, _ := lines(d, "GPU has fallen off the bus")
	if n != 1 || m != 2 { // kernel line for 48; kernel and weft-agent lines for 79
		t.Errorf("%d XID 48 kernel lines, %d off-the-bus lines", n, m)
	}
	// The run stops at the onset and is torn down after the watchdog.
	for _, s := range d.SeriesNamed(MetricStep, l("run_id", pretrain)) {
		if r := rate(s, minutes(d, 36), minutes(d, 45)); r != 0 && !math.IsNaN(r) { // NaN: the dead rank's series ended
			t.Fatalf("%v steps after the XID", s.Labels)
		}
		if last := s.T[len(s.T)-1]; last > minutes(d, 47) {
			t.Fatalf("%v goes on after the teardown", s.Labels)
		}
	}
	if n, streams := lines(d, "Watchdog caught collective operation timeout"); n != 63 || len(streams) != 63 {
		t.Errorf("%d watchdog lines, want one per surviving rank (63)", n)
	}
	healthyRun(t, d, finetune)
}

func TestBadModelVersionTruth(t *testing.T) {
	d := generated(t, "bad-model-version")
	checkTruthShape(t, d)
	if tr := d.Truth.Where; tr.Service != "chat-api" || tr.Version != "v2.4" || tr.PreviousVersion != "v2.3" || len(tr.Pods) != 4 {
		t.Fatalf("cause where %+v", tr)
	}
	p99 := func(service, version string, from, to int64) float64 {
		buckets := d.SeriesNamed(MetricE2E+"_bucket", l("service", service), l("model_version", version))
		return quantile(0.99, buckets, from, to)
	}
	before, after := p99("chat-api", "v2.3", minutes(d, 15), minutes(d, 34)), p99("chat-api", "v2.4", minutes(d, 40), minutes(d, 59))
	if after < 2*before {
		t.Errorf("chat-api p99 %.2fs with v2.3, %.2fs with v2.4: want more than double", before, after)
	}
	errShare := func(service, version string, from, to int64) float64 {
		e := sumRate(d.SeriesNamed(MetricHTTPRequests, l("service", service), l("model_version", version), l("code", "500")), from, to)
		ok := sumRate(d.SeriesNamed(MetricHTTPRequests, l("service", service), l("model_version", version), l("code", "200")), from, to)
		return e / (e + ok)
	}
	if s := errShare("chat-api", "v2.4", minutes(d, 40), minutes(d, 59)); s < 0.04 || s > 0.08 {
		t.Errorf("v2.4 fails %.3f of requests, want about 6%%", s)
	}
	if s := errShare("chat-api", "v2.3", minutes(d, 15), minutes(d, 34)); s > 0.01 {
		t.Errorf("v2.3 fails %.3f of requests", s)
	}
	// The other services are untouched.
	for _, svc := range []string{"code-assist", "embed-search"} {
		var version string
		for _, s := range d.SeriesNamed(MetricE2E+"_count", l("service", svc)) {
			version = get(s.Labels, "model_version")
		}
		b, a := p99(svc, version, minutes(d, 15), minutes(d, 34)), p99(svc, version, minutes(d, 40), minutes(d, 59))
		if math.Abs(a/b-1) > 0.2 {
			t.Errorf("%s p99 %.3fs before, %.3fs after", svc, b, a)
		}
	}
	healthyRun(t, d, pretrain)
}

// quantile estimates the q-quantile of the requests counted by cumulative
// buckets between two instants, as histogram_quantile does.
func quantile(q float64, buckets []*Series, from, to int64) float64 {
	type b struct{ le, n float64 }
	var bs []b
	byLE := map[string]float64{}
	for _, s := range buckets {
		byLE[get(s.Labels, "le")] += valueAt(s, to) - nz(valueAt(s, from))
	}
	for le, n := range byLE {
		v := math.Inf(1)
		if le != "+Inf" {
			v, _ = strconv.ParseFloat(le, 64)
		}
		bs = append(bs, b{v, n})
	}
	slices.SortFunc(bs, func(x, y b) int { return cmp.Compare(x.le, y.le) })
	total := bs[len(bs)-1].n
	rank := q * total
	prevLE, prevN := 0.0, 0.0
	for _, x := range bs {
		if x.n >= rank {
			if math.IsInf(x.le, 1) {
				return prevLE
			}
			return prevLE + (x.le-prevLE)*(rank-prevN)/(x.n-prevN)
		}
		prevLE, prevN = x.le, x.n
	}
	return math.NaN()
}

func nz(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func TestDataloaderStarvationTruth(t *testing.T) {
	d := generated(t, "dataloader-starvation")
	checkTruthShape(t, d)
	if !d.Truth.NoGPUAtFault || len(d.Truth.Where.GPUUUIDs) != 0 || d.Truth.Where.Dependency != datasetExport || len(d.Truth.Where.Nodes) != 8 {
		t.Fatalf("cause where %+v, no GPU at fault %v", d.Truth.Where, d.Truth.NoGPUAtFault)
	}
	// Every GPU of the run drops together: no outlier.
	var after []float64
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_GPU_UTIL", l("run_id", pretrain)) {
		b, a := mean(s, minutes(d, 20), minutes(d, 34)), mean(s, minutes(d, 37), minutes(d, 59))
		if b < 85 || a > 60 {
			t.Errorf("%s: utilization %.1f%% before, %.1f%% after", get(s.Labels, "UUID"), b, a)
		}
		after = append(after, a)
	}
	slices.Sort(after)
	if spread := after[len(after)-1] - after[0]; spread > 15 {
		t.Errorf("utilization after the onset spreads %.1f points across GPUs: want them together", spread)
	}
	// No GPU shows a new fault. (A GPU with a flaky PCIe link replays now
	// and then, before and after alike: background noise, not checked.)
	for _, fam := range []string{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"} {
		for _, s := range d.SeriesNamed(fam, l("run_id", pretrain)) {
			if b, a := rate(s, minutes(d, 5), minutes(d, 34)), rate(s, minutes(d, 36), minutes(d, 59)); a > 2*b+0.001 {
				t.Errorf("%s rises on %s: %.4f/s after the onset, %.4f before", fam, get(s.Labels, "UUID"), a, b)
			}
		}
	}
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", l("run_id", pretrain)) {
		if v := uint64(valueAt(s, minutes(d, 50))); v&(gputelemetry.ReasonHWThermal|gputelemetry.ReasonHWSlowdown) != 0 {
			t.Errorf("%s: clock event reasons %#x", get(s.Labels, "UUID"), v)
		}
	}
	if xids := d.SeriesNamed("weft_gpu_xid_errors_total"); len(xids) > 0 {
		t.Errorf("%d XID series, want none", len(xids))
	}
	// Reads from the export fall on every node of the run; the data wait
	// grows, the compute time does not.
	for _, s := range d.SeriesNamed("node_mountstats_nfs_read_bytes_total") {
		b, a := rate(s, minutes(d, 20), minutes(d, 34)), rate(s, minutes(d, 37), minutes(d, 59))
		if a > 0.7*b {
			t.Errorf("%s reads %.0f B/s after, %.0f before", get(s.Labels, "node"), a, b)
		}
	}
	wait, comp := d.SeriesNamed(MetricDataWait, l("rank", "7"), l("run_id", pretrain))[0], d.SeriesNamed(MetricCompute, l("rank", "7"), l("run_id", pretrain))[0]
	if b, a := mean(wait, minutes(d, 20), minutes(d, 34)), mean(wait, minutes(d, 37), minutes(d, 59)); a < 10*b {
		t.Errorf("data wait %.2fs before, %.2fs after", b, a)
	}
	if b, a := mean(comp, minutes(d, 20), minutes(d, 34)), mean(comp, minutes(d, 37), minutes(d, 59)); math.Abs(a/b-1) > 0.05 {
		t.Errorf("compute %.2fs before, %.2fs after: should not change", b, a)
	}
	if n, streams := lines(d, "input pipeline stalled"); len(streams) != 64 || n < 64*10 {
		t.Errorf("%d data-loader warnings from %d ranks", n, len(streams))
	}
	healthyRun(t, d, finetune)
}

func TestNoisyNeighbourTruth(t *testing.T) {
	d := generated(t, "noisy-neighbour")
	checkTruthShape(t, d)
	tr := d.Truth
	if !slices.Equal(tr.Where.Nodes, []string{"node-11"}) || tr.Where.Team != "research" || tr.Affected.RunID != finetune || len(tr.Affected.Ranks) != 4 {
		t.Fatalf("cause %+v, affected %+v", tr.Where, tr.Affected)
	}
	// The neighbour's GPUs drive PCIe far above the trainers'.
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", l("Hostname", "node-11")) {
		switch get(s.Labels, "run_id") {
		case "etl-embed-9120":
			if m := mean(s, minutes(d, 38), minutes(d, 59)); m < 15e6 {
				t.Errorf("neighbour GPU %s: PCIe RX %.0f KB/s", get(s.Labels, "gpu"), m)
			}
		case finetune:
			if b, a := mean(s, minutes(d, 20), minutes(d, 34)), mean(s, minutes(d, 38), minutes(d, 59)); a > 0.5*b {
				t.Errorf("victim GPU %s: PCIe RX %.0f KB/s after, %.0f before", get(s.Labels, "gpu"), a, b)
			}
		}
	}
	// The fine-tune slows as a whole; its GPUs are healthy.
	step := d.SeriesNamed(MetricStep, l("run_id", finetune), l("rank", "0"))[0]
	if b, a := rate(step, minutes(d, 20), minutes(d, 34)), rate(step, minutes(d, 38), minutes(d, 59)); a > 0.8*b {
		t.Errorf("fine-tune steps %.3f/s before, %.3f after: want slower", b, a)
	}
	for _, s := range d.SeriesNamed("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", l("run_id", finetune)) {
		if v := uint64(valueAt(s, minutes(d, 50))); v&gputelemetry.ReasonHWThermal != 0 {
			t.Errorf("victim GPU throttles: %#x", v)
		}
	}
	healthyRun(t, d, pretrain)
}

// TestDecoys: every scenario carries the same unrelated events, and none
// of them is where the cause is.
func TestDecoys(t *testing.T) {
	for _, name := range Names() {
		d := generated(t, name)
		if len(d.Truth.Decoys) == 0 {
			t.Errorf("%s: no decoys", name)
		}
		for _, dc := range d.Truth.Decoys {
			if len(dc.Where.GPUUUIDs) > 0 && slices.Contains(d.Truth.Where.GPUUUIDs, dc.Where.GPUUUIDs[0]) {
				t.Errorf("%s: decoy %q sits on the cause's GPU", name, dc.What)
			}
			if !dc.At.Before(d.Truth.Onset) {
				t.Errorf("%s: decoy %q at %v, not before the onset", name, dc.What, dc.At)
			}
		}
		// The OOM: one line, and the run restarts from its checkpoint (its
		// step counter resets, under the same series).
		if n, _ := lines(d, "CUDA out of memory"); n != 1 {
			t.Errorf("%s: %d OOM lines", name, n)
		}
		restarted := 0
		for _, s := range d.SeriesNamed(MetricStep, l("run_id", "mm-dit-0158"), l("rank", "0")) {
			if len(s.T) > 0 && s.T[0] > minutes(d, 15) {
				restarted++
			}
		}
		if restarted != 1 {
			t.Errorf("%s: the OOM'd run restarted %d times", name, restarted)
		}
	}
}
