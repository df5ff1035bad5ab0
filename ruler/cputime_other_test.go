//go:build !unix

package ruler

import "time"

// processCPU is unavailable here; the benchmark then reports no cpu-ns/op.
func processCPU() time.Duration { return 0 }
