//go:build race

package logql

// raceEnabled: the race detector's sync.Pool drops pooled values at
// random, so code that pools per call (regexp's matchers) allocates far
// more than in a normal build; allocation bounds that would measure that
// are checked in normal builds only.
const raceEnabled = true
