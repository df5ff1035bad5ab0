package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/weftdb/weft/gpuagent"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"-no-such-flag"}, 2},
		{"bad log level", []string{"-log-level", "loud"}, 2},
		{"bad naming", []string{"-naming", "prom", "-once", "-pod-resources-socket", ""}, 1},
		{"bad output", []string{"-once", "-output", "xml", "-pod-resources-socket", ""}, 1},
		{"bad tenant", []string{"-once", "-tenant-id", "a/b", "-pod-resources-socket", ""}, 1},
		{"token and basic auth", []string{"-once", "-bearer-token-file", "t", "-basic-auth-user", "u", "-pod-resources-socket", ""}, 1},
		{"missing token file", []string{"-remote-write-url", "https://127.0.0.1:1/api/v1/write", "-bearer-token-file", "/nonexistent/token", "-listen-addr", "", "-pod-resources-socket", ""}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.args); got != tc.want {
				t.Errorf("run(%v) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}

// TestDeployManifestsUseRealFlags keeps docs/deploy in step with the flags.
func TestDeployManifestsUseRealFlags(t *testing.T) {
	opts := gpuagent.DefaultOptions()
	fs, _ := newFlagSet(&opts)
	re := regexp.MustCompile(`(?m)(?:^\s*-\s+|\s)-([a-z][a-z-]+)[= ]`)
	for _, f := range []string{"../../docs/deploy/weft-agent.service", "../../docs/deploy/weft-agent-daemonset.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			if fs.Lookup(m[1]) == nil {
				t.Errorf("%s uses unknown flag -%s", f, m[1])
			}
			n++
		}
		if n < 5 {
			t.Errorf("%s: found only %d flags; pattern broken?", f, n)
		}
	}
}
