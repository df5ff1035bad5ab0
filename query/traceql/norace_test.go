//go:build !race

package traceql

const raceEnabled = false
