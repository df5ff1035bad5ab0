package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAlertCarriesProbableCause: the seeds' story with the real binaries.
// nvlink-stall is replayed into weft; a rule that opts in to investigation
// (weft_investigate: "true") fires on the stalled run (its query_offset
// reaches back into the replayed hour), and the page the real Alertmanager
// delivers to its webhook says why: "node-6 NVLink degradation — probable
// cause of stall", with a link to the investigation. The incidents API
// then holds the page's investigation under node-6.
func TestAlertCarriesProbableCause(t *testing.T) {
	sink := newWebhookSink(t)
	am := startAlertmanager(t, sink.srv.URL+"/hook")

	dir := t.TempDir()
	rules := filepath.Join(dir, "training.yml")
	for p, c := range map[string]string{
		rules: `
groups:
  - name: training
    interval: 1s
    query_offset: 30m
    rules:
      - alert: TrainingStalled
        expr: sum by (run_id) (rate(training_step_total[2m])) == 0
        labels:
          severity: critical
        annotations:
          summary: 'Training run {{ $labels.run_id }} makes no progress'
          weft_investigate: "true"
`,
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	p := startProcess(t, "weft", buildWeft(t),
		"-data-dir", filepath.Join(dir, "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", "", "-otlp-http-addr", "",
		"-log-level", "warn",
		"-rules.file", rules,
		"-alertmanager.url", am,
		"-rules.external-url", "http://weft.example:9338/",
	)
	base := "http://" + addr
	waitReady(t, p, base+"/-/ready")

	// The cause 35 minutes ago and the stall 20 s later: 30 minutes back,
	// the run has not stepped for a few minutes.
	d, o, _ := replayScenario(t, base, "nvlink-stall", 3, 70*time.Minute, 35*time.Minute)

	page := sink.wait(t, 2*time.Minute, "TrainingStalled", "firing")
	run := d.Truth.Affected.RunID
	if page.Labels["run_id"] != run {
		t.Fatalf("page labels %v, want run_id %s", page.Labels, run)
	}
	if got := page.Annotations["probable_cause"]; got != "node-6 NVLink degradation — probable cause of stall" {
		t.Errorf("page probable_cause %q (annotations %v)", got, page.Annotations)
	}
	link, err := url.Parse(page.Annotations["investigation_url"])
	if err != nil || link.Host != "weft.example:9338" || link.Path != "/weft/api/v1/investigate" || !strings.Contains(link.Query().Get("alert"), run) {
		t.Errorf("page investigation_url %q", page.Annotations["investigation_url"])
	}

	var inc struct {
		Groups []struct {
			Value     string   `json:"value"`
			Incidents []string `json:"incidents"`
			Runs      []string `json:"runs"`
		} `json:"groups"`
	}
	promGet(t, base+"/weft/api/v1/incidents?"+url.Values{"by": {"host"}, "min_count": {"1"}, "start": {o.Start.Format(time.RFC3339)}}.Encode(), &inc)
	if len(inc.Groups) != 1 || inc.Groups[0].Value != "node-6" || len(inc.Groups[0].Runs) != 1 || inc.Groups[0].Runs[0] != run {
		t.Errorf("incidents by host: %+v", inc.Groups)
	}
}
