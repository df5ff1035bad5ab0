package query_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// pushdown's parallel groups and every store a test opens must be done.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Pebble's background helper outlives a DB by design.
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble/v2/internal/ewma.init.0.func1"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}
