//go:build cgo

package gpuagent

import (
	"log/slog"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// newDefaultSource loads libnvml.so.1 lazily: nvml.New only records the
// library path; nothing is loaded before the first Init.
func newDefaultSource(log *slog.Logger) source {
	return NewCollector(nvml.New(), log, nil)
}
