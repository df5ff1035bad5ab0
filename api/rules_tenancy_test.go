package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/investigate"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/ruler"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// tenantRulesPromQL is every tenant's PromQL rule file: the same group,
// rule names and expressions for each, so that only the tenant tells their
// results apart.
const tenantRulesPromQL = `
groups:
  - name: gpu
    interval: 100ms
    rules:
      - record: host:gpu_temp:max
        expr: max by (host) (gpu_temp)
      - alert: GPUHot
        expr: gpu_temp > 80
      - alert: GPUCold
        expr: gpu_temp < 50
        labels:
          __tenant_id__: a # a rule cannot page as another tenant
`

const tenantRulesLogQL = `
groups:
  - name: nccl
    interval: 100ms
    rules:
      - alert: NCCLWatchdog
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "Watchdog" [1m])) > 0
`

// tenantInvestigator keeps every firing alert as an incident, as weft's
// wiring does (cmd/weft/internal/app), and notes which tenant each alert
// was handed over as.
type tenantInvestigator struct {
	iv *investigate.Investigator
	mu sync.Mutex
	as map[string][]string // alertname → tenants of the contexts
}

func (ti *tenantInvestigator) AlertFiring(ctx context.Context, fa ruler.FiringAlert) (ruler.Explanation, error) {
	s, _ := tenant.FromContext(ctx)
	ti.mu.Lock()
	ti.as[fa.Labels.Get(labels.AlertName)] = append(ti.as[fa.Labels.Get(labels.AlertName)], strings.Join(s.IDs(), "|"))
	ti.mu.Unlock()
	_, err := ti.iv.RecordAlert(ctx, investigate.AlertIncident{Labels: fa.Labels.Map(), ActiveAt: fa.ActiveAt, FiredAt: fa.At, Query: fa.Expr})
	return ruler.Explanation{}, err
}

// tenantAlertmanager records the alerts posted to it.
type tenantAlertmanager struct {
	mu     sync.Mutex
	alerts []map[string]string // labels
}

func (am *tenantAlertmanager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var as []struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(b, &as); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	am.mu.Lock()
	defer am.mu.Unlock()
	for _, a := range as {
		am.alerts = append(am.alerts, a.Labels)
	}
}

