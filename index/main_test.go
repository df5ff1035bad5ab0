package index

import (
	"testing"

	"go.uber.org/goleak"
)

// The index starts no goroutines; this also checks that tests close every
// Pebble database they open.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
