//go:build unix

package api

import (
	"syscall"
	"time"
)

// rwProcessCPU returns the user plus system CPU time this process has used.
// Benchmarks report CPU time per series beside wall time because the shared
// benchmark machines are oversubscribed: wall time there measures the queue
// for a core as much as the code.
func rwProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
