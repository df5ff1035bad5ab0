package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	promstorage "github.com/prometheus/prometheus/storage"
	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/ruler"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

const rulesAPIPromQL = `
groups:
  - name: gpu
    interval: 100ms
    rules:
      - record: host:gpu_temperature:max
        expr: max by (host) (gpu_temp)
      - alert: GPUHot
        expr: gpu_temp > 80
        labels:
          severity: warning
        annotations:
          summary: 'GPU {{ $labels.gpu }} at {{ $value }} C'
`

const rulesAPILogQL = `
groups:
  - name: nccl
    interval: 100ms
    rules:
      - alert: NCCLWatchdogTimeout
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "Watchdog caught collective operation timeout" [1m])) > 0
        labels:
          severity: critical
      - record: run:nccl_lines:count1m
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "NCCL" [1m]))
`

// rulesFixture is a weft store with a running ruler and an API server
// over both.
type rulesFixture struct {
	srv      *httptest.Server
	ruler    *ruler.Ruler
	cfg      ruler.Config
	promFile string
	logFile  string
	dir      string
	reloads  atomic.Int32
}

func newRulesFixture(t *testing.T) *rulesFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	sopts := storage.DefaultOptions()
	sopts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(ctx, filepath.Join(dir, "data"), sopts)
	if err != nil {
		t.Fatal(err)
	}
	db, logs := sub.Metrics(), sub.Logs()
	now := time.Now()
	app := db.AppenderV2(ctx)
	if _, err := app.Append(0, labels.FromStrings("__name__", "gpu_temp", "host", "n6", "gpu", "3"), 0, timestamp.FromTime(now), 91, nil, nil, promstorage.AOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := logs.Push(ctx, []logstore.PushStream{{
		Labels:  labels.FromStrings("run_id", "r42", "rank", "3"),
		Entries: []logentry.Entry{{Timestamp: now.UnixNano(), Line: "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE)"}},
	}}); err != nil {
		t.Fatal(err)
	}

	f := &rulesFixture{dir: dir}
	f.promFile = filepath.Join(dir, "gpu.yml")
	f.logFile = filepath.Join(dir, "nccl.yml")
	for p, c := range map[string]string{f.promFile: rulesAPIPromQL, f.logFile: rulesAPILogQL} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ruler.New(ruler.Options{
		Appendable: db, Queryable: db,
		Engine: query.NewEngine(query.DefaultEngineOptions()),
		Logs:   logql.NewEngine(logs, logql.DefaultEngineOptions()),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ruler = r
	t.Cleanup(func() {
		r.Stop()
		_ = sub.Close()
	})
	f.cfg = ruler.Config{
		RuleFiles:      []string{f.promFile},
		LogQLRuleFiles: []string{f.logFile},
		Alerting: config.AlertingConfig{AlertmanagerConfigs: config.AlertmanagerConfigs{{
			APIVersion: config.AlertmanagerAPIVersionV2, Scheme: "http", Timeout: model.Duration(time.Second),
			ServiceDiscoveryConfigs: discovery.Configs{discovery.StaticConfig{
				&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: "127.0.0.1:1"}}},
			}},
		}}},
	}
	if err := r.ApplyConfig(f.cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()
	f.srv, _ = newTestServer(t, func(o *api.Options) {
		o.Rules = r
		o.Reload = func(context.Context) error {
			f.reloads.Add(1)
			if err := r.ApplyConfig(f.cfg); err != nil {
				return fmt.Errorf("%w: %w", api.ErrInvalidConfig, err)
			}
			return nil
		}
	})
	waitUntil(t, 20*time.Second, "both alerts firing", func() bool {
		_, body, _ := call(t, f.srv, http.MethodGet, "/api/v1/alerts", nil)
		return strings.Count(string(body), `"state":"firing"`) == 2
	})
	return f
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type rulesData struct {
	Groups []struct {
		Name     string  `json:"name"`
		File     string  `json:"file"`
		Interval float64 `json:"interval"`
		Rules    []struct {
			Name   string `json:"name"`
			Type   string `json:"type"`
			Query  string `json:"query"`
			Health string `json:"health"`
			State  string `json:"state"`
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
				Value  string            `json:"value"`
			} `json:"alerts"`
		} `json:"rules"`
	} `json:"groups"`
}

