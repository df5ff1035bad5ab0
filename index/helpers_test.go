package index

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

const (
	hourMs = int64(time.Hour / time.Millisecond)
	dayMs  = 24 * hourMs
)

// openTestDB opens a Pebble database in a temporary directory with the
// index's merger; it is closed at cleanup.
func openTestDB(tb testing.TB, dir string) *pebble.DB {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Merger: Merger()})
	if err != nil {
		tb.Fatalf("open pebble: %v", err)
	}
	return db
}

// testIndex opens a fresh index over a fresh database.
func testIndex(tb testing.TB, opts Options) (*Index, *pebble.DB, string) {
	tb.Helper()
	dir := tb.TempDir()
	db := openTestDB(tb, dir)
	ix, err := Open(db, opts)
	if err != nil {
		tb.Fatalf("open index: %v", err)
	}
	tb.Cleanup(func() {
		_ = ix.Close()
		_ = db.Close()
	})
	return ix, db, dir
}

func mustCreate(tb testing.TB, ix *Index, kind Kind, ls labels.Labels, t int64) ID {
	tb.Helper()
	id, _, err := ix.GetOrCreate(kind, ls, t)
	if err != nil {
		tb.Fatalf("GetOrCreate(%v, %s): %v", kind, ls, err)
	}
	return id
}

func mustPostings(tb testing.TB, ix *Index, kind Kind, mint, maxt int64, ms ...*labels.Matcher) []ID {
	tb.Helper()
	bm, err := ix.Postings(context.Background(), kind, mint, maxt, ms...)
	if err != nil {
		tb.Fatalf("Postings: %v", err)
	}
	out := []ID{}
	for _, v := range bm.ToArray() {
		out = append(out, ID(v))
	}
	return out
}

func mustMatcher(tb testing.TB, t labels.MatchType, name, value string) *labels.Matcher {
	tb.Helper()
	m, err := labels.NewMatcher(t, name, value)
	if err != nil {
		tb.Fatalf("matcher: %v", err)
	}
	return m
}
