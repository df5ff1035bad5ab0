package storage

import (
	"context"
	"testing"
)

// testOptions are the options every test store uses: no background loops
// (the tests drive maintenance themselves) and no retention.
func testOptions() Options {
	o := DefaultOptions()
	o.CheckpointInterval = -1
	// Tests write samples from 1970 on; the wall-clock retention would
	// refuse them. Retention tests set it, and the clock, themselves.
	o.Retention = -1
	o.RetentionInterval = -1
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
