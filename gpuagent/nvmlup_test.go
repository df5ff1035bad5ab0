package gpuagent

import (
	"strconv"

	"github.com/grafana/regexp"
)

// nvmlUpRe matches the exposition line of gpu_agent_nvml_up with value v,
// whatever its host label.
func nvmlUpRe(v int) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^gpu_agent_nvml_up(\{[^}]*\})? ` + strconv.Itoa(v) + `$`)
}