// sent returns the tenant label of each alert named name sent so far.
func (am *tenantAlertmanager) sent(name string) []string {
	am.mu.Lock()
	defer am.mu.Unlock()
	var out []string
	for _, a := range am.alerts {
		if a[labels.AlertName] == name {
			out = append(out, a[ruler.AlertTenantLabel])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestRulesPerTenant: with multi-tenancy on, tenants a and b each have the
// same rule files (PromQL and LogQL) over data with equal label sets and
// different values. Each tenant's rules read only its data (GPUHot fires
// on a's, GPUCold on b's, the log alert on a's lines only), the recording
// rule's output and the ALERTS series land in their own tenant, the alerts
// reach Alertmanager labelled with their tenant, and every read API (the
// Prometheus rules and alerts, the Loki ruler's, incidents, the
// investigation and its context) answers each tenant only its own; naming both
// tenants reads both only with federation on.
func TestRulesPerTenant(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sopts := storage.DefaultOptions()
	sopts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(ctx, filepath.Join(dir, "data"), sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	db, logs := sub.Metrics(), sub.Logs()
	now := time.Now()
	for id, v := range map[string]float64{"a": 91, "b": 20} {
		tctx := tenant.With(ctx, id)
		app := db.AppenderV2(tctx)
		if _, err := app.Append(0, labels.FromStrings("__name__", "gpu_temp", "host", "n1", "secret", id), 0, timestamp.FromTime(now), v, nil, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs.Push(tenant.With(ctx, "a"), []logstore.PushStream{{
		Labels:  labels.FromStrings("run_id", "r-a"),
		Entries: []logentry.Entry{{Timestamp: now.UnixNano(), Line: "Watchdog caught collective operation timeout"}},
	}}); err != nil {
		t.Fatal(err)
	}

	iv, err := investigate.New(investigate.Options{Index: sub.Index(), Metrics: db, Logs: logs, Incidents: logs})
	if err != nil {
		t.Fatal(err)
	}
	inv := &tenantInvestigator{iv: iv, as: map[string][]string{}}
	am := &tenantAlertmanager{}
	amSrv := httptest.NewServer(am)
	t.Cleanup(amSrv.Close)
	ropts := ruler.DefaultOptions()
	ropts.Appendable, ropts.Queryable, ropts.Engine = db, db, query.NewEngine(query.DefaultEngineOptions())
	ropts.Logs = logql.NewEngine(logs, logql.DefaultEngineOptions())
	ropts.MultiTenant, ropts.Investigator = true, inv
	ropts.DiscoveryUpdate, ropts.ResendDelay = 50*time.Millisecond, 100*time.Millisecond
	r, err := ruler.New(ropts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	u, _ := url.Parse(amSrv.URL)
	amc := config.DefaultAlertmanagerConfig
	amc.ServiceDiscoveryConfigs = discovery.Configs{discovery.StaticConfig{
		&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}}, Source: "test"},
	}}
	cfg := ruler.Config{Tenants: map[string]ruler.TenantRules{}, Alerting: config.AlertingConfig{AlertmanagerConfigs: config.AlertmanagerConfigs{&amc}}}
	for _, id := range []string{"a", "b"} {
		pf, lf := filepath.Join(dir, id+"-gpu.yml"), filepath.Join(dir, id+"-nccl.yml")
		for p, c := range map[string]string{pf: tenantRulesPromQL, lf: tenantRulesLogQL} {
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg.Tenants[id] = ruler.TenantRules{RuleFiles: []string{pf}, LogQLRuleFiles: []string{lf}}
	}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()
	srv, _ := newServerOver(t, sub, func(o *api.Options) {
		o.Tenancy = api.TenancyOptions{Enabled: true, Federation: true}
		o.Rules, o.Investigate = r, iv
	})

	get := func(org, path string, params url.Values) (int, []byte) {
		t.Helper()
		p := path
		if params != nil {
			p += "?" + params.Encode()
		}
		return tenantDo(t, srv, http.MethodGet, p, org, "", nil)
	}
	firing := func(org, path string) []string {
		t.Helper()
		code, body := get(org, path, nil)
		if code != http.StatusOK {
			t.Fatalf("%s as %s: %d %s", path, org, code, body)
		}
		var env struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range env.Data.Alerts {
			if a.State == "firing" {
				out = append(out, a.Labels[labels.AlertName]+"/"+a.Labels["secret"]+a.Labels["run_id"])
			}
		}
		slices.Sort(out)
		return out
	}
	waitUntil(t, 20*time.Second, "each tenant's alerts firing and sent", func() bool {
		return len(firing("a", "/api/v1/alerts")) == 2 && len(firing("b", "/api/v1/alerts")) == 1 &&
			len(am.sent("GPUHot")) > 0 && len(am.sent("GPUCold")) > 0 && len(am.sent("NCCLWatchdog")) > 0
	})

	t.Run("alerts", func(t *testing.T) {
		for org, want := range map[string][]string{"a": {"GPUHot/a", "NCCLWatchdog/r-a"}, "b": {"GPUCold/b"}, "a|b": {"GPUCold/b", "GPUHot/a", "NCCLWatchdog/r-a"}} {
			if got := firing(org, "/api/v1/alerts"); !slices.Equal(got, want) {
				t.Errorf("/api/v1/alerts as %s: firing %v, want %v", org, got, want)
			}
		}
		if got := firing("a", "/prometheus/api/v1/alerts"); !slices.Equal(got, []string{"NCCLWatchdog/r-a"}) {
			t.Errorf("/prometheus/api/v1/alerts as a: %v", got)
		}
		if got := firing("b", "/prometheus/api/v1/alerts"); len(got) != 0 {
			t.Errorf("/prometheus/api/v1/alerts as b: %v, want none", got)
		}
	})

	t.Run("rules", func(t *testing.T) {
		for org, want := range map[string][]string{"a": {"a-gpu.yml", "a-nccl.yml"}, "b": {"b-gpu.yml", "b-nccl.yml"}, "anonymous": nil} {
			code, body := get(org, "/api/v1/rules", nil)
			var env struct {
				Data rulesData `json:"data"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &env) != nil {
				t.Fatalf("/api/v1/rules as %s: %d %s", org, code, body)
			}
			var files []string
			for _, g := range env.Data.Groups {
				files = append(files, filepath.Base(g.File))
			}
			if !slices.Equal(files, want) {
				t.Errorf("/api/v1/rules as %s: files %v, want %v", org, files, want)
			}
		}
		code, body := get("b", "/loki/api/v1/rules", nil)
		var ns map[string]any
		if code != http.StatusOK || yaml.Unmarshal(body, &ns) != nil || len(ns) != 1 || ns[filepath.Join(dir, "b-nccl.yml")] == nil {
			t.Errorf("/loki/api/v1/rules as b: %d %s", code, body)
		}
	})

	t.Run("recording", func(t *testing.T) {
		for org, want := range map[string]string{"a": "91", "b": "20"} {
			waitUntil(t, 10*time.Second, "recorded series of "+org, func() bool {
				_, body := get(org, "/api/v1/query", url.Values{"query": {"host:gpu_temp:max"}})
				return strings.Contains(string(body), `"result":[{`)
			})
			_, body := get(org, "/api/v1/query", url.Values{"query": {"host:gpu_temp:max"}})
			var env struct {
				Data struct {
					Result []struct {
						Value [2]any `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &env); err != nil || len(env.Data.Result) != 1 || env.Data.Result[0].Value[1] != want {
				t.Errorf("host:gpu_temp:max as %s: %s, want one series of %s", org, body, want)
			}
			_, body = get(org, "/api/v1/query", url.Values{"query": {`count by (alertname) (ALERTS{alertstate="firing"})`}})
			if other := map[string]string{"a": "GPUCold", "b": "GPUHot"}[org]; strings.Contains(string(body), other) {
				t.Errorf("ALERTS as %s holds the other tenant's %s: %s", org, other, body)
			}
		}
	})

	t.Run("notifications", func(t *testing.T) {
		for name, want := range map[string][]string{"GPUHot": {"a"}, "GPUCold": {"b"}, "NCCLWatchdog": {"a"}} {
			if got := am.sent(name); !slices.Equal(got, want) {
				t.Errorf("%s sent with %s %v, want %v", name, ruler.AlertTenantLabel, got, want)
			}
		}
		inv.mu.Lock()
		defer inv.mu.Unlock()
		for name, want := range map[string]string{"GPUHot": "a", "GPUCold": "b", "NCCLWatchdog": "a"} {
			if got := slices.Compact(inv.as[name]); !slices.Equal(got, []string{want}) {
				t.Errorf("%s handed to the investigator as tenants %v, want %s", name, got, want)
			}
		}
	})

	t.Run("incidents", func(t *testing.T) {
		incidents := func(org string) (int, string) {
			code, body := get(org, "/weft/api/v1/incidents", url.Values{"min_count": {"1"}})
			var env struct {
				Data investigate.IncidentGroups `json:"data"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &env) != nil {
				t.Fatalf("incidents as %s: %d %s", org, code, body)
			}
			return env.Data.Incidents, string(body)
		}
		for org, want := range map[string]int{"a": 2, "b": 1, "a|b": 3} {
			if n, body := incidents(org); n != want {
				t.Errorf("incidents as %s: %d, want %d: %s", org, n, want, body)
			}
		}
		if _, body := incidents("b"); strings.Contains(body, "GPUHot") || strings.Contains(body, "r-a") {
			t.Errorf("b's incidents show a's alerts: %s", body)
		}
	})

	t.Run("investigation", func(t *testing.T) {
		for org, want := range map[string]bool{"a": true, "b": false} {
			code, body := get(org, "/weft/api/v1/context", url.Values{"match": {`{secret="a"}`}})
			if code != http.StatusOK {
				t.Fatalf("context as %s: %d %s", org, code, body)
			}
			if got := strings.Contains(string(body), `"n1"`); got != want {
				t.Errorf("context of a's series as %s: %s; want it found=%v", org, body, want)
			}
			code, body = get(org, "/weft/api/v1/investigate", url.Values{"selector": {`{secret="a"}`}})
			var rep struct {
				Data struct {
					Scope struct {
						Series int `json:"series"`
					} `json:"scope"`
				} `json:"data"`
			}
			if code != http.StatusOK || json.Unmarshal(body, &rep) != nil || (rep.Data.Scope.Series > 0) != want {
				t.Errorf("investigation of a's series as %s: %d %s; want series found=%v", org, code, body, want)
			}
		}
	})
}
