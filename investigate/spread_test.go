package investigate_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/weftdb/weft/investigate"
)

// TestSpread reads the spread of a run's ranks and GPUs: in
// thermal-straggler the throttled GPU's rank is the one compute-time
// outlier, shown with its thermal clock events; in dataloader-starvation
// every GPU's utilization falls together and none stands out.
func TestSpread(t *testing.T) {
	ctx := context.Background()
	r := replay(t, "thermal-straggler", scenarioOptions())
	truth := r.data.Truth
	sp, err := r.iv.Spread(ctx, investigate.SpreadRequest{Selector: `{run_id="` + truth.Affected.RunID + `"}`,
		Metric: "training_step_compute_seconds", By: "rank", Time: truth.Onset.Add(10 * time.Minute), Window: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Members) != 64 || len(sp.Outliers) != 1 || sp.Outliers[0].Key != strconv.Itoa(truth.Where.Ranks[0]) {
		t.Fatalf("%d members, outliers %+v; truth rank %v", len(sp.Members), sp.Outliers, truth.Where.Ranks)
	}
	o := sp.Outliers[0]
	thermal := false
	for _, h := range o.Hardware {
		if h.Name == "thermal_clock_event_seconds" && h.Value > 0 && h.Value > h.Median {
			thermal = true
		}
	}
	if !thermal || o.Z <= 0 {
		t.Errorf("outlier %+v: want slower, with thermal clock events over the run's median", o)
	}

	r = replay(t, "dataloader-starvation", scenarioOptions())
	truth = r.data.Truth
	sp, err = r.iv.Spread(ctx, investigate.SpreadRequest{Selector: `{run_id="` + truth.Affected.RunID + `"}`,
		Metric: "DCGM_FI_DEV_GPU_UTIL", Time: truth.Onset.Add(5 * time.Minute), Window: 3 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Members) != 64 || len(sp.Outliers) != 0 || sp.Median > 70 {
		t.Errorf("GPU utilization: %d members, median %.1f, outliers %+v; want 64, all fallen together, none out", len(sp.Members), sp.Median, sp.Outliers)
	}
	for _, bad := range []investigate.SpreadRequest{{Selector: `{run_id="x"}`}, {Selector: `{run_id="x"}`, Metric: "up", By: "pod"}, {Selector: "", Metric: "up"}, {Selector: `{run_id="x"}`, Metric: "rate("}} {
		if _, err := r.iv.Spread(ctx, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
