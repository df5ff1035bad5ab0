package ruler

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/rules"
)

// fakeInvestigator answers a fixed cause for opted-in alerts and counts
// the calls per alert name; block makes it wait for its context instead.
type fakeInvestigator struct {
	mu          sync.Mutex
	calls       map[string]int
	got         []FiringAlert
	deadlineSet bool
	block       bool
}

const nvlinkCause = "node-6 NVLink degradation — probable cause of stall"

func (f *fakeInvestigator) AlertFiring(ctx context.Context, a FiringAlert) (Explanation, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[a.Labels.Get(labels.AlertName)+"/"+a.Labels.Get("run_id")]++
	f.got = append(f.got, a)
	_, f.deadlineSet = ctx.Deadline()
	f.mu.Unlock()
	if f.block {
		<-ctx.Done()
		return Explanation{}, ctx.Err()
	}
	if !a.Investigate {
		return Explanation{}, nil
	}
	return Explanation{Cause: nvlinkCause}, nil
}

func (f *fakeInvestigator) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// amAlert is an alert as Alertmanager's API v2 receives it.
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	GeneratorURL string            `json:"generatorURL"`
}

// fakeAlertmanager records every alert posted to /api/v2/alerts.
type fakeAlertmanager struct {
	mu     sync.Mutex
	alerts []amAlert
	srv    *httptest.Server
}

func newFakeAlertmanager(t *testing.T) *fakeAlertmanager {
	am := &fakeAlertmanager{}
	am.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var as []amAlert
		if r.URL.Path != "/api/v2/alerts" || json.Unmarshal(body, &as) != nil {
			t.Errorf("alertmanager: %s %s %q", r.Method, r.URL.Path, body)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		am.mu.Lock()
		am.alerts = append(am.alerts, as...)
		am.mu.Unlock()
	}))
	t.Cleanup(am.srv.Close)
	return am
}

func (am *fakeAlertmanager) named(name string) []amAlert {
	am.mu.Lock()
	defer am.mu.Unlock()
	var out []amAlert
	for _, a := range am.alerts {
		if a.Labels[labels.AlertName] == name {
			out = append(out, a)
		}
	}
	return out
}

func (am *fakeAlertmanager) alerting() config.AlertingConfig {
	u, _ := url.Parse(am.srv.URL)
	c := config.DefaultAlertmanagerConfig
	c.ServiceDiscoveryConfigs = discovery.Configs{discovery.StaticConfig{
		&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}}, Source: "test"},
	}}
	return config.AlertingConfig{AlertmanagerConfigs: config.AlertmanagerConfigs{&c}}
}

