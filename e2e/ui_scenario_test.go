package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weftdb/weft/bench/scenario"
)

// TestUIScenarioThermalStraggler replays the thermal-straggler scenario
// (bench/scenario: a 64-GPU pre-training run among a 17-node cluster, one
// GPU whose cooling fails, and a decoy GPU running 5 °C warmer) into the
// real weft binary, opens the run's workload page on temperature, and
// checks that the heatmap marks exactly the scenario's faulty GPU.
func TestUIScenarioThermalStraggler(t *testing.T) {
	chromiumPath(t)
	_, base := startWeft(t, "weft")
	start := time.Now().UTC().Truncate(time.Minute).Add(-75 * time.Minute)
	o := scenario.Options{Seed: 1, Start: start, Duration: time.Hour, Onset: 30 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, rep, err := scenario.Run(ctx, "thermal-straggler", o, scenario.Target{URL: base}, scenario.ReplayOptions{})
	if err != nil {
		t.Fatalf("replay: %v (report %+v)", err, rep)
	}
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
