package gpuagent

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryMetric keeps docs/gpu-agent.md in step with the metric
// definitions: every family has a row in the metrics table with its type
// and its source, and both its names appear.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := os.ReadFile("../docs/gpu-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells
	}
	for _, d := range AllMetrics {
		for _, name := range []string{d.DCGM, d.OTel} {
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/gpu-agent.md does not list %s", name)
			}
		}
		row, ok := rows[d.DCGM]
		if !ok || len(row) != 8 {
			t.Errorf("docs/gpu-agent.md has no 8-column metrics row for %s (%d cells)", d.DCGM, len(row))
			continue
		}
		if row[1] != d.Type.String() {
			t.Errorf("docs give %s type %s, the agent %s", d.DCGM, row[1], d.Type)
		}
		if row[3] == "" || row[3] == "—" {
			t.Errorf("docs give no source for %s", d.DCGM)
		}
	}
}
