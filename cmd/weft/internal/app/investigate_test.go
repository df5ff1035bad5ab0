package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/ruler"
)

// TestAlertCarriesInvestigation: the seeds' story end to end in one
// server. nvlink-stall is replayed into weft; a rule that opts in
// (weft_investigate: "true") fires on the stalled run, evaluated with a
// query_offset that puts it a few minutes after the stall, and its
// notification to Alertmanager says "node-6 NVLink degradation — probable
// cause of stall". A second rule on the same run that does not opt in is
// kept as an incident with its labels: /weft/api/v1/incidents groups both
// under the run, and the investigated one under node-6.
func TestAlertCarriesInvestigation(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var sent []map[string]any
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var as []map[string]any
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &as); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		sent = append(sent, as...)
		mu.Unlock()
	}))
	defer am.Close()
	amURL, _ := url.Parse(am.URL)
	amc := config.DefaultAlertmanagerConfig
	amc.ServiceDiscoveryConfigs = discovery.Configs{discovery.StaticConfig{
		&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(amURL.Host)}}, Source: "test"},
	}}

	// The cause 35 minutes ago, the stall 20 s later; evaluated 30
	// minutes back, the step rate has been 0 for a few minutes.
	o := scenario.Options{Seed: 3, Start: time.Now().UTC().Truncate(time.Minute).Add(-70 * time.Minute), Duration: time.Hour, Onset: 35 * time.Minute}
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte(`
groups:
  - name: training
    interval: 500ms
    query_offset: 30m
    rules:
      - alert: TrainingStalled
        expr: sum by (run_id) (rate(training_step_total[2m])) == 0
        annotations:
          summary: 'run {{ $labels.run_id }} makes no progress'
          weft_investigate: "true"
      - alert: RunIdle
        expr: sum by (run_id) (rate(training_step_total[2m])) == 0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, filepath.Join(dir, "data"))
	// Under the race detector on a shared machine one investigation takes
	// many times its usual second: the test is of the answer, not the bound.
	opts.Rules.Ruler.InvestigateTimeout = 3 * time.Minute
	opts.Rules.Config = ruler.Config{RuleFiles: []string{rules}, Alerting: config.AlertingConfig{AlertmanagerConfigs: config.AlertmanagerConfigs{&amc}}}
	a := startApp(t, opts)
	base := "http://" + a.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, rep, err := scenario.Run(ctx, "nvlink-stall", o, scenario.Target{URL: base}, scenario.ReplayOptions{})
	if err != nil {
		t.Fatalf("replay: %v (%+v)", err, rep)
	}
	run := d.Truth.Affected.RunID

	var page map[string]any
	deadline := time.Now().Add(4 * time.Minute)
	for page == nil {
		mu.Lock()
		for _, al := range sent {
			if ls, _ := al["labels"].(map[string]any); ls["alertname"] == "TrainingStalled" && ls["run_id"] == run {
				page = al
			}
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no TrainingStalled notification for %s; sent %v", run, sent)
		}
		time.Sleep(100 * time.Millisecond)
	}
	anns, _ := page["annotations"].(map[string]any)
	cause, _ := anns[ruler.CauseAnnotation].(string)
	if cause != "node-6 NVLink degradation — probable cause of stall" || anns["summary"] != "run "+run+" makes no progress" {
		t.Fatalf("notification annotations %v", anns)
	}
	if link, _ := anns[ruler.InvestigationAnnotation].(string); !strings.Contains(link, "/weft/api/v1/investigate?alert=") {
		t.Errorf("investigation_url %q", link)
	}

	// Both alerts are kept: the investigated one with its causes' host.
	client := &http.Client{Timeout: 20 * time.Second}
	groups := func(by string) []map[string]any {
		t.Helper()
		q := url.Values{"by": {by}, "min_count": {"1"}, "start": {o.Start.Format(time.RFC3339)}}
		code, body := getBody(t, client, base+"/weft/api/v1/incidents?"+q.Encode())
		var ans struct {
			Data struct {
				Groups []map[string]any `json:"groups"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &ans); code != http.StatusOK || err != nil {
			t.Fatalf("incidents by %s: %d %s", by, code, body)
		}
		return ans.Data.Groups
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		g := groups("run_id")
		if len(g) > 0 && g[0]["value"] == run && g[0]["count"] == 2.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("incidents by run_id: %v, want %s twice (the investigation and the plain alert)", g, run)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g := groups("host"); len(g) != 1 || g[0]["value"] != "node-6" || g[0]["count"] != 1.0 {
		t.Errorf("incidents by host: %v, want node-6 once", g)
	}
}
