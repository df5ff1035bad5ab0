package storage

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/promql/promqltest"
	promstorage "github.com/prometheus/prometheus/storage"
)

// testOptions are the options every test store uses: no background loop (the
// tests drive maintenance themselves), a fixed clock far enough in the future
// that promqltest's 1970 timestamps are never "too far in the future".
func testOptions() Options {
	o := DefaultOptions()
	o.CheckpointInterval = -1
	return o
}

// openTestDB opens a store in a fresh temporary directory, closed at cleanup.
func openTestDB(tb testing.TB, opts Options) *DB {
	tb.Helper()
	db, err := Open(context.Background(), tb.TempDir(), opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// TestPromQLConformance runs Prometheus' built-in PromQL test files against
// weft's store, with the engine configured as promqltest.NewTestEngine does.
func TestPromQLConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("promqltest suite is long")
	}
	// Same engine as Prometheus' own TestEvaluations (promql_test.go).
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	promqltest.RunBuiltinTestsWithStorage(t, engine, func(tb testing.TB) promstorage.Storage {
		opts := testOptions()
		// promqltest loads each series in order but in any series order and
		// may load far-apart times; retention must not drop 1970 data.
		opts.Retention = -1
		return openTestDB(tb, opts)
	})
}
