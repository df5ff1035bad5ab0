//go:build race

package tracestore

// raceEnabled shrinks the heaviest tests under the race detector (10x slower).
const raceEnabled = true
