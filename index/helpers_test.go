package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

const dayMs = 24 * hourMs

// openTestDB opens a Pebble database in a temporary directory with the
// index's merger; it is closed at cleanup.
func openTestDB(tb testing.TB, dir string) *pebble.DB {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Merger: Merger(), Logger: quietLogger{}})
	if err != nil {
		tb.Fatalf("open pebble: %v", err)
	}
	return db
}

// testEnv is an index over a database in a temporary directory; both are
// closed at cleanup, whichever reopen left current.
type testEnv struct {
	tb   testing.TB
	dir  string
	opts Options
	db   *pebble.DB
	ix   *Index
}

func newTestEnv(tb testing.TB, opts Options) *testEnv {
	tb.Helper()
	e := &testEnv{tb: tb, dir: tb.TempDir(), opts: opts}
	e.open()
	tb.Cleanup(func() {
		_ = e.ix.Close()
		_ = e.db.Close()
	})
	return e
}

func (e *testEnv) open() {
	e.tb.Helper()
	e.db = openTestDB(e.tb, e.dir)
	ix, err := Open(e.db, e.opts)
	if err != nil {
		e.tb.Fatalf("open index: %v", err)
	}
	e.ix = ix
}

// reopen persists the index, closes it and the database, and opens both again.
func (e *testEnv) reopen() *Index {
	e.tb.Helper()
	if err := e.ix.Persist(context.Background()); err != nil {
		e.tb.Fatalf("persist: %v", err)
	}
	if err := e.ix.Close(); err != nil {
		e.tb.Fatal(err)
	}
	if err := e.db.Close(); err != nil {
		e.tb.Fatal(err)
	}
	e.open()
	return e.ix
}

// testIndex opens a fresh index over a fresh database.
func testIndex(tb testing.TB, opts Options) (*Index, *pebble.DB, string) {
	tb.Helper()
	e := newTestEnv(tb, opts)
	return e.ix, e.db, e.dir
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

// quietLogger keeps Pebble's informational logs out of test output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
