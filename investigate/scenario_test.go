package investigate_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/investigate"
)

// TestScenarios replays every scenario of bench/scenario into a weft of its
// own and investigates its affected workload two minutes after the onset,
// as an alert on it would: the top-ranked cause must be the scenario's
// ground truth (bench/scenario/truth.go), in kind and place, and for a
// cause outside every GPU the answer must blame none.
func TestScenarios(t *testing.T) {
	for _, name := range scenario.Names() {
		t.Run(name, func(t *testing.T) {
			r := replay(t, name, scenarioOptions())
			truth := r.data.Truth
			sym := investigate.Symptom{Selector: workloadSelector(truth.Affected), Time: firstSymptom(truth).Add(2 * time.Minute)}
			rep, err := r.iv.Investigate(context.Background(), sym)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: investigate took %.3f s (%d series, %d log streams, %d lines), symptom %s onset %s (%+.0f s from the cause's)",
				name, rep.Seconds, rep.Scope.Series, rep.Scope.Streams, rep.Scope.Lines, rep.Symptom.Class, rep.Symptom.Onset.Format(time.TimeOnly), rep.Symptom.Onset.Sub(truth.Onset).Seconds())
			if len(rep.Causes) == 0 {
				t.Fatalf("no cause found; symptom %+v", rep.Symptom)
			}
			top := rep.Causes[0]
			if msg := matchesTruth(top, truth); msg != "" {
				for _, c := range rep.Causes[:min(10, len(rep.Causes))] {
					b, _ := json.Marshal(c.Evidence)
					t.Logf("cause %d %s score %.3f m %.1f peer %.1f onset %+.0f: %s", c.Rank, c.Summary, c.Score, c.Magnitude, c.PeerDeviation, c.OnsetOffset, truncate(string(b), 400))
				}
				t.Fatalf("top cause %q: %s", top.Summary, msg)
			}
			if top.Onset.Before(truth.Onset.Add(-time.Minute)) || top.Onset.After(truth.Onset.Add(2*time.Minute)) {
				t.Errorf("top cause onset %s, truth %s", top.Onset, truth.Onset)
			}
			t.Logf("top cause: %s (score %.2f, magnitude %.1f, peer deviation %.1f, %d evidence)", top.Summary, top.Score, top.Magnitude, top.PeerDeviation, len(top.Evidence))
		})
	}
}

// firstSymptom is when the first symptom shows in the data (the
// simulation's observation, in the truth): an alert fires after it.
func firstSymptom(gt scenario.GroundTruth) time.Time {
	first := gt.Onset
	for i, e := range gt.Symptoms {
		if i == 0 || e.At.Before(first) {
			first = e.At
		}
	}
	return first
}

// workloadSelector is the selector an alert on the affected workload
// carries: its run, or its service.
func workloadSelector(w scenario.Where) string {
	if w.RunID != "" {
		return `{run_id=` + strconv.Quote(w.RunID) + `}`
	}
	return `{service=` + strconv.Quote(w.Service) + `}`
}

// matchesTruth says what in c differs from the ground truth ("" if
// nothing).
func matchesTruth(c investigate.Cause, gt scenario.GroundTruth) string {
	if string(c.Kind) != string(gt.Cause) {
		return "kind " + string(c.Kind) + ", truth " + string(gt.Cause)
	}
	w := c.Where
	if gt.NoGPUAtFault && len(w.GPUUUIDs) > 0 {
		return "blames GPUs " + strconv.Itoa(len(w.GPUUUIDs)) + " though no GPU is at fault"
	}
	if len(gt.Where.GPUUUIDs) > 0 && !sameSet(w.GPUUUIDs, gt.Where.GPUUUIDs) {
		return "GPUs differ from the truth's"
	}
	if len(gt.Where.Nodes) > 0 && !sameSet(w.Nodes, gt.Where.Nodes) {
		return "nodes " + strconv.Quote(join(w.Nodes)) + ", truth " + strconv.Quote(join(gt.Where.Nodes))
	}
	if gt.Where.Dependency != "" && w.Dependency != gt.Where.Dependency {
		return "dependency " + strconv.Quote(w.Dependency) + ", truth " + strconv.Quote(gt.Where.Dependency)
	}
	if gt.Where.Version != "" && w.Version != gt.Where.Version {
		return "version " + strconv.Quote(w.Version) + ", truth " + strconv.Quote(gt.Where.Version)
	}
	if gt.Cause == scenario.CauseNoisyNeighbour && gt.Where.RunID != "" && w.RunID != gt.Where.RunID {
		return "neighbour " + strconv.Quote(w.RunID) + ", truth " + strconv.Quote(gt.Where.RunID)
	}
	return ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func join(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
