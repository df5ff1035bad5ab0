//go:build !race

package logql

// raceEnabled: see race_on_test.go.
const raceEnabled = false
