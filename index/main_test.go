package index

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines after every test and benchmark. The
// index starts none; this catches tests that leave a Pebble database or a
// Prometheus head open.
func TestMain(m *testing.M) {
	code := m.Run()
	closePostingsFixture()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