func getRules(t *testing.T, srv *httptest.Server, path string, params url.Values) rulesData {
	t.Helper()
	code, body, _ := call(t, srv, http.MethodGet, path, params)
	if code != http.StatusOK {
		t.Fatalf("GET %s?%s: %d %s", path, params.Encode(), code, body)
	}
	var d rulesData
	if err := json.Unmarshal(decode(t, body).Data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestRulesAPI: /api/v1/rules and /api/v1/alerts answer in Prometheus'
// shapes (Prometheus' own handler) for both languages, with its filters
// and the group_name[] alias.
func TestRulesAPI(t *testing.T) {
	f := newRulesFixture(t)

	all := getRules(t, f.srv, "/api/v1/rules", nil)
	if len(all.Groups) != 2 || all.Groups[0].Name != "gpu" || all.Groups[1].Name != "nccl" {
		t.Fatalf("groups = %+v, want gpu and nccl", all.Groups)
	}
	g := all.Groups[0]
	if g.File != f.promFile || g.Interval != 0.1 || len(g.Rules) != 2 {
		t.Errorf("group gpu = %+v", g)
	}
	if r := g.Rules[1]; r.Type != "alerting" || r.State != "firing" || r.Health != "ok" || len(r.Alerts) != 1 || r.Alerts[0].Value != "9.1e+01" || r.Alerts[0].Labels["gpu"] != "3" {
		t.Errorf("GPUHot = %+v", r)
	}
	if q := all.Groups[1].Rules[0].Query; q != `sum by (run_id) (count_over_time({run_id=~".+"} |= "Watchdog caught collective operation timeout" [1m])) > 0` {
		t.Errorf("LogQL query shown as %q", q)
	}

	for _, tc := range []struct {
		params url.Values
		want   []string // group/rule
	}{
		{url.Values{"type": {"alert"}}, []string{"gpu/GPUHot", "nccl/NCCLWatchdogTimeout"}},
		{url.Values{"type": {"record"}}, []string{"gpu/host:gpu_temperature:max", "nccl/run:nccl_lines:count1m"}},
		{url.Values{"rule_name[]": {"GPUHot"}}, []string{"gpu/GPUHot"}},
		{url.Values{"group_name[]": {"nccl"}, "type": {"alert"}}, []string{"nccl/NCCLWatchdogTimeout"}},
		{url.Values{"rule_group[]": {"gpu"}, "type": {"record"}}, []string{"gpu/host:gpu_temperature:max"}},
		{url.Values{"file[]": {f.logFile}}, []string{"nccl/NCCLWatchdogTimeout", "nccl/run:nccl_lines:count1m"}},
	} {
		var got []string
		for _, g := range getRules(t, f.srv, "/api/v1/rules", tc.params).Groups {
			for _, r := range g.Rules {
				got = append(got, g.Name+"/"+r.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("rules?%s = %v, want %v", tc.params.Encode(), got, tc.want)
		}
	}
	if code, body, _ := call(t, f.srv, http.MethodGet, "/api/v1/rules", url.Values{"type": {"bogus"}}); code != http.StatusBadRequest || !strings.Contains(string(body), "not supported value") {
		t.Errorf("type=bogus: %d %s", code, body)
	}

	code, body, _ := call(t, f.srv, http.MethodGet, "/api/v1/alerts", nil)
	var alerts struct {
		Alerts []struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			State       string            `json:"state"`
			ActiveAt    time.Time         `json:"activeAt"`
			Value       string            `json:"value"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal(decode(t, body).Data, &alerts); code != http.StatusOK || err != nil {
		t.Fatalf("alerts: %d %s %v", code, body, err)
	}
	names := map[string]string{}
	for _, a := range alerts.Alerts {
		names[a.Labels["alertname"]] = a.Annotations["summary"]
	}
	if len(names) != 2 || names["GPUHot"] != "GPU 3 at 91 C" {
		t.Errorf("alerts = %+v", alerts.Alerts)
	}

	waitUntil(t, 20*time.Second, "the static Alertmanager in /api/v1/alertmanagers", func() bool {
		_, body, _ := call(t, f.srv, http.MethodGet, "/api/v1/alertmanagers", nil)
		return strings.Contains(string(body), `"activeAlertmanagers":[{"url":"http://127.0.0.1:1/api/v2/alerts"}]`)
	})
}

// TestLokiRulerAPI: the Loki ruler's endpoints list only the LogQL groups,
// in the Loki ruler's shapes, and are read-only as its local store is.
func TestLokiRulerAPI(t *testing.T) {
	f := newRulesFixture(t)

	code, body, _ := call(t, f.srv, http.MethodGet, "/prometheus/api/v1/rules", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	s := string(body)
	if !strings.HasPrefix(s, `{"status":"success","data":{"groups":[{"name":"nccl","file":`) || !strings.HasSuffix(s, `,"errorType":"","error":""}`) {
		t.Errorf("envelope or group order differs from Loki's: %s", s)
	}
	// Loki's key order within an alerting rule, lastError present.
	order := []string{`"state":"firing"`, `"name":"NCCLWatchdogTimeout"`, `"query":`, `"duration":0`, `"labels":{"severity":"critical"}`, `"annotations":{}`, `"alerts":[`, `"health":"ok"`, `"lastError":""`, `"type":"alerting"`, `"lastEvaluation":`, `"evaluationTime":`}
	last := -1
	for _, k := range order {
		i := strings.Index(s, k)
		if i <= last {
			t.Fatalf("%s missing or out of Loki's order in %s", k, s)
		}
		last = i
	}
	if strings.Contains(s, "GPUHot") {
		t.Errorf("PromQL rules listed by the Loki endpoint: %s", s)
	}
	if d := getRules(t, f.srv, "/prometheus/api/v1/rules", url.Values{"type": {"record"}}); len(d.Groups) != 1 || len(d.Groups[0].Rules) != 1 || d.Groups[0].Rules[0].Type != "recording" {
		t.Errorf("type=record: %+v", d)
	}

	code, body, _ = call(t, f.srv, http.MethodGet, "/prometheus/api/v1/alerts", nil)
	if s := string(body); code != http.StatusOK || strings.Count(s, `"alertname":"NCCLWatchdogTimeout"`) != 1 || strings.Contains(s, "GPUHot") || !strings.Contains(s, `"value":"1e+00"`) {
		t.Errorf("/prometheus/api/v1/alerts: %d %s", code, s)
	}

	for _, prefix := range []string{"/loki/api/v1/rules", "/api/prom/rules"} {
		code, body, hdr := call(t, f.srv, http.MethodGet, prefix, nil)
		var byNS map[string][]struct {
			Name     string `yaml:"name"`
			Interval string `yaml:"interval"`
			Rules    []struct {
				Alert  string            `yaml:"alert"`
				Record string            `yaml:"record"`
				Expr   string            `yaml:"expr"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		}
		if err := yaml.Unmarshal(body, &byNS); code != http.StatusOK || err != nil || hdr.Get("Content-Type") != "application/yaml" {
			t.Fatalf("GET %s: %d %s %v", prefix, code, body, err)
		}
		groups := byNS[f.logFile]
		if len(byNS) != 1 || len(groups) != 1 || groups[0].Name != "nccl" || groups[0].Interval != "100ms" || len(groups[0].Rules) != 2 ||
			groups[0].Rules[0].Alert != "NCCLWatchdogTimeout" || !strings.Contains(groups[0].Rules[0].Expr, `|= "Watchdog caught collective operation timeout"`) ||
			groups[0].Rules[0].Labels["severity"] != "critical" || groups[0].Rules[1].Record != "run:nccl_lines:count1m" {
			t.Errorf("GET %s = %s", prefix, body)
		}

		ns := url.PathEscape(f.logFile)
		if code, body, _ := call(t, f.srv, http.MethodGet, prefix+"/"+ns, nil); code != http.StatusOK || !strings.Contains(string(body), "NCCLWatchdogTimeout") {
			t.Errorf("GET %s/{namespace}: %d %s", prefix, code, body)
		}
		if code, body, _ := call(t, f.srv, http.MethodGet, prefix+"/unknown.yml", nil); code != http.StatusNotFound || !strings.Contains(string(body), "no rule groups found") {
			t.Errorf("GET unknown namespace: %d %s", code, body)
		}
		if code, body, _ := call(t, f.srv, http.MethodGet, prefix+"/"+ns+"/nccl", nil); code != http.StatusBadRequest || !strings.Contains(string(body), "GetRuleGroup unsupported in rule local store") {
			t.Errorf("GET one group: %d %s", code, body)
		}
		for _, m := range []string{http.MethodPost, http.MethodDelete} {
			if code, body, _ := call(t, f.srv, m, prefix+"/"+ns, nil); code != http.StatusBadRequest || !strings.Contains(string(body), "unsupported in rule local store") {
				t.Errorf("%s %s/{namespace}: %d %s", m, prefix, code, body)
			}
		}
	}
}

// TestReloadEndpoint: POST /-/reload applies the configuration; a broken
// rule file is a 400 naming file, line and reason, and the rules keep
// running.
func TestReloadEndpoint(t *testing.T) {
	f := newRulesFixture(t)
	if code, body, _ := call(t, f.srv, http.MethodPost, "/-/reload", nil); code != http.StatusOK || len(body) != 0 {
		t.Fatalf("reload: %d %q", code, body)
	}
	broken := filepath.Join(f.dir, "broken.yml")
	if err := os.WriteFile(broken, []byte("groups:\n  - name: b\n    rules:\n      - alert: B\n        expr: up ==\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cfg.RuleFiles = append(f.cfg.RuleFiles, broken)
	code, body, _ := call(t, f.srv, http.MethodPut, "/-/reload", nil)
	if code != http.StatusBadRequest || !strings.Contains(string(body), broken+": 5:15: group \"b\", rule 1, \"B\": could not parse expression") {
		t.Errorf("reload with a broken file: %d %s", code, body)
	}
	if n := len(getRules(t, f.srv, "/api/v1/rules", nil).Groups); n != 2 {
		t.Errorf("after the failed reload %d groups run, want the previous 2", n)
	}
	if f.reloads.Load() != 2 {
		t.Errorf("reload func called %d times, want 2", f.reloads.Load())
	}
}