// TestAlertCarriesProbableCause: an alert whose rule opts in reaches
// Alertmanager with the investigator's top cause and a link to the
// investigation in its annotations, on its first notification and every
// resend, while it is investigated once; an alert that does not opt in is
// handed over once (to be kept as an incident) and sent as evaluated.
func TestAlertCarriesProbableCause(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	s.appendNow(t, 0,
		labels.FromStrings("__name__", "up", "job", "trainer", "run_id", "r42", "instance", "a"),
		labels.FromStrings("__name__", "up", "job", "other", "instance", "b"))
	am := newFakeAlertmanager(t)
	inv := &fakeInvestigator{}
	opts := DefaultOptions()
	opts.Investigator = inv
	opts.ResendDelay = 100 * time.Millisecond
	opts.DiscoveryUpdate = 50 * time.Millisecond
	opts.ExternalURL = &url.URL{Scheme: "http", Host: "weft.example:9338", Path: "/"}
	r := s.newRuler(t, opts)
	cfg := Config{Alerting: am.alerting(), RuleFiles: []string{writeFile(t, dir, "explain.yml", `
groups:
  - name: explain
    interval: 100ms
    rules:
      - alert: TrainingStalled
        expr: up{job="trainer"} == 0
        annotations:
          summary: 'run {{ $labels.run_id }} stalled'
          weft_investigate: "true"
      - alert: Plain
        expr: up{job="other"} == 0
        annotations:
          summary: down
`)}}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()
	waitFor(t, 20*time.Second, "three notifications of each alert", func() bool {
		return len(am.named("TrainingStalled")) >= 3 && len(am.named("Plain")) >= 3
	})
	r.Stop()

	for i, a := range am.named("TrainingStalled") {
		if a.Annotations[CauseAnnotation] != nvlinkCause || a.Annotations["summary"] != "run r42 stalled" {
			t.Errorf("notification %d of TrainingStalled: annotations %v", i, a.Annotations)
		}
		u, err := url.Parse(a.Annotations[InvestigationAnnotation])
		if err != nil || u.Host != "weft.example:9338" || u.Path != "/weft/api/v1/investigate" || !strings.Contains(u.Query().Get("alert"), `"run_id":"r42"`) || u.Query().Get("time") == "" {
			t.Errorf("notification %d: investigation_url %q", i, a.Annotations[InvestigationAnnotation])
		}
	}
	for i, a := range am.named("Plain") {
		if _, ok := a.Annotations[CauseAnnotation]; ok || a.Annotations["summary"] != "down" {
			t.Errorf("notification %d of Plain: annotations %v", i, a.Annotations)
		}
	}
	if n, m := inv.count("TrainingStalled/r42"), inv.count("Plain/"); n != 1 || m != 1 {
		t.Errorf("investigator called %d times for TrainingStalled, %d for Plain; want once each", n, m)
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for _, a := range inv.got {
		want := a.Labels.Get(labels.AlertName) == "TrainingStalled"
		if a.Investigate != want || a.FiredAt.IsZero() || !a.At.Equal(a.FiredAt) || a.ActiveAt.After(a.FiredAt) || a.Language != PromQL || !strings.Contains(a.Expr, "up{") {
			t.Errorf("handed over %+v", a)
		}
	}
	if !inv.deadlineSet {
		t.Error("the investigation's context has no deadline")
	}
}

// TestExplainerBounds: one evaluation waits for at most
// MaxInvestigationsPerEval investigations, each at most
// InvestigateTimeout; an answer (or a failure) is remembered until the
// alert resolves, and a resolved alert's notification still carries it.
func TestExplainerBounds(t *testing.T) {
	t0 := time.Now().Add(-time.Minute)
	firing := func(run string) *rules.Alert {
		return &rules.Alert{State: rules.StateFiring, ActiveAt: t0, FiredAt: t0.Add(30 * time.Second),
			Labels:      labels.FromStrings(labels.AlertName, "TrainingStalled", "run_id", run),
			Annotations: labels.FromStrings(OptInName, "true")}
	}
	newEx := func(inv Investigator, timeout time.Duration) *explainer {
		opts := DefaultOptions()
		opts.Investigator, opts.InvestigateTimeout, opts.MaxInvestigationsPerEval = inv, timeout, 2
		return newExplainer(opts.withDefaults())
	}
	causes := func(anns []labels.Labels) (n int) {
		for _, a := range anns {
			if a.Get(CauseAnnotation) == nvlinkCause {
				n++
			}
		}
		return n
	}

	t.Run("per evaluation", func(t *testing.T) {
		inv := &fakeInvestigator{}
		ex := newEx(inv, time.Second)
		alerts := []*rules.Alert{firing("r1"), firing("r2"), firing("r3")}
		if n := causes(ex.annotate(context.Background(), PromQL, "x", alerts)); n != 2 {
			t.Errorf("first evaluation: %d alerts with a cause, want 2 (the bound)", n)
		}
		if n := causes(ex.annotate(context.Background(), PromQL, "x", alerts)); n != 3 {
			t.Errorf("second evaluation: %d alerts with a cause, want 3", n)
		}
		for _, run := range []string{"r1", "r2", "r3"} {
			if c := inv.count("TrainingStalled/" + run); c != 1 {
				t.Errorf("%s investigated %d times, want 1", run, c)
			}
		}
		resolved := firing("r1")
		resolved.State, resolved.ResolvedAt = rules.StateInactive, time.Now()
		if n := causes(ex.annotate(context.Background(), PromQL, "x", []*rules.Alert{resolved})); n != 1 {
			t.Error("the resolved notification lost its cause")
		}
		again := firing("r1")
		again.ActiveAt = time.Now()
		ex.annotate(context.Background(), PromQL, "x", []*rules.Alert{again})
		if c := inv.count("TrainingStalled/r1"); c != 2 {
			t.Errorf("r1 firing again: investigated %d times in all, want 2", c)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		inv := &fakeInvestigator{block: true}
		ex := newEx(inv, 50*time.Millisecond)
		t1 := time.Now()
		anns := ex.annotate(context.Background(), PromQL, "x", []*rules.Alert{firing("r1")})
		if d := time.Since(t1); d > 5*time.Second || causes(anns) != 0 || anns[0].Get(OptInName) != "true" {
			t.Errorf("after %s: annotations %v", d, anns)
		}
		ex.annotate(context.Background(), PromQL, "x", []*rules.Alert{firing("r1")})
		if c := inv.count("TrainingStalled/r1"); c != 1 {
			t.Errorf("a timed-out investigation was retried: %d calls", c)
		}
	})
}
