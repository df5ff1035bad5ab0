//go:build race

package traceql

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// the regexp package's pooled matchers allocate under it.
const raceEnabled = true
