package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIScenarioThermalStraggler replays the thermal-straggler scenario
// (bench/scenario: a 64-GPU pre-training run among a 17-node cluster, one
// GPU whose cooling fails, and a decoy GPU running 5 °C warmer) into the
// real weft binary, opens the run's workload page on temperature, and
// checks that the heatmap marks exactly the scenario's faulty GPU.
func TestUIScenarioThermalStraggler(t *testing.T) {
	chromiumPath(t)
	_, base := startWeft(t, "weft")
	d, o, _ := replayScenario(t, base, "thermal-straggler", 1, 75*time.Minute, 30*time.Minute)
	start := o.Start
	w := d.Truth.Where
	if len(w.GPUUUIDs) != 1 || w.RunID == "" {
		t.Fatalf("truth %+v: want one GPU of one run", w)
	}
	b := newBrowser(t)
	rng := url.Values{"from": {fmt.Sprint(start.Unix())}, "to": {fmt.Sprint(start.Add(o.Duration).Unix())}, "gpu": {"temp"}}
	b.do(t, chromedp.Navigate(base+"/#/workload/run_id/"+url.PathEscape(w.RunID)+"?"+rng.Encode()))
	b.waitJS(t, `document.querySelector('[data-testid=heatmap] canvas[data-state=drawn]')`)
	rows := eval[int](t, b, `document.querySelectorAll('[data-testid=gpu-row]').length`)
	marked := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=gpu-row][data-outlier=true] a.pivot[data-pivot=UUID]')].map(a => a.title.match(/"(.*)"/)[1])`)
	slices.Sort(marked)
	if rows != 64 || !slices.Equal(marked, w.GPUUUIDs) {
		t.Fatalf("the temperature heatmap has %d GPUs and marks %q, want 64 and exactly the faulty %q (nodes %v, ranks %v)", rows, marked, w.GPUUUIDs, w.Nodes, w.Ranks)
	}
	b.noConsoleErrors(t)
	b.screenshot(t, screenshotDir(t), "scenario-thermal.png")
}

// TestUIInvestigationNVLinkStall replays the nvlink-stall scenario into the
// real weft binary and opens the investigation page for the stalled run two
// minutes after its first symptom, as the alert on it would: the top-ranked
// cause must be the scenario's ground truth (NVLink degradation on its
// node), its strongest evidence drawn, and its node a pivot to that node's
// workload page. The time from navigation to the drawn evidence is logged.
func TestUIInvestigationNVLinkStall(t *testing.T) {
	chromiumPath(t)
	_, base := startWeft(t, "weft")
	d, _, _ := replayScenario(t, base, "nvlink-stall", 3, 75*time.Minute, 35*time.Minute)
	truth := d.Truth
	first := truth.Onset // the first symptom, which an alert follows
	for i, e := range truth.Symptoms {
		if i == 0 || e.At.Before(first) {
			first = e.At
		}
	}
	if truth.Affected.RunID == "" || len(truth.Where.Nodes) != 1 {
		t.Fatalf("truth %+v: want one run and one node", truth)
	}
	b := newBrowser(t)
	q := url.Values{
		"selector": {`{run_id="` + truth.Affected.RunID + `"}`},
		"at":       {fmt.Sprint(first.Add(2 * time.Minute).Unix())},
	}
	t0 := time.Now()
	b.do(t, chromedp.Navigate(base+"/#/investigate?"+q.Encode()))
	b.waitJS(t, `document.querySelector('[data-testid=cause][data-rank="1"] [data-testid=evidence-graph][data-state=drawn]')`)
	t.Logf("investigation page: navigation to the top cause's drawn evidence in %.2f s", time.Since(t0).Seconds())
	kind := eval[string](t, b, `document.querySelector('[data-testid=cause][data-rank="1"]').dataset.kind`)
	summary := eval[string](t, b, `document.querySelector('[data-testid=cause][data-rank="1"] [data-testid=cause-summary]').innerText`)
	hosts := eval[[]string](t, b, `[...document.querySelectorAll('[data-testid=cause][data-rank="1"] [data-testid=cause-where] a.pivot[data-pivot=host]')].map(a => a.title.match(/"(.*)"/)[1])`)
	if kind != string(truth.Cause) || !slices.Equal(hosts, truth.Where.Nodes) {
		t.Fatalf("top cause %q (kind %s, hosts %q), truth %s on %q", summary, kind, hosts, truth.Cause, truth.Where.Nodes)
	}
	if class := eval[string](t, b, `document.querySelector('[data-testid=symptom]').dataset.class`); class == "" {
		t.Errorf("the symptom has no class")
	}
	if n := eval[int](t, b, `document.querySelectorAll('[data-testid=cause][data-rank="1"] [data-testid=evidence-row]').length`); n == 0 {
		t.Errorf("the top cause lists no evidence")
	}
	if ink := canvasInk(t, b, `[data-testid=cause][data-rank="1"] [data-testid=evidence-graph] .plot canvas`); ink < 500 {
		t.Errorf("evidence graph canvas has %d coloured pixels: nothing drawn", ink)
	}
	b.noConsoleErrors(t)
	b.screenshot(t, screenshotDir(t), "investigate.png")
	b.do(t, chromedp.Click(`[data-testid=cause][data-rank="1"] [data-testid=cause-where] a.pivot[data-pivot=host]`))
	b.waitJS(t, `document.querySelector('[data-testid=workload-page][data-key=host]')`)
	if v := eval[string](t, b, `document.querySelector('[data-testid=workload-value]').innerText`); v != truth.Where.Nodes[0] {
		t.Errorf("the node pivot opened %q", v)
	}
	b.noConsoleErrors(t)
}
