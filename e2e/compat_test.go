package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompatEndpoints drives weft's compatibility endpoints with real
// clients: VictoriaMetrics-style import and export, a real Prometheus
// federating weft, Loki's delete API and buildinfo, and the ingest
// counters in /metrics.
func TestCompatEndpoints(t *testing.T) {
	promBin := peerBinary(t, "prometheus")
	addr := freeAddr(t)
	weft := startProcess(t, "weft", buildWeft(t),
		"-data-dir", filepath.Join(t.TempDir(), "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", "", "-otlp-http-addr", "",
		"-enable-admin-api",
		"-log-level", "warn",
	)
	base := "http://" + addr
	waitReady(t, weft, base+"/-/ready")

	// Import: two GPU series (one with dcgm-exporter's UUID label, which
	// sorts before __name__) and a training loss, the last 30 s.
	now := time.Now().Truncate(time.Second)
	var body bytes.Buffer
	for _, s := range []struct{ metric, values string }{
		{`{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-a","gpu":"0","job":"dcgm"}`, "[10,20,30]"},
		{`{"__name__":"DCGM_FI_DEV_GPU_UTIL","UUID":"GPU-c","gpu":"1","job":"dcgm"}`, "[11,21,31]"},
		{`{"__name__":"training_loss","UUID":"GPU-b","run_id":"r1","job":"trainer"}`, "[0.9,0.8,0.7]"},
	} {
		fmt.Fprintf(&body, `{"metric":%s,"values":%s,"timestamps":[%d,%d,%d]}`+"\n", s.metric, s.values,
			now.Add(-30*time.Second).UnixMilli(), now.Add(-20*time.Second).UnixMilli(), now.Add(-10*time.Second).UnixMilli())
	}
	code, msg := httpDo(t, http.MethodPost, base+"/api/v1/import", "", body.Bytes())
	if code != http.StatusNoContent {
		t.Fatalf("import: %d %s", code, msg)
	}
	code, exported := httpDo(t, http.MethodGet, base+"/api/v1/export?"+url.Values{"match[]": {`{job=~"dcgm|trainer"}`}}.Encode(), "", nil)
	if code != 200 || strings.Count(exported, "\n") != 3 || !strings.Contains(exported, `"values":[0.9,0.8,0.7]`) {
		t.Fatalf("export: %d\n%s", code, exported)
	}

	// A real Prometheus federates weft.
	promAddr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: federate
    honor_labels: true
    metrics_path: /federate
    params:
      'match[]': ['{job="dcgm"}', 'training_loss']
    static_configs: [{targets: [%q]}]
`, addr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, "prometheus", promBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promURL := "http://" + promAddr
	waitReady(t, prom, promURL+"/-/ready")
	deadline := time.Now().Add(30 * time.Second)
	var got []promSample
	for time.Now().Before(deadline) {
		got = promQuery(t, promURL, `{__name__=~"DCGM_FI_DEV_GPU_UTIL|training_loss"}`, time.Now())
		if len(got) == 3 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	want := map[string]string{"GPU-a": "30", "GPU-c": "31", "GPU-b": "0.7"}
	if len(got) != 3 {
		t.Fatalf("Prometheus federated %v, want 3 series", got)
	}
	for _, s := range got {
		// honor_labels keeps the series' own job; weft's instance=""
		// keeps Prometheus from attaching the target's.
		if s.Value != want[s.Metric["UUID"]] || s.Metric["job"] == "federate" || s.Metric["instance"] != "" {
			t.Errorf("federated %v, want value %s with its own job and no instance", s, want[s.Metric["UUID"]])
		}
	}
	var targets struct {
		ActiveTargets []struct {
			Health    string `json:"health"`
			LastError string `json:"lastError"`
		} `json:"activeTargets"`
	}
	promGet(t, promURL+"/api/v1/targets", &targets)
	if len(targets.ActiveTargets) != 1 || targets.ActiveTargets[0].Health != "up" {
		t.Errorf("federation target %+v", targets.ActiveTargets)
	}

	// Loki: buildinfo's version is the build's semver; delete hides lines.
	code, bi := httpDo(t, http.MethodGet, base+"/loki/api/v1/status/buildinfo", "", nil)
	var info struct{ Version string }
	if code != 200 || json.Unmarshal([]byte(bi), &info) != nil || info.Version == "" || info.Version == "weft" || strings.Count(info.Version, ".") < 2 {
		t.Errorf("loki buildinfo %d %s", code, bi)
	}
	ts := now.Add(-time.Minute)
	push := fmt.Sprintf(`{"streams":[{"stream":{"app":"trainer"},"values":[["%d","step 1"],["%d","token=abc123"],["%d","step 2"]]}]}`,
		ts.UnixNano(), ts.Add(time.Second).UnixNano(), ts.Add(2*time.Second).UnixNano())
	if code, msg := httpDo(t, http.MethodPost, base+"/loki/api/v1/push", "application/json", []byte(push)); code != http.StatusNoContent {
		t.Fatalf("push: %d %s", code, msg)
	}
	del := url.Values{"query": {`{app="trainer"} |= "token="`}, "start": {fmt.Sprint(ts.Unix() - 1)}}
	if code, msg := httpDo(t, http.MethodPost, base+"/loki/api/v1/delete?"+del.Encode(), "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, msg)
	}
	q := url.Values{"query": {`{app="trainer"}`}, "start": {fmt.Sprint(ts.Add(-time.Minute).UnixNano())}, "end": {fmt.Sprint(time.Now().UnixNano())}}
	code, lines := httpDo(t, http.MethodGet, base+"/loki/api/v1/query_range?"+q.Encode(), "", nil)
	if code != 200 || strings.Contains(lines, "abc123") || !strings.Contains(lines, "step 2") {
		t.Errorf("after delete: %d %s", code, lines)
	}
	code, list := httpDo(t, http.MethodGet, base+"/loki/api/v1/delete", "", nil)
	if code != 200 || !strings.Contains(list, `"status":"received"`) {
		t.Errorf("delete list: %d %s", code, list)
	}

	// Every path counted what it stored.
	_, metrics := httpDo(t, http.MethodGet, base+"/metrics", "", nil)
	for _, want := range []string{
		`weft_ingest_accepted_total{path="vm_import",type="float"} 9`,
		`weft_ingest_accepted_total{path="loki_push",type="log_line"} 3`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func httpDo(tb testing.TB, method, u, ct string, body []byte) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
