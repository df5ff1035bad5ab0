package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
)

// webhookPayload is what Alertmanager's webhook receiver posts (version 4).
type webhookPayload struct {
	Receiver string         `json:"receiver"`
	Status   string         `json:"status"`
	Alerts   []webhookAlert `json:"alerts"`
	GroupKey string         `json:"groupKey"`
	Version  string         `json:"version"`
}

type webhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// webhookSink records every notification Alertmanager delivers.
type webhookSink struct {
	mu       sync.Mutex
	payloads []webhookPayload
	srv      *httptest.Server
}

func newWebhookSink(tb testing.TB) *webhookSink {
	s := &webhookSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhookPayload
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &p); err != nil {
			tb.Errorf("webhook: undecodable payload %q: %v", body, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.payloads = append(s.payloads, p)
		s.mu.Unlock()
	}))
	tb.Cleanup(s.srv.Close)
	return s
}

// wait returns the first alert named alertname delivered with status, or
// fails after timeout.
func (s *webhookSink) wait(tb testing.TB, timeout time.Duration, alertname, status string) webhookAlert {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		for _, p := range s.payloads {
			for _, a := range p.Alerts {
				if a.Labels["alertname"] == alertname && a.Status == status {
					s.mu.Unlock()
					return a
				}
			}
		}
		n := len(s.payloads)
		s.mu.Unlock()
		if time.Now().After(deadline) {
			tb.Fatalf("no %s notification of %s within %s (%d payloads received)", status, alertname, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startAlertmanager starts the pinned Alertmanager on loopback, without
// clustering, delivering to hook with the shortest grouping waits.
func startAlertmanager(tb testing.TB, hook string) string {
	tb.Helper()
	dir := tb.TempDir()
	cfg := filepath.Join(dir, "am.yml")
	if err := os.WriteFile(cfg, []byte(`
route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: `+hook+`
        send_resolved: true
`), 0o644); err != nil {
		tb.Fatal(err)
	}
	addr := freeAddr(tb)
	p := startProcess(tb, "alertmanager", peerBinary(tb, "alertmanager"),
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
		"--log.level=warn",
	)
	base := "http://" + addr
	waitReady(tb, p, base+"/-/ready")
	return base
}

// pushGauge remote-writes one sample per series at t (remote write 1.0).
func pushGauge(tb testing.TB, base string, t time.Time, v float64, series ...map[string]string) {
	tb.Helper()
	var wr prompb.WriteRequest
	for _, s := range series {
		ts := prompb.TimeSeries{Samples: []prompb.Sample{{Value: v, Timestamp: t.UnixMilli()}}}
		for _, k := range slices.Sorted(maps.Keys(s)) {
			ts.Labels = append(ts.Labels, prompb.Label{Name: k, Value: s[k]})
		}
		wr.Timeseries = append(wr.Timeseries, ts)
	}
	raw, err := wr.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("remote write: %d %s", resp.StatusCode, body)
	}
}

// pushLogLine pushes one line to the Loki push API (JSON).
func pushLogLine(tb testing.TB, base string, stream map[string]string, t time.Time, line string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]any{"streams": []any{map[string]any{
		"stream": stream, "values": [][]string{{strconv.FormatInt(t.UnixNano(), 10), line}},
	}}})
	resp, err := http.Post(base+"/loki/api/v1/push", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("loki push: %d %s", resp.StatusCode, b)
	}
}

const e2eAlertRules = `
groups:
  - name: e2e-gpu
    interval: 1s
    rules:
      - alert: GPUHot
        expr: max by (host, gpu) (gpu_temp_celsius) > 80
        for: 2s
        labels:
          severity: critical
        annotations:
          summary: 'GPU {{ $labels.gpu }} on {{ $labels.host }} is at {{ $value }} C'
          runbook_url: https://runbooks.example/gpu-hot
`

const e2eLogRules = `
groups:
  - name: e2e-logs
    interval: 1s
    rules:
      - alert: NCCLWatchdogTimeout
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "Watchdog caught collective operation timeout" [1m])) > 0
        labels:
          severity: critical
        annotations:
          summary: 'NCCL watchdog timeout in run {{ $labels.run_id }}'
`

