package logstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
)

// testDB is a Pebble database and index as storage.Open makes them.
type testDB struct {
	dir string
	db  *pebble.DB
	ix  *index.Index
}

func openTestDB(tb testing.TB, dir string) *testDB {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Merger: index.Merger(), Logger: quietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(db, index.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return &testDB{dir: dir, db: db, ix: ix}
}

func (t *testDB) close(tb testing.TB) {
	tb.Helper()
	if err := t.ix.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := t.db.Close(); err != nil {
		tb.Fatal(err)
	}
}

func testOptions() Options {
	o := DefaultOptions()
	o.MaintenanceInterval = -1
	o.NoSealOnClose = true // tests close the database before their cleanup closes the store
	return o
}

func openTestStore(tb testing.TB, t *testDB, o Options) *Store {
	tb.Helper()
	s, err := Open(context.Background(), t.db, t.ix, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

type gotEntry struct {
	stream string
	logentry.Entry
}

// selectAll drains Select and checks each stream's order.
func selectAll(tb testing.TB, s *Store, p logentry.SelectParams) []gotEntry {
	tb.Helper()
	it, err := s.Select(context.Background(), p)
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	var out []gotEntry
	for it.Next() {
		ls, e := it.At()
		if n := len(out); n > 0 && out[n-1].stream == ls.String() && out[n-1].Timestamp > e.Timestamp {
			tb.Fatalf("stream %s out of order: %d after %d", ls, e.Timestamp, out[n-1].Timestamp)
		}
		out = append(out, gotEntry{ls.String(), e})
	}
	if err := it.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func push(tb testing.TB, s *Store, ls labels.Labels, es ...logentry.Entry) {
	tb.Helper()
	if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: es}}); err != nil {
		tb.Fatal(err)
	}
}

func ent(ts int64, line string, md ...string) logentry.Entry {
	return logentry.Entry{Timestamp: ts, Line: line, Metadata: labels.FromStrings(md...)}
}

func all() logentry.SelectParams {
	return logentry.SelectParams{Start: 0, End: 1 << 62}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(string, ...any)        {}
func (quietLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
