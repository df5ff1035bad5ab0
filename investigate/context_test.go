package investigate_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/investigate"
)

// TestContext replays nvlink-stall and reads its training run's context
// back from the index: through an alias of run_id, and through node,
// which GPU series spell host.
func TestContext(t *testing.T) {
	r := replay(t, "nvlink-stall", scenarioOptions())
	start, end := r.opts.Start, r.opts.Start.Add(r.opts.Duration)
	const run = "pt-llama70b-0427"

	// What the data holds: series and streams of the run.
	wantSeries, wantNames := 0, map[string]int{}
	for _, s := range r.data.Series {
		if label(s.Labels, "run_id") == run {
			wantSeries++
			wantNames[label(s.Labels, "__name__")]++
		}
	}
	wantStreams, wantLines := 0, 0
	for _, st := range r.data.Streams {
		if label(st.Labels, "run_id") == run {
			wantStreams++
			wantLines += len(st.Entries)
		}
	}

	wc, err := r.iv.Context(context.Background(), `{ai_run_id="`+run+`"}`, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if wc.Metrics.Series != wantSeries {
		t.Errorf("metric series %d, data has %d", wc.Metrics.Series, wantSeries)
	}
	for _, n := range wc.Metrics.Names {
		if wantNames[n.Name] != n.Count {
			t.Errorf("%s: %d series, data has %d", n.Name, n.Count, wantNames[n.Name])
		}
	}
	if len(wc.Metrics.Names) != len(wantNames) {
		t.Errorf("%d metric names, data has %d", len(wc.Metrics.Names), len(wantNames))
	}
	if wc.Logs.Streams != wantStreams || int(wc.Logs.Entries) != wantLines {
		t.Errorf("logs: %d streams, %d entries; data has %d, %d", wc.Logs.Streams, wc.Logs.Entries, wantStreams, wantLines)
	}
	nodes := make([]string, 8)
	for i := range nodes {
		nodes[i] = "node-" + strconv.Itoa(i+1)
	}
	if got := wc.Context["node"]; !slices.Equal(got, nodes) {
		t.Errorf("nodes %v, want %v", got, nodes)
	}
	if got := wc.Context["rank"]; len(got) != 64 || got[0] != "0" || got[63] != "63" {
		t.Errorf("ranks %v", got)
	}
	if got := wc.Context["gpu_uuid"]; len(got) != 64 {
		t.Errorf("%d GPUs, want 64", len(got))
	}
	for k, want := range map[string]string{"model": "llama-3-70b", "team": "pretrain", "run_id": run, "dataset": "fineweb-edu-v2"} {
		if got := wc.Context[k]; !slices.Equal(got, []string{want}) {
			t.Errorf("%s: %v, want [%s]", k, got, want)
		}
	}
	if wc.Metrics.Query != `{run_id="`+run+`"}` || !slices.Equal(wc.Logs.Queries, []string{`{run_id="` + run + `"}`}) ||
		wc.Traces.Query != `{ resource.ai.run.id = "`+run+`" }` {
		t.Errorf("queries %q %q %q", wc.Metrics.Query, wc.Logs.Queries, wc.Traces.Query)
	}

	// node="node-6" finds the trainer series (node) and the GPU series
	// (host, from Hostname) alike.
	wc, err = r.iv.Context(context.Background(), `{node="node-6"}`, start, end)
	if err != nil {
		t.Fatal(err)
	}
	gpuSeries := 0
	for _, n := range wc.Metrics.Names {
		if strings.HasPrefix(n.Name, "DCGM_FI_DEV_") {
			gpuSeries += n.Count
		}
	}
	if gpuSeries == 0 || !slices.Contains(wc.Context["run_id"], run) || len(wc.Context["gpu_uuid"]) != 8 {
		t.Errorf("node-6: %d GPU series, runs %v, %d GPUs", gpuSeries, wc.Context["run_id"], len(wc.Context["gpu_uuid"]))
	}
	if !strings.Contains(wc.Metrics.Query, `{host="node-6"}`) || !strings.Contains(wc.Metrics.Query, `{node="node-6"}`) {
		t.Errorf("node query %q", wc.Metrics.Query)
	}

	// The walk-through of docs/investigation.md, over HTTP: the alert's
	// labels and expression, two minutes after the onset.
	var ctxAns struct {
		Status string
		Data   investigate.WorkloadContext
	}
	httpGetJSON(t, r.base+"/weft/api/v1/context?"+url.Values{"match": {`{run_id="` + run + `"}`},
		"start": {start.Format(time.RFC3339)}, "end": {end.Format(time.RFC3339)}}.Encode(), &ctxAns)
	if ctxAns.Status != "success" || ctxAns.Data.Metrics.Series != wantSeries {
		t.Errorf("GET context: %+v", ctxAns)
	}
	var invAns struct {
		Status string
		Data   investigate.Report
	}
	httpGetJSON(t, r.base+"/weft/api/v1/investigate?"+url.Values{
		"alert": {`{"alertname":"TrainingStalled","run_id":"` + run + `","severity":"page"}`},
		"query": {`sum by (run_id) (rate(training_step_total{run_id="` + run + `"}[2m])) == 0`},
		"time":  {r.data.Truth.Onset.Add(2 * time.Minute).Format(time.RFC3339)},
	}.Encode(), &invAns)
	if invAns.Status != "success" || len(invAns.Data.Causes) == 0 || invAns.Data.Causes[0].Kind != investigate.KindNVLink || invAns.Data.Symptom.Class != investigate.SymptomStall ||
		!slices.Equal(invAns.Data.Causes[0].Where.Nodes, []string{"node-6"}) {
		t.Errorf("GET investigate: %+v", invAns)
	} else {
		t.Logf("walk-through: %s (score %.2f), symptom %s at %s", invAns.Data.Causes[0].Summary, invAns.Data.Causes[0].Score, invAns.Data.Symptom.Class, invAns.Data.Symptom.Onset)
	}

	// Pivots: from a GPU series to its run, its GPU and its node; from
	// the node's kernel log to the node's GPU series; from a span's
	// resource to the run.
	pv, err := r.iv.Pivot(context.Background(), investigate.PivotRequest{Series: `DCGM_FI_DEV_GPU_TEMP{Hostname="node-6", gpu="3"}`, Start: start, End: end})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]investigate.Pivot{}
	for _, p := range pv.Pivots {
		keys[p.Key] = p
	}
	if keys["run_id"].Value != run || keys["run_id"].Streams != wantStreams || keys["run_id"].Series != wantSeries ||
		keys["node"].Value != "node-6" || keys["node"].Streams == 0 || keys["gpu_uuid"].Series == 0 {
		t.Errorf("pivot from a GPU series: %+v", pv)
	}
	pv, err = r.iv.Pivot(context.Background(), investigate.PivotRequest{Stream: `{job="kmsg", node="node-6"}`, Start: start, End: end})
	if err != nil {
		t.Fatal(err)
	}
	nodePivot := investigate.Pivot{}
	for _, p := range pv.Pivots {
		if p.Key == "node" {
			nodePivot = p
		}
	}
	if nodePivot.Value != "node-6" || nodePivot.Series < 8*30 {
		t.Errorf("pivot from the kernel log: %+v", pv)
	}
	pv, err = r.iv.Pivot(context.Background(), investigate.PivotRequest{Resource: map[string]string{"ai.run.id": run, "host.name": "node-6", "service.name": "trainer"}, Start: start, End: end})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Pivots) < 3 || pv.Pivots[0].Key != "run_id" || pv.Pivots[0].Series != wantSeries || pv.From["node"] != "node-6" {
		t.Errorf("pivot from a span: %+v", pv)
	}
	if _, err := r.iv.Pivot(context.Background(), investigate.PivotRequest{Series: `{run_id="nope"}`, Start: start, End: end}); !errors.Is(err, investigate.ErrInvalid) {
		t.Errorf("pivot from nothing: %v", err)
	}

	// Bad input is the caller's.
	for _, sel := range []string{"", "{", `{run_id=~"("}`} {
		if _, err := r.iv.Context(context.Background(), sel, start, end); err == nil || !errors.Is(err, investigate.ErrInvalid) {
			t.Errorf("selector %q: %v, want ErrInvalid", sel, err)
		}
	}
	if _, err := r.iv.Context(context.Background(), `{run_id="x"}`, end, start); !errors.Is(err, investigate.ErrInvalid) {
		t.Errorf("end before start: %v", err)
	}
}

func httpGetJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %d: %v", u, resp.StatusCode, err)
	}
}

func label(ls []scenario.Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}
