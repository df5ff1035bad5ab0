//go:build !cgo

package gpuagent

import (
	"context"
	"log/slog"
	"time"
)

// noNVML is the source of a build without cgo: go-nvml needs cgo, so NVML is
// always down and the agent serves gpu_agent_nvml_up 0.
type noNVML struct{ events chan Event }

func newDefaultSource(log *slog.Logger) source {
	log.Warn("nvml_unavailable: weft-agent was built without cgo; no GPU telemetry, serving gpu_agent_nvml_up 0")
	return noNVML{events: make(chan Event)}
}

func (n noNVML) Collect(context.Context) Snapshot { return Snapshot{Time: time.Now()} }
func (n noNVML) Events() <-chan Event             { return n.events }
func (n noNVML) Close() error                     { return nil }
