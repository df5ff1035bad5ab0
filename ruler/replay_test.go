package ruler

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage/logentry"
)

// packFamilies is the metric names the PromQL pack's expressions select.
func packFamilies(t *testing.T) map[string]bool {
	t.Helper()
	p := query.NewParser()
	names := map[string]bool{}
	for _, r := range loadPack(t) {
		if strings.HasPrefix(r.file, filepath.Join("..", "rules", "logs")) {
			continue
		}
		e, err := p.ParseExpr(r.expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				for _, m := range vs.LabelMatchers {
					if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
						names[m.Value] = true
					}
				}
			}
			return nil
		})
	}
	return names
}

// TestIncidentReplay replays the seeds' incident, bench/scenario's
// nvlink-stall (`weft-bench scenario nvlink-stall`): a 17-node cluster,
// the 64-rank run pt-llama70b-0427 on node-1 … node-8, node-6's NVLink
// falling to 0.1% at 02:47 with its replay counters climbing, every rank
// stuck in the all-reduce 20 seconds later, the NCCL watchdog lines from
// 02:57:20, and the scenario's decoys. The whole shipped rule pack, PromQL
// and LogQL, is evaluated over it, each group at its own interval, from
// 01:45 to 03:00.
//
// Before the onset only the decoys alert. After it, the NVLink rule fires
// for node-6's 8 GPUs within 2 minutes of the drop and before any other
// node's; NVLink errors point at node-6 alone; the run is reported
// stalled; the watchdog lines alert; nothing alerts on the healthy runs
// and services.
func TestIncidentReplay(t *testing.T) {
	// An hour of healthy data before the onset (the NVLink baselines need
	// it); the scenario wants 20 minutes after it; the replay stops at
	// 03:00, past the first watchdog lines.
	start := time.Date(2026, 12, 1, 1, 45, 0, 0, time.UTC)
	d, err := scenario.Generate("nvlink-stall", scenario.Options{Seed: 1, Start: start, Duration: 82 * time.Minute, Onset: 62 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	truth := d.Truth
	onset := truth.Onset
	run := truth.Affected.RunID
	if run == "" {
		run = truth.Where.RunID
	}
	if want := time.Date(2026, 12, 1, 2, 47, 0, 0, time.UTC); !onset.Equal(want) || len(truth.Where.Nodes) != 1 {
		t.Fatalf("scenario truth: onset %s, nodes %v; want %s and one node", onset, truth.Where.Nodes, want)
	}
	badNode := truth.Where.Nodes[0]

	// The series the pack reads (the scenario's other families cost time
	// and no rule reads them) and every Loki stream (the LogQL rules'
	// input; the OTLP-logged vLLM server lines are not).
	families := packFamilies(t)
	var series []feedSeries
	for _, s := range d.Series {
		b := labels.NewScratchBuilder(len(s.Labels))
		for _, l := range s.Labels {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		ls := b.Labels()
		if !families[ls.Get(labels.MetricName)] {
			continue
		}
		fs := feedSeries{labels: ls, times: s.T}
		for _, v := range s.V {
			fs.values = append(fs.values, parser.SequenceValue{Value: v})
		}
		series = append(series, fs)
	}
	var streams []feedStream
	for _, st := range d.Streams {
		if st.Via != scenario.Loki {
			continue
		}
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, l := range st.Labels {
			b.Set(l.Name, l.Value)
		}
		fs := feedStream{labels: b.Labels()}
		for _, e := range st.Entries {
			fs.entries = append(fs.entries, logentry.Entry{Timestamp: e.T, Line: e.Line})
		}
		streams = append(streams, fs)
	}
	t.Logf("replaying %d of %d series and %d Loki streams", len(series), len(d.Series), len(streams))

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
	feed := &seriesFeed{series: series}
	logs := &logFeed{streams: streams}

	type firing struct {
		labels labels.Labels
		at     time.Time
	}
	first := map[string]firing{} // by alert labels
	end := start.Add(75 * time.Minute)
	for ts := start; ts.Before(end); ts = ts.Add(15 * time.Second) {
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
					if k := a.Labels.String(); a.State == rules.StateFiring && first[k].at.IsZero() {
						first[k] = firing{a.Labels, ts}
					}
				}
			}
		}
	}

	var keys []string
	for k := range first {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return first[a].at.Compare(first[b].at) })
	nvlink := map[string]time.Time{} // host → first GPUNVLinkBandwidthDegraded
	badGPUs := 0
	var stalled, watchdog time.Time
	errHosts := map[string]bool{}
	for _, k := range keys {
		f := first[k]
		name, host := f.labels.Get(labels.AlertName), f.labels.Get("Hostname")
		t.Logf("%s %s", f.at.Format(time.TimeOnly), k)
		switch {
		case f.at.Before(onset) && !decoyAlert(f.labels, truth):
			t.Errorf("%s fired on healthy data before the onset, at %s: %s", name, f.at.Format(time.TimeOnly), k)
		case name == "GPUNVLinkBandwidthDegraded" && f.labels.Get("run_id") == run:
			if prev, ok := nvlink[host]; !ok || f.at.Before(prev) {
				nvlink[host] = f.at
			}
			if host == badNode {
				badGPUs++
			}
		case name == "GPUNVLinkErrors":
			errHosts[host] = true
		case name == "TrainingStalled" && f.labels.Get("run_id") == run:
			stalled = f.at
		case name == "NCCLWatchdogTimeout" && f.labels.Get("run_id") == run:
			watchdog = f.at
		case !f.at.Before(onset):
			t.Errorf("%s fired after the onset where the incident does not explain it: %s", name, k)
		}
	}

	bad, ok := nvlink[badNode]
	if !ok || bad.Sub(onset) > 2*time.Minute {
		t.Errorf("GPUNVLinkBandwidthDegraded for %s: fired %v at %s, want within 2m of the drop at %s", badNode, ok, bad.Format(time.TimeOnly), onset.Format(time.TimeOnly))
	}
	if badGPUs != 8 {
		t.Errorf("GPUNVLinkBandwidthDegraded fired for %d of %s's 8 GPUs", badGPUs, badNode)
	}
	for host, at := range nvlink {
		if host != badNode && !at.After(bad) {
			t.Errorf("GPUNVLinkBandwidthDegraded fired for %s at %s, not after %s's %s", host, at.Format(time.TimeOnly), badNode, bad.Format(time.TimeOnly))
		}
	}
	if len(errHosts) != 1 || !errHosts[badNode] {
		t.Errorf("GPUNVLinkErrors fired on %v, want %s alone", errHosts, badNode)
	}
	if stalled.IsZero() || stalled.Sub(onset) > 4*time.Minute {
		t.Errorf("TrainingStalled for %s fired at %s, want within 4m of the onset", run, stalled.Format(time.TimeOnly))
	}
	if watchdog.IsZero() || !watchdog.After(onset.Add(10*time.Minute)) || watchdog.Sub(onset) > 12*time.Minute {
		t.Errorf("NCCLWatchdogTimeout for %s fired at %s, want once the watchdog lines are logged (02:57:20)", run, watchdog.Format(time.TimeOnly))
	}
}

// decoyAlert reports whether an alert is about one of the scenario's
// decoys, which are real events before the onset (an out-of-memory rank
// and its run's restart).
func decoyAlert(ls labels.Labels, truth scenario.GroundTruth) bool {
	for _, d := range truth.Decoys {
		if d.Where.RunID != "" && ls.Get("run_id") == d.Where.RunID {
			return true
		}
	}
	return false
}
