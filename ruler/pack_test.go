package ruler

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulePack runs the unit tests of the shipped rule pack (rules/tests,
// in the promtool test rules format; rules/tests/logs with weft's LogQL
// extension) against weft's rule evaluation.
func TestRulePack(t *testing.T) {
	files, err := filepath.Glob("../rules/tests/*.test.yml")
	logFiles, lerr := filepath.Glob("../rules/tests/logs/*.test.yml")
	if err != nil || lerr != nil || len(files) == 0 || len(logFiles) == 0 {
		t.Fatalf("no rule pack tests found: %v %v", err, lerr)
	}
	files = append(files, logFiles...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			for _, e := range RunTestFile(context.Background(), f, TestOptions{TempDir: t.TempDir()}) {
				t.Error(e)
			}
		})
	}
}

// packRule is one rule of the shipped pack.
type packRule struct {
	file, group  string
	alert, rec   string
	expr         string
	labels, anns map[string]string
}

func loadPack(t *testing.T) []packRule {
	t.Helper()
	var out []packRule
	for _, set := range []struct {
		glob string
		lang Language
	}{{"../rules/*.yml", PromQL}, {"../rules/logs/*.yml", LogQL}} {
		files, err := filepath.Glob(set.glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("no pack files %s: %v", set.glob, err)
		}
		for _, f := range files {
			rgs, errs := checkFile(f, set.lang, slog.New(slog.DiscardHandler))
			if len(errs) > 0 {
				t.Fatalf("pack file %s does not load: %v", f, errs)
			}
			for _, g := range rgs.Groups {
				for _, r := range g.Rules {
					out = append(out, packRule{file: f, group: g.Name, alert: r.Alert, rec: r.Record,
						expr: strings.TrimPrefix(r.Expr, logqlMarker), labels: r.Labels, anns: r.Annotations})
				}
			}
		}
	}
	return out
}

// TestRulePackCoverage: every alert of the pack carries a severity, a
// summary, a description and a runbook that docs/rules.md has; each is
// tested firing and tested not firing; every recording rule is used by
// another rule or tested directly.
func TestRulePackCoverage(t *testing.T) {
	docs, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	var exprs []string
	tests, _ := filepath.Glob("../rules/tests/*.test.yml")
	logTests, _ := filepath.Glob("../rules/tests/logs/*.test.yml")
	for _, f := range append(tests, logTests...) {
		tf, err := readTestFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range tf.Tests {
			for _, at := range tg.AlertRuleTests {
				if len(at.ExpAlerts) > 0 {
					fires[at.Alertname] = true
				} else {
					quiet[at.Alertname] = true
				}
			}
			for _, et := range tg.PromqlExprTests {
				exprs = append(exprs, et.Expr)
			}
		}
	}
	pack := loadPack(t)
	for _, r := range pack {
		exprs = append(exprs, r.expr)
	}
	alerts := 0
	for _, r := range pack {
		if r.alert == "" {
			used := false
			for _, e := range exprs {
				if strings.Contains(e, r.rec) && e != r.expr {
					used = true
				}
			}
			if !used {
				t.Errorf("recording rule %s (%s) is used by no rule and no promql_expr_test", r.rec, r.file)
			}
			continue
		}
		alerts++
		if r.labels["severity"] == "" || r.anns["summary"] == "" || r.anns["description"] == "" {
			t.Errorf("alert %s (%s) lacks a severity, a summary or a description", r.alert, r.file)
		}
		anchor := strings.ToLower(r.alert)
		if want := "https://github.com/weftdb/weft/blob/main/docs/rules.md#" + anchor; r.anns["runbook_url"] != want {
			t.Errorf("alert %s: runbook_url %q, want %q", r.alert, r.anns["runbook_url"], want)
		}
		if !strings.Contains(string(docs), "\n### "+r.alert+"\n") {
			t.Errorf("alert %s has no runbook section (### %s) in docs/rules.md", r.alert, r.alert)
		}
		if !fires[r.alert] {
			t.Errorf("alert %s is never tested firing", r.alert)
		}
		if !quiet[r.alert] {
			t.Errorf("alert %s is never tested not firing", r.alert)
		}
	}
	if alerts < 30 {
		t.Errorf("the pack has %d alerts; did a file go missing?", alerts)
	}
}
