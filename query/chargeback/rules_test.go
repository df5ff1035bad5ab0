package chargeback_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/ruler"
)

const ruleFile = "../../docs/deploy/rules/chargeback.yml"

// TestRuleFile runs the shipped chargeback rules' unit tests (promtool test
// rules format) against weft's rule evaluation.
func TestRuleFile(t *testing.T) {
	if n, errs := ruler.CheckFile(ruleFile, ruler.PromQL); len(errs) > 0 || n != 10 {
		t.Fatalf("%s: %d rules, errors %v", ruleFile, n, errs)
	}
	for _, err := range ruler.RunTestFile(context.Background(), "../../docs/deploy/rules/tests/chargeback.test.yml", ruler.TestOptions{TempDir: t.TempDir()}) {
		t.Error(err)
	}
}

// TestRuleFileMatchesAPI: each recording rule is the API's expression for
// one hour at a one-minute step, so dashboards and the API agree.
func TestRuleFileMatchesAPI(t *testing.T) {
	raw, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct{ Record, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			got[r.Record] = normalize(t, r.Expr)
		}
	}
	names := map[chargeback.Figure]string{
		chargeback.GPUHoursAllocated: "gpu_hours_allocated", chargeback.GPUHoursUsed: "gpu_hours_used",
		chargeback.Samples: "weft_usage_ingested_samples", chargeback.LogBytes: "weft_usage_ingested_log_bytes", chargeback.Spans: "weft_usage_ingested_spans",
	}
	for _, by := range []chargeback.By{chargeback.ByTeam, chargeback.ByNamespace} {
		for f, name := range names {
			rec := string(by) + ":" + name + ":sum1h"
			want := normalize(t, chargeback.Expr(f, by, time.Hour, time.Minute))
			if got[rec] != want {
				t.Errorf("%s:\n got %s\nwant %s", rec, got[rec], want)
			}
			delete(got, rec)
		}
	}
	for rec := range got {
		t.Errorf("rule %s is not an API figure", rec)
	}
}

func normalize(t *testing.T, expr string) string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return e.String()
}
