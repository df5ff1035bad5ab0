package ruler

import (
	"context"
	"strings"
	"testing"
)

func runTestFile(t *testing.T, file string) []error {
	t.Helper()
	return RunTestFile(context.Background(), file, TestOptions{TempDir: t.TempDir()})
}

func TestRunTestFile(t *testing.T) {
	for _, f := range []string{"testdata/basic.test.yml", "testdata/logs.test.yml"} {
		t.Run(f, func(t *testing.T) {
			for _, e := range runTestFile(t, f) {
				t.Error(e)
			}
		})
	}
}

// TestRunTestFileReportsFailures: expectations that do not hold are
// reported, each with what was expected and what was found.
func TestRunTestFileReportsFailures(t *testing.T) {
	errs := runTestFile(t, "testdata/wrong.test.yml")
	if len(errs) != 3 {
		t.Fatalf("got %d errors, want 3: %v", len(errs), errs)
	}
	for i, want := range []string{"time: 5m,", "summary=\"wrong\""} {
		if !strings.Contains(errs[i].Error(), want) || !strings.Contains(errs[i].Error(), "alertname: InstanceDown") {
			t.Errorf("error %d = %v, want it to mention %q", i, errs[i], want)
		}
	}
	if !strings.Contains(errs[1].Error(), `summary="Instance a of api is down"`) {
		t.Errorf("error 1 does not show the alert found: %v", errs[1])
	}
	if want := `got: {__name__="job:up:sum", job="api"} 0`; !strings.Contains(errs[2].Error(), want) {
		t.Errorf("error 2 = %v, want it to contain %q", errs[2], want)
	}
}
