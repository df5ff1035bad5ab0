package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/weftdb/weft/ruler"
)

// TestRulesReload: the server evaluates its rule files, reloads them on
// the reload signal and on POST /-/reload, and keeps its rules when a
// reload finds a broken file.
func TestRulesReload(t *testing.T) {
	// After startApp's cleanup, which stops the app: cleanups run last first.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(rules, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("groups:\n  - name: first\n    interval: 100ms\n    rules:\n      - record: one\n        expr: vector(1)\n")

	opts := testOptions(t, filepath.Join(dir, "data"))
	opts.Rules.Config = ruler.Config{RuleFiles: []string{rules}}
	sig := make(chan os.Signal, 1)
	opts.Rules.ReloadSignal = sig
	a := startApp(t, opts)
	base := "http://" + a.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}
	waitRules := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, body := getBody(t, client, base+"/api/v1/rules")
			if strings.Contains(body, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("rules never showed %q: %s", want, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitRules(`"name":"first"`)
	// The recording rule writes into the store the API queries.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := getBody(t, client, base+"/api/v1/query?query=one")
		if strings.Contains(body, `"__name__":"one"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recording rule result never queryable: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	write("groups:\n  - name: second\n    interval: 100ms\n    rules:\n      - record: two\n        expr: vector(2)\n")
	sig <- syscall.SIGHUP
	waitRules(`"name":"second"`)

	write("groups:\n  - name: third\n    rules:\n      - record: three\n        expr: vector(\n")
	resp, err := client.Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4096)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b[:n]), rules+": 5:15:") {
		t.Errorf("reload of a broken file: %d %s", resp.StatusCode, b[:n])
	}
	if _, body := getBody(t, client, base+"/api/v1/rules"); !strings.Contains(body, `"name":"second"`) {
		t.Errorf("after a failed reload the rules are %s", body)
	}
}

// TestRulesInvalidAtStart: a broken rule file fails start-up with its
// file and line.
func TestRulesInvalidAtStart(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up >\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, filepath.Join(dir, "data"))
	opts.Rules.Config = ruler.Config{RuleFiles: []string{rules}}
	a, err := New(context.Background(), opts)
	if err == nil {
		_ = a.Stop(context.Background())
		t.Fatal("New succeeded with a broken rule file")
	}
	if !strings.Contains(err.Error(), rules+": 5:15: group \"g\", rule 1, \"A\"") {
		t.Errorf("error %v does not name the file and line", err)
	}
}

// TestRulesOnClusterTargets: rule files run on a querier only when it
// can write what they record to the ingest log, and never on a
// distributor or block builder, which neither store nor query.
func TestRulesOnClusterTargets(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, []byte("groups:\n  - name: g\n    rules:\n      - record: r\n        expr: vector(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for target, want := range map[Target]string{
		TargetQuerier:     "need -kafka.brokers",
		TargetDistributor: "rule files need a store or a querier",
	} {
		opts := testOptions(t, filepath.Join(dir, string(target)))
		opts.Cluster.Target = target
		opts.Cluster.Partitions = 2
		opts.Cluster.Querier.Ingesters = []string{"http://127.0.0.1:1"}
		if target == TargetDistributor {
			opts.Cluster.Kafka.Brokers = []string{"127.0.0.1:1"}
		}
		opts.Rules.Config = ruler.Config{RuleFiles: []string{rules}}
		a, err := New(context.Background(), opts)
		if err == nil {
			_ = a.Stop(context.Background())
			t.Fatalf("%s started with rule files", target)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", target, err, want)
		}
	}
}
