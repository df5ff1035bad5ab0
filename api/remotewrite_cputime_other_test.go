//go:build !unix

package api

import "time"

// rwProcessCPU is unavailable here; benchmarks then skip the cpu-ns metric.
func rwProcessCPU() time.Duration { return 0 }
