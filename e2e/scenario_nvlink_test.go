package e2e

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weftdb/weft/bench/scenario"
)

// TestScenarioNVLinkStall replays the nvlink-stall scenario (an hour of a
// 17-node cluster: metrics by remote write, logs by Loki push and OTLP)
// into the real weft binary, then checks through the Prometheus and Loki
// query APIs that every sample and line arrived, and that the incident's
// ground truth can be read back: node-6's NVLink throughput collapses at
// the onset, the run's step counter stops, every rank's NCCL watchdog
// fires, and the other runs keep stepping.
func TestScenarioNVLinkStall(t *testing.T) {
	_, base := startWeft(t, "weft")
	d, o, rep := replayScenario(t, base, "nvlink-stall", 3, 75*time.Minute, 35*time.Minute)
	start := o.Start
	c := d.Counts()
	if rep.Metrics.Sent != c.Samples+c.StaleMarkers || rep.Loki.Sent != c.LokiLines || rep.OTLPLogs.Sent != c.OTLPLines || !rep.Traces.Skipped {
		t.Fatalf("report %+v, counts %+v", rep, c)
	}
	end := start.Add(o.Duration + 2*time.Minute)
	window := (o.Duration + 3*time.Minute).String()

	// Every family has exactly its generated samples (staleness markers
	// are stored but never counted), and no other family exists.
	want := map[string]int{}
	for _, s := range d.Series {
		name := ""
		for _, l := range s.Labels {
			if l.Name == "__name__" {
				name = l.Value
			}
		}
		for _, v := range s.V {
			if !math.IsNaN(v) {
				want[name]++
			}
		}
	}
	var names []string
	promGet(t, base+"/api/v1/label/__name__/values?"+url.Values{"start": {unix(start)}, "end": {unix(end)}}.Encode(), &names)
	wantNames := make([]string, 0, len(want))
	for n := range want {
		wantNames = append(wantNames, n)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("metric names %v, want %v", names, wantNames)
	}
	total := 0
	for _, name := range wantNames {
		got := scalar(t, promQuery(t, base, `sum(count_over_time({__name__="`+name+`"}[`+window+`]))`, end))
		if int(got) != want[name] {
			t.Errorf("%s: %v samples stored, %d sent", name, got, want[name])
		}
		total += int(got)
	}
	if total != c.Samples {
		t.Errorf("%d samples stored, %d generated", total, c.Samples)
	}
	var series []map[string]string
	promGet(t, base+"/api/v1/series?"+url.Values{"match[]": {`{__name__=~".+"}`}, "start": {unix(start)}, "end": {unix(end)}}.Encode(), &series)
	if len(series) != c.Series {
		t.Errorf("%d series stored, %d generated", len(series), c.Series)
	}
	if lines := lokiScalar(t, base, `sum(count_over_time({service_name=~".+"}[`+window+`]))`, end); int(lines) != c.Lines {
		t.Errorf("%v log lines stored, %d sent", lines, c.Lines)
	}

	// The ground truth, read back.
	onset := d.Truth.Onset
	run := `run_id="pt-llama70b-0427"`
	nv := promQuery(t, base, `sum by (Hostname) (rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{`+run+`}[1m]))`, onset.Add(50*time.Second))
	if len(nv) != 8 {
		t.Fatalf("NVLink throughput of %d nodes, want 8", len(nv))
	}
	for _, s := range nv {
		v, _ := strconv.ParseFloat(s.Value, 64)
		if (s.Metric["Hostname"] == "node-6") != (v < 2e7) {
			t.Errorf("%s: NVLink %.0f KiB/s 50 s after the onset; only node-6 should have collapsed", s.Metric["Hostname"], v)
		}
	}
	if v := scalar(t, promQuery(t, base, `sum(rate(training_step_total{`+run+`}[5m]))`, onset.Add(-time.Minute))); v < 10 {
		t.Errorf("the run steps %.2f/s over its ranks before the onset", v)
	}
	if v := scalar(t, promQuery(t, base, `sum(rate(training_step_total{`+run+`}[5m]))`, onset.Add(8*time.Minute))); v != 0 {
		t.Errorf("the run still steps (%.2f/s) after the stall", v)
	}
	if v := scalar(t, promQuery(t, base, `sum(rate(training_step_total{run_id="ft-mixtral-0311"}[5m]))`, onset.Add(8*time.Minute))); v <= 0 {
		t.Errorf("a healthy run stopped stepping")
	}
	watchdogs := lokiScalar(t, base, `sum(count_over_time({`+run+`} |= "Watchdog caught collective operation timeout" [`+window+`]))`, end)
	if int(watchdogs) != 2*64 {
		t.Errorf("%v watchdog lines, want two timeouts on each of 64 ranks", watchdogs)
	}
}

// replayScenario replays the scenario name (seed, an hour starting ago
// before now, its cause onset into it) into the weft at base, and fails the
// test if any of it was refused.
func replayScenario(t *testing.T, base, name string, seed int64, ago, onset time.Duration) (*scenario.Data, scenario.Options, scenario.Report) {
	t.Helper()
	o := scenario.Options{Seed: seed, Start: time.Now().UTC().Truncate(time.Minute).Add(-ago), Duration: time.Hour, Onset: onset}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, rep, err := scenario.Run(ctx, name, o, scenario.Target{URL: base}, scenario.ReplayOptions{})
	if err != nil {
		t.Fatalf("replay %s: %v (report %+v)", name, err, rep)
	}
	return d, o, rep
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func scalar(tb testing.TB, r []promSample) float64 {
	tb.Helper()
	if len(r) != 1 {
		tb.Fatalf("%d series, want one: %v", len(r), r)
	}
	v, err := strconv.ParseFloat(r[0].Value, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// lokiScalar runs a LogQL instant query that answers one number.
func lokiScalar(tb testing.TB, base, query string, at time.Time) float64 {
	tb.Helper()
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	promGet(tb, base+"/loki/api/v1/query?"+url.Values{"query": {query}, "time": {unix(at)}}.Encode(), &data)
	if len(data.Result) != 1 {
		tb.Fatalf("%s: %d results, want one", query, len(data.Result))
	}
	s, _ := data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}
