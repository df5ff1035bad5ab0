package ruler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/rules"
	promstorage "github.com/prometheus/prometheus/storage"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble/v2/internal/ewma.init.0.func1"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// store is a weft metric and log store in a test directory.
type store struct {
	dir  string
	sub  *storage.Substrate
	db   *storage.DB
	logs *logstore.Store
}

func openStore(t *testing.T, dir string) *store {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &store{dir: dir, sub: sub, db: sub.Metrics(), logs: sub.Logs()}
	t.Cleanup(func() { s.close(t) })
	return s
}

func (s *store) close(t *testing.T) {
	if s.sub == nil {
		return
	}
	if err := s.sub.Close(); err != nil {
		t.Error(err)
	}
	s.sub, s.logs, s.db = nil, nil, nil
}

func (s *store) newRuler(t *testing.T, opts Options) *Ruler {
	t.Helper()
	opts.Appendable, opts.Queryable, opts.Engine = s.db, s.db, serverEngine()
	opts.Logs = logql.NewEngine(s.logs, logql.DefaultEngineOptions())
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// appendNow appends one sample per series at the wall clock.
func (s *store) appendNow(t *testing.T, value float64, series ...labels.Labels) {
	t.Helper()
	a := s.db.AppenderV2(context.Background())
	now := timestamp.FromTime(time.Now())
	for _, ls := range series {
		if _, err := a.Append(0, ls, 0, now, value, nil, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 50ms until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// latest returns the newest value of the series matching ms, if any.
func latest(t *testing.T, q promstorage.Queryable, ms ...*labels.Matcher) (float64, bool) {
	t.Helper()
	qr, err := q.Querier(0, timestamp.FromTime(time.Now().Add(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	ss := qr.Select(context.Background(), false, nil, ms...)
	var v float64
	found := false
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			_, v = it.At()
			found = true
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return v, found
}

const liveRules = `
groups:
  - name: live
    interval: 200ms
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: Down
        expr: up == 0
        labels:
          severity: page
`

const liveLogRules = `
groups:
  - name: live-logs
    interval: 200ms
    rules:
      - record: run:oom_lines:count1m
        expr: sum by (run_id) (count_over_time({run_id=~".+"} |= "CUDA out of memory" [1m]))
`

// TestRulerEvaluatesPromQLAndLogQL: one manager runs a PromQL and a LogQL
// group on its own ticker; both write into the metric store, and both show
// in RuleGroups while only the LogQL one shows in LogQLRuleGroups.
func TestRulerEvaluatesPromQLAndLogQL(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	up := labels.FromStrings("__name__", "up", "job", "api", "instance", "a")
	s.appendNow(t, 0, up)
	if err := s.logs.Push(context.Background(), []logstore.PushStream{{
		Labels:  labels.FromStrings("run_id", "r1"),
		Entries: []logentry.Entry{{Timestamp: time.Now().UnixNano(), Line: "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"}},
	}}); err != nil {
		t.Fatal(err)
	}

	r := s.newRuler(t, DefaultOptions())
	cfg := Config{
		RuleFiles:      []string{writeFile(t, dir, "live.yml", liveRules)},
		LogQLRuleFiles: []string{writeFile(t, dir, "logs.yml", liveLogRules)},
	}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r.Start()

	waitFor(t, 20*time.Second, "recording rules and ALERTS in the store", func() bool {
		_, rec := latest(t, s.db, labels.MustNewMatcher(labels.MatchEqual, "__name__", "job:up:sum"))
		v, logRec := latest(t, s.db, labels.MustNewMatcher(labels.MatchEqual, "__name__", "run:oom_lines:count1m"))
		_, alerts := latest(t, s.db, labels.MustNewMatcher(labels.MatchEqual, "__name__", "ALERTS"), labels.MustNewMatcher(labels.MatchEqual, "alertname", "Down"))
		return rec && logRec && v == 1 && alerts
	})

	groups := r.RuleGroups()
	if len(groups) != 2 {
		t.Fatalf("RuleGroups: %d groups, want 2", len(groups))
	}
	lg := r.LogQLRuleGroups()
	if len(lg) != 1 || lg[0].Name() != "live-logs" {
		t.Fatalf("LogQLRuleGroups = %v, want [live-logs]", lg)
	}
	if q := lg[0].Rules()[0].Query().String(); !strings.Contains(q, `count_over_time({run_id=~".+"} |= "CUDA out of memory"`) {
		t.Errorf("LogQL rule query = %q", q)
	}
	for _, g := range groups {
		for _, rule := range g.Rules() {
			if err := rule.LastError(); err != nil {
				t.Errorf("rule %s: %v", rule.Name(), err)
			}
		}
	}
	if n := len(r.AlertingRules()); n != 1 {
		t.Errorf("AlertingRules: %d, want 1", n)
	}
}

// TestApplyConfigRejectsInvalidFile: a broken file is reported with its
// name, line and reason, and the rules loaded before keep running.
func TestApplyConfigRejectsInvalidFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	r := s.newRuler(t, DefaultOptions())
	good := writeFile(t, dir, "good.yml", liveRules)
	if err := r.ApplyConfig(Config{RuleFiles: []string{good}}); err != nil {
		t.Fatal(err)
	}
	r.Start()

	bad := writeFile(t, dir, "bad.yml", `
groups:
  - name: broken
    rules:
      - alert: Broken
        expr: sum(rate(up[5m])
`)
	badLogs := writeFile(t, dir, "bad-logs.yml", `
groups:
  - name: broken-logs
    rules:
      - record: lines
        expr: '{run_id="r1"} |= "x"'
`)
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"promql", Config{RuleFiles: []string{good, bad}}, []string{bad + ": 6:15: group \"broken\", rule 1, \"Broken\": could not parse expression"}},
		{"logql log query", Config{RuleFiles: []string{good}, LogQLRuleFiles: []string{badLogs}}, []string{badLogs + ": 6:15: group \"broken-logs\", rule 1, \"lines\"", "must be a metric query"}},
		{"both languages", Config{RuleFiles: []string{good}, LogQLRuleFiles: []string{good}}, []string{good + " matches both"}},
		{"missing file in list", Config{RuleFiles: []string{good, filepath.Join(dir, "nope", "*.yml")}, LogQLRuleFiles: []string{"["}}, []string{"syntax error in pattern"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.ApplyConfig(tc.cfg)
			if !errors.Is(err, ErrInvalidRules) {
				t.Fatalf("ApplyConfig = %v, want ErrInvalidRules", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if gs := r.RuleGroups(); len(gs) != 1 || gs[0].Name() != "live" {
				t.Errorf("after a failed reload the groups are %v, want the previous [live]", gs)
			}
			if got := r.Config().RuleFiles; len(got) != 1 || got[0] != good {
				t.Errorf("Config().RuleFiles = %v, want the previous one", got)
			}
		})
	}
}

// TestAlertStateSurvivesRestart: a firing alert keeps its activeAt across
// a restart of the ruler and the store (restored from ALERTS_FOR_STATE),
// where a fresh start would make it pending again from the restart.
func TestAlertStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	files := Config{RuleFiles: []string{writeFile(t, dir, "for.yml", `
groups:
  - name: hold
    interval: 200ms
    rules:
      - alert: Down
        expr: up == 0
        for: 1s
`)}}
	up := labels.FromStrings("__name__", "up", "job", "api", "instance", "a")
	opts := DefaultOptions()
	opts.ForGracePeriod = time.Second

	activeAt := func(r *Ruler) (time.Time, rules.AlertState, bool) {
		for _, ar := range r.AlertingRules() {
			for _, a := range ar.ActiveAlerts() {
				return a.ActiveAt, a.State, true
			}
		}
		return time.Time{}, 0, false
	}

	s := openStore(t, data)
	s.appendNow(t, 0, up)
	r := s.newRuler(t, opts)
	if err := r.ApplyConfig(files); err != nil {
		t.Fatal(err)
	}
	r.Start()
	var before time.Time
	waitFor(t, 20*time.Second, "the alert to fire", func() bool {
		at, st, ok := activeAt(r)
		before = at
		return ok && st == rules.StateFiring
	})
	r.Stop()
	s.close(t)

	// Restart later than `for`: a new alert would be pending now.
	time.Sleep(1200 * time.Millisecond)
	s = openStore(t, data)
	s.appendNow(t, 0, up)
	r = s.newRuler(t, opts)
	if err := r.ApplyConfig(files); err != nil {
		t.Fatal(err)
	}
	r.Start()
	waitFor(t, 20*time.Second, "the alert's state to be restored", func() bool {
		at, st, ok := activeAt(r)
		// ALERTS_FOR_STATE keeps activeAt in whole seconds.
		return ok && st == rules.StateFiring && at.Equal(before.Truncate(time.Second))
	})
}
