//go:build !unix

package api

import "time"

// processCPU is unavailable here; benchmarks then skip the cpu-ns metric.
func processCPU() time.Duration { return 0 }
