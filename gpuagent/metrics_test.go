package gpuagent

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryMetric keeps docs/gpu-agent.md in step with the metric
// definitions.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../docs/gpu-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range AllMetrics {
		for _, name := range []string{d.DCGM, d.OTel} {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/gpu-agent.md does not list %s", name)
			}
		}
	}
}
