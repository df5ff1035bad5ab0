//go:build unix

package ruler

import (
	"syscall"
	"time"
)

// processCPU returns the user plus system CPU time this process has used.
// The rule benchmark reports it beside wall time: on an oversubscribed
// machine wall time measures the queue for a core as much as the code.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
