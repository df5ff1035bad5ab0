package ruler

import (
	"context"
	"path/filepath"
	"testing"
)

// TestRulePack runs the unit tests of the shipped rule pack (rules/tests,
// in the promtool test rules format) against weft's rule evaluation.
func TestRulePack(t *testing.T) {
	files, err := filepath.Glob("../rules/tests/*.test.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule pack tests found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			for _, e := range RunTestFile(context.Background(), f, TestOptions{TempDir: t.TempDir()}) {
				t.Error(e)
			}
		})
	}
}
