package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/gpuagent"
)

// TestWorkloadContextAcrossSources: one context mapping on every ingest
// path. A real Prometheus scrapes weft-agent's dcgm-exporter-shaped /metrics
// page (UUID, Hostname, modelName) and a training exporter that labels its
// run ai_run_id, and remote-writes both into weft; a log shipper pushes the
// run's NCCL lines to Loki push under ai_run_id too. Then the canonical
// names find everything (gpu_uuid, host, run_id) and the names the
// dashboards already use (UUID, Hostname) still answer, while modelName,
// the GPU model, never becomes the AI model.
func TestWorkloadContextAcrossSources(t *testing.T) {
	promBin := peerBinary(t, "prometheus")
	_, weftURL := startWeft(t, "weft-context")

	const uuid = "GPU-6a7c0000-0000-0000-0000-000000000006"
	snap := gpuagent.Snapshot{Time: time.Now(), NVMLUp: true, GPUs: []gpuagent.GPUSnapshot{{
		Info: gpuagent.GPUInfo{Index: 0, Minor: 0, UUID: uuid, PCIBusID: "00000000:07:00.0", Model: "NVIDIA H100 80GB HBM3"},
		Samples: []gpuagent.Sample{
			{Def: gpuagent.MetricGPUUtil, Value: 97},
			{Def: gpuagent.MetricNVLinkBandwidthTotal, Value: 1234},
		},
	}}}
	r := gpuagent.Renderer{Naming: gpuagent.NamingDCGM, Hostname: "node-6"}
	var page bytes.Buffer
	if err := gpuagent.WriteText(&page, r.Render(snap)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `UUID="`+uuid+`"`) || !strings.Contains(page.String(), `Hostname="node-6"`) {
		t.Fatalf("agent page is not dcgm-exporter shaped:\n%s", page.String())
	}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page.Bytes())
	}))
	t.Cleanup(agent.Close)
	trainer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE training_step_total counter\ntraining_step_total{ai_run_id=\"r42\",rank=\"0\"} %d\n", time.Now().Unix())
	}))
	t.Cleanup(trainer.Close)

	promAddr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dcgm
    static_configs: [{targets: [%q]}]
  - job_name: trainer
    static_configs: [{targets: [%q]}]
remote_write:
  - url: %s/api/v1/write
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
`, strings.TrimPrefix(agent.URL, "http://"), strings.TrimPrefix(trainer.URL, "http://"), weftURL)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, "prometheus", promBin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr,
		"--log.level=warn",
	)
	waitReady(t, prom, "http://"+promAddr+"/-/ready")

	// The run's logs arrive by Loki push under the same alias.
	now := time.Now()
	push := fmt.Sprintf(`{"streams":[{"stream":{"app":"trainer","ai_run_id":"r42"},"values":[[%q,"NCCL WARN Timeout: all-reduce on rank 3"]]}]}`,
		strconv.FormatInt(now.UnixNano(), 10))
	resp, err := http.Post(weftURL+"/loki/api/v1/push", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("loki push: %s", resp.Status)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	byCanonical := waitQuery(ctx, t, weftURL, `DCGM_FI_DEV_GPU_UTIL{gpu_uuid="`+uuid+`"}`)
	// The two scrape jobs land in separate remote-write batches: wait for
	// the trainer's too before asserting on both.
	waitQuery(ctx, t, weftURL, `training_step_total{run_id="r42"}`)
	if byCanonical.Metric["UUID"] != uuid || byCanonical.Metric["host"] != "node-6" || byCanonical.Metric["Hostname"] != "node-6" {
		t.Errorf("canonical labels missing beside the originals: %v", byCanonical.Metric)
	}
	if m, ok := byCanonical.Metric["model"]; ok {
		t.Errorf("modelName (the GPU model) became model=%q", m)
	}
	for _, q := range []string{
		`DCGM_FI_DEV_GPU_UTIL{UUID="` + uuid + `"}`, // what dcgm-exporter dashboards query
		`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname="node-6"}`,
		`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{host="node-6"}`,
		`DCGM_FI_DEV_GPU_UTIL{modelName="NVIDIA H100 80GB HBM3"}`,
		`training_step_total{run_id="r42"}`,
		`training_step_total{ai_run_id="r42"}`,
	} {
		if got := promQuery(t, weftURL, q, time.Now()); len(got) != 1 {
			t.Errorf("%s: %d series, want 1", q, len(got))
		}
	}
	if got := promQuery(t, weftURL, `count({run_id="r42"})`, time.Now()); len(got) != 1 || got[0].Value != "1" {
		t.Errorf(`count({run_id="r42"}) = %v, want 1 (the training series)`, got)
	}
	logs := lokiQueryRange(t, weftURL, `{run_id="r42"}`, now.Add(-time.Minute), now.Add(time.Minute))
	if len(logs) != 1 || len(logs[0].Values) != 1 || logs[0].Stream["ai_run_id"] != "r42" {
		t.Fatalf(`{run_id="r42"} found %v; want the pushed NCCL line`, logs)
	}
}
