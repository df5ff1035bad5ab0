package usage_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Pebble's and glog-style background helpers that outlive a DB by design.
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble/v2/internal/ewma.init.0.func1"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}
