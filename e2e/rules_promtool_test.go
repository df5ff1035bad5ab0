package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulePackWithPromtool is a differential check of the shipped rule
// pack: the real promtool of the pinned Prometheus validates the PromQL
// rule files (including its lint) and passes the same unit tests that
// ruler.TestRulePack runs on weft's own evaluation.
func TestRulePackWithPromtool(t *testing.T) {
	promtool := peerBinary(t, "promtool")
	root := repoRoot(t)
	rules, err := filepath.Glob(filepath.Join(root, "rules", "*.yml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule files: %v", err)
	}
	tests, err := filepath.Glob(filepath.Join(root, "rules", "tests", "*.test.yml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule tests: %v", err)
	}
	for _, args := range [][]string{
		append([]string{"check", "rules"}, rules...),
		append([]string{"test", "rules"}, tests...),
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s %s: %v\n%s", args[0], args[1], err, out)
			continue
		}
		if n := strings.Count(string(out), "SUCCESS"); n != len(args)-2 {
			t.Errorf("promtool %s %s: %d files succeeded, want %d:\n%s", args[0], args[1], n, len(args)-2, out)
		}
	}
}
