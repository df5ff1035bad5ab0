package ruler

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// TestFirstEvaluationIsNotified: an alert without `for` fires on its
// group's first evaluation, right after Start. Prometheus' notifier drops
// an alert queued before discovery has handed it the Alertmanagers, and
// the alert would then wait for its resend (an hour here); Start waits for
// the first target update, so the first notification is delivered.
func TestFirstEvaluationIsNotified(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	s.appendNow(t, 0, labels.FromStrings("__name__", "up", "job", "trainer"))
	am := newFakeAlertmanager(t)
	opts := DefaultOptions()
	opts.ResendDelay = time.Hour
	// Discovery's first update comes at its first tick; a slow one makes
	// the race certain rather than likely.
	opts.DiscoveryUpdate = 500 * time.Millisecond
	r := s.newRuler(t, opts)
	cfg := Config{Alerting: am.alerting(), RuleFiles: []string{writeFile(t, dir, "down.yml", `
groups:
  - name: down
    interval: 50ms
    rules:
      - alert: Down
        expr: up == 0
`)}}
	if err := r.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.Start()
	if waited := time.Since(start); waited > syncWait {
		t.Errorf("Start waited %s for the Alertmanagers, more than its bound %s", waited, syncWait)
	}
	if len(r.Alertmanagers()) != 1 {
		t.Fatalf("after Start the notifier knows %v, want the configured Alertmanager", r.Alertmanagers())
	}
	waitFor(t, 10*time.Second, "the first notification of Down", func() bool { return len(am.named("Down")) > 0 })
}

// TestStartWithoutAlertmanagers: with no Alertmanager configured, Start
// does not wait for a target update that never comes.
func TestStartWithoutAlertmanagers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, filepath.Join(dir, "data"))
	r := s.newRuler(t, DefaultOptions())
	if err := r.ApplyConfig(Config{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.Start()
	if waited := time.Since(start); waited >= syncWait {
		t.Errorf("Start without Alertmanagers waited %s", waited)
	}
}
