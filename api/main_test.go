package api_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// handler, tail connection, receiver and server a test starts must be
// stopped by the test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Pebble's background helper outlives a DB by design.
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble/v2/internal/ewma.init.0.func1"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}
