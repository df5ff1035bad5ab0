package ruler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage"
)

// TestTenantRuleFilesRefused: tenant rule files are refused, with the
// reason, without multi-tenancy, for an invalid tenant ID and when a file
// belongs to two tenants; the rules applied before keep running.
func TestTenantRuleFilesRefused(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "live.yml", liveRules)
	g := writeFile(t, dir, "other.yml", liveRules)
	for _, c := range []struct {
		name        string
		multiTenant bool
		cfg         Config
		want        string
	}{
		{"no multi-tenancy", false, Config{Tenants: map[string]TenantRules{"a": {RuleFiles: []string{f}}}}, `rule files of tenant "a" need multi-tenancy`},
		{"invalid tenant", true, Config{Tenants: map[string]TenantRules{"a/b": {RuleFiles: []string{f}}}}, "invalid tenant ID"},
		{"file of two tenants", true, Config{Tenants: map[string]TenantRules{"a": {RuleFiles: []string{f}}, "b": {RuleFiles: []string{f}}}}, `rule file of tenants "a" and "b"`},
		{"file of anonymous and a tenant", true, Config{RuleFiles: []string{f}, Tenants: map[string]TenantRules{"a": {RuleFiles: []string{filepath.Join(dir, "*.yml")}}}}, `rule file of tenants "anonymous" and "a"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, filepath.Join(dir, "data-"+strings.ReplaceAll(c.name, " ", "-")))
			r := s.newRuler(t, Options{MultiTenant: c.multiTenant})
			if err := r.ApplyConfig(Config{RuleFiles: []string{g}}); err != nil {
				t.Fatal(err)
			}
			err := r.ApplyConfig(c.cfg)
			if !errors.Is(err, ErrInvalidRules) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ApplyConfig = %v, want ErrInvalidRules containing %q", err, c.want)
			}
			if gs := r.RuleGroups(); len(gs) != 1 || gs[0].File() != g {
				t.Errorf("after a refused config the rules are %v, want those of %s", gs, g)
			}
		})
	}
}

// TestRecordingRulesPerTenantProperty: for a random number of tenants with
// random data under equal label sets, each running the same recording rule
// file, every tenant's recorded series holds the sum of its own data only,
// and a tenant's view of the rule groups holds only its own group.
func TestRecordingRulesPerTenantProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	r := s.newRuler(t, Options{MultiTenant: true})
	n := 2 + rng.IntN(4)
	cfg := Config{Tenants: map[string]TenantRules{}}
	want := map[string]float64{}
	now := timestamp.FromTime(time.Now())
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		a := s.db.AppenderV2(tenant.With(context.Background(), id))
		for j := range 1 + rng.IntN(5) {
			v := float64(rng.IntN(1000))
			want[id] += v
			if _, err := a.Append(0, labels.FromStrings("__name__", "work", "job", "trainer", "shard", fmt.Sprint(j)), 0, now, v, nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		cfg.Tenants[id] = TenantRules{RuleFiles: []string{writeFile(t, dir, id+".yml", `
groups:
  - name: work
    interval: 100ms
    rules:
      - record: job:work:sum
        expr: sum by (job) (work)
`)}}
	}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()
	for id, sum := range want {
		ctx := tenant.With(context.Background(), id)
		waitFor(t, 10*time.Second, "the recorded sum of "+id, func() bool {
			vs := tenantValues(t, ctx, s, "job:work:sum")
			return len(vs) == 1 && vs[0] == sum
		})
		if gs := r.VisibleRuleGroups(ctx); len(gs) != 1 || gs[0].File() != filepath.Join(dir, id+".yml") {
			t.Errorf("groups visible to %s: %v", id, gs)
		}
	}
	if gs := r.VisibleRuleGroups(tenant.With(context.Background(), tenant.Anonymous)); len(gs) != 0 {
		t.Errorf("the anonymous tenant sees %d groups, want none", len(gs))
	}
	if gs := r.RuleGroups(); len(gs) != n {
		t.Errorf("RuleGroups (every tenant) = %d groups, want %d", len(gs), n)
	}
}

// tenantValues returns the newest value of each series named name that a
// reader acting with ctx sees.
func tenantValues(t *testing.T, ctx context.Context, s *store, name string) []float64 {
	t.Helper()
	q, err := s.db.Querier(0, timestamp.FromTime(time.Now().Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
	var out []float64
	for ss.Next() {
		it := ss.At().Iterator(nil)
		var v float64
		for it.Next() != 0 {
			_, v = it.At()
		}
		out = append(out, v)
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAlertStatePerTenantSurvivesRestart: the `for` state of a tenant's
// alert is restored from that tenant's ALERTS_FOR_STATE only. Tenant a's
// alert fires before a restart; after it, b's data makes b's alert (equal
// labels, same rule file content) active for the first time: a's alert
// keeps its activeAt, b's starts anew instead of taking a's.
func TestAlertStatePerTenantSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	const hold = `
groups:
  - name: hold
    interval: 200ms
    rules:
      - alert: Down
        expr: up == 0
        for: 1s
`
	files := Config{Tenants: map[string]TenantRules{
		"a": {RuleFiles: []string{writeFile(t, dir, "a.yml", hold)}},
		"b": {RuleFiles: []string{writeFile(t, dir, "b.yml", hold)}},
	}}
	up := labels.FromStrings("__name__", "up", "job", "api", "instance", "x")
	opts := DefaultOptions()
	opts.ForGracePeriod, opts.MultiTenant = time.Second, true
	appendAs := func(s *store, id string, v float64) {
		t.Helper()
		a := s.db.AppenderV2(tenant.With(context.Background(), id))
		if _, err := a.Append(0, up, 0, timestamp.FromTime(time.Now()), v, nil, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	activeAt := func(r *Ruler, id string) (time.Time, bool) {
		for _, ar := range AlertingRulesOf(r.VisibleRuleGroups(tenant.With(context.Background(), id))) {
			for _, a := range ar.ActiveAlerts() {
				return a.ActiveAt, a.State == rules.StateFiring
			}
		}
		return time.Time{}, false
	}

	s := openStore(t, data)
	appendAs(s, "a", 0)
	appendAs(s, "b", 1)
	r := s.newRuler(t, opts)
	if err := r.ApplyConfig(files); err != nil {
		t.Fatal(err)
	}
	r.Start()
	var before time.Time
	waitFor(t, 20*time.Second, "a's alert to fire", func() bool {
		at, firing := activeAt(r, "a")
		before = at
		return firing
	})
	if at, _ := activeAt(r, "b"); !at.IsZero() {
		t.Fatalf("b's alert is active (since %s) on b's healthy data", at)
	}
	r.Stop()
	s.close(t)

	time.Sleep(1200 * time.Millisecond)
	restart := time.Now()
	s = openStore(t, data)
	appendAs(s, "a", 0)
	appendAs(s, "b", 0)
	r = s.newRuler(t, opts)
	if err := r.ApplyConfig(files); err != nil {
		t.Fatal(err)
	}
	r.Start()
	waitFor(t, 20*time.Second, "a's alert restored and b's active", func() bool {
		a, firing := activeAt(r, "a")
		b, _ := activeAt(r, "b")
		return firing && a.Equal(before.Truncate(time.Second)) && !b.IsZero()
	})
	if b, _ := activeAt(r, "b"); b.Before(restart) {
		t.Errorf("b's alert is active since %s, before the restart at %s: restored from a's state", b, restart)
	}
}

// TestAlertsCarryTenantHeader: with AlertmanagerTenantHeader, each
// tenant's alerts reach Alertmanager in requests with X-Scope-OrgID: the
// tenant (the anonymous tenant's too), and labelled with it; the option
// needs multi-tenancy.
func TestAlertsCarryTenantHeader(t *testing.T) {
	if _, err := New(Options{Appendable: &storage.DB{}, Queryable: &storage.DB{}, Engine: serverEngine(), AlertmanagerTenantHeader: true}); err == nil {
		t.Error("AlertmanagerTenantHeader without MultiTenant was accepted")
	}
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	var mu sync.Mutex
	got := map[string]map[string]bool{} // X-Scope-OrgID → tenant labels
	amSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var as []amAlert
		if err := json.NewDecoder(r.Body).Decode(&as); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		org := r.Header.Get(OrgIDHeader)
		if got[org] == nil {
			got[org] = map[string]bool{}
		}
		for _, a := range as {
			got[org][a.Labels[AlertTenantLabel]] = true
		}
	}))
	t.Cleanup(amSrv.Close)
	u, _ := url.Parse(amSrv.URL)
	am := config.DefaultAlertmanagerConfig
	am.ServiceDiscoveryConfigs = discovery.Configs{discovery.StaticConfig{
		&targetgroup.Group{Targets: []model.LabelSet{{model.AddressLabel: model.LabelValue(u.Host)}}, Source: "test"},
	}}
	opts := DefaultOptions()
	opts.MultiTenant, opts.AlertmanagerTenantHeader = true, true
	opts.DiscoveryUpdate, opts.ResendDelay = 50*time.Millisecond, 100*time.Millisecond
	r := s.newRuler(t, opts)
	const down = `
groups:
  - name: down
    interval: 100ms
    rules:
      - alert: Down
        expr: up == 0
`
	cfg := Config{RuleFiles: []string{writeFile(t, dir, "anon.yml", down)}, Tenants: map[string]TenantRules{}, Alerting: config.AlertingConfig{AlertmanagerConfigs: config.AlertmanagerConfigs{&am}}}
	for _, id := range []string{tenant.Anonymous, "a", "b"} {
		a := s.db.AppenderV2(tenant.With(context.Background(), id))
		if _, err := a.Append(0, labels.FromStrings("__name__", "up", "job", "j"), 0, timestamp.FromTime(time.Now()), 0, nil, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := a.Commit(); err != nil {
			t.Fatal(err)
		}
		if id != tenant.Anonymous {
			cfg.Tenants[id] = TenantRules{RuleFiles: []string{writeFile(t, dir, id+".yml", down)}}
		}
	}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()
	waitFor(t, 20*time.Second, "every tenant's alert", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	})
	r.Stop()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{tenant.Anonymous, "a", "b"} {
		if len(got[id]) != 1 || !got[id][id] {
			t.Errorf("requests with %s: %s carry alerts of tenants %v, want only %s's", OrgIDHeader, id, got[id], id)
		}
	}
}