// TestAlertsReachAlertmanager: weft evaluates a PromQL and a LogQL alerting
// rule, sends them through the real Alertmanager (v2 API) to a webhook with
// their labels, annotations, external labels and a generatorURL pointing at
// weft, and sends the PromQL one as resolved when its data clears.
func TestAlertsReachAlertmanager(t *testing.T) {
	sink := newWebhookSink(t)
	am := startAlertmanager(t, sink.srv.URL+"/hook")

	dir := t.TempDir()
	promRules := filepath.Join(dir, "gpu.yml")
	logRules := filepath.Join(dir, "logs.yml")
	config := filepath.Join(dir, "weft.yml")
	for p, c := range map[string]string{
		promRules: e2eAlertRules,
		logRules:  e2eLogRules,
		config:    "external_labels:\n  cluster: e2e\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	p := startProcess(t, "weft", buildWeft(t),
		"-config", config,
		"-data-dir", filepath.Join(dir, "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", "", "-otlp-http-addr", "",
		"-log-level", "warn",
		"-rules.file", promRules,
		"-rules.logql-file", logRules,
		"-alertmanager.url", am,
		"-rules.external-url", "http://weft.example:9338/",
	)
	base := "http://" + addr
	waitReady(t, p, base+"/-/ready")

	hot := map[string]string{"__name__": "gpu_temp_celsius", "host": "node-6", "gpu": "3"}
	cool := map[string]string{"__name__": "gpu_temp_celsius", "host": "node-1", "gpu": "0"}
	pushLogLine(t, base, map[string]string{"run_id": "r42", "rank": "3"}, time.Now(),
		"[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=64214, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.")

	// Keep the data fresh while waiting, as a scraper would.
	stop := make(chan struct{})
	temp := make(chan float64, 1)
	temp <- 91
	var wg sync.WaitGroup
	wg.Go(func() {
		v := 0.0
		for {
			select {
			case v = <-temp:
			default:
			}
			pushGauge(t, base, time.Now(), v, hot)
			pushGauge(t, base, time.Now(), 45, cool)
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	const notifyTimeout = 60 * time.Second // for 2s + group_wait 1s + discovery; generous on a loaded machine
	firing := sink.wait(t, notifyTimeout, "GPUHot", "firing")
	want := map[string]string{"alertname": "GPUHot", "severity": "critical", "host": "node-6", "gpu": "3", "cluster": "e2e"}
	if fmt.Sprint(firing.Labels) != fmt.Sprint(want) {
		t.Errorf("firing labels = %v, want %v", firing.Labels, want)
	}
	if firing.Annotations["summary"] != "GPU 3 on node-6 is at 91 C" || firing.Annotations["runbook_url"] != "https://runbooks.example/gpu-hot" {
		t.Errorf("firing annotations = %v", firing.Annotations)
	}
	if !strings.HasPrefix(firing.GeneratorURL, "http://weft.example:9338/api/v1/query?query=") || !strings.Contains(firing.GeneratorURL, "gpu_temp_celsius") {
		t.Errorf("generatorURL = %q", firing.GeneratorURL)
	}

	logAlert := sink.wait(t, notifyTimeout, "NCCLWatchdogTimeout", "firing")
	if logAlert.Labels["run_id"] != "r42" || logAlert.Labels["cluster"] != "e2e" || logAlert.Annotations["summary"] != "NCCL watchdog timeout in run r42" ||
		!strings.HasPrefix(logAlert.GeneratorURL, "http://weft.example:9338/loki/api/v1/query?query=") {
		t.Errorf("LogQL alert = %+v", logAlert)
	}

	// weft's own view agrees while both fire.
	type apiAlerts struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	firingNames := func() []string {
		var a apiAlerts
		promGet(t, base+"/api/v1/alerts", &a)
		var names []string
		for _, x := range a.Alerts {
			if x.State == "firing" {
				names = append(names, x.Labels["alertname"])
			}
		}
		slices.Sort(names)
		return names
	}
	if got := firingNames(); !slices.Contains(got, "GPUHot") || !slices.Contains(got, "NCCLWatchdogTimeout") {
		t.Errorf("/api/v1/alerts firing = %v, want GPUHot and NCCLWatchdogTimeout", got)
	}

	// The GPU cools down: the alert resolves and Alertmanager says so.
	temp <- 60
	resolved := sink.wait(t, notifyTimeout, "GPUHot", "resolved")
	if resolved.Fingerprint != firing.Fingerprint || resolved.EndsAt.Before(resolved.StartsAt) || resolved.EndsAt.After(time.Now()) {
		t.Errorf("resolved alert %+v does not close the firing one %+v", resolved, firing)
	}
	if got := firingNames(); slices.Contains(got, "GPUHot") {
		t.Errorf("/api/v1/alerts still fires GPUHot after it resolved: %v", got)
	}
}
