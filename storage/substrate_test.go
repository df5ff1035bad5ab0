package storage

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// subClock is a settable wall clock for the substrate and its stores.
type subClock struct{ ms atomic.Int64 }

func (c *subClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *subClock) set(t time.Time)     { c.ms.Store(t.UnixMilli()) }
func (c *subClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

const day = 24 * time.Hour

// openTestSubstrate opens a substrate on dir with retention under the test's
// control: no background loop, the clock given.
func openTestSubstrate(tb testing.TB, dir string, clock *subClock, tune func(*Options)) *Substrate {
	tb.Helper()
	opts := DefaultOptions()
	opts.CheckpointInterval = -1
	opts.RetentionInterval = -1
	opts.Now = clock.now
	opts.Logs.MaintenanceInterval = -1
	if tune != nil {
		tune(&opts)
	}
	sub, err := OpenSubstrate(context.Background(), dir, opts)
	if err != nil {
		tb.Fatalf("open substrate: %v", err)
	}
	return sub
}

func pushLog(tb testing.TB, sub *Substrate, ls labels.Labels, t time.Time, line string) {
	tb.Helper()
	err := sub.Logs().Push(context.Background(), []logstore.PushStream{{Labels: ls, Entries: []logentry.Entry{{Timestamp: t.UnixNano(), Line: line}}}})
	if err != nil {
		tb.Fatalf("push log: %v", err)
	}
}

func logLines(tb testing.TB, sub *Substrate, ms ...*labels.Matcher) []string {
	tb.Helper()
	it, err := sub.Logs().Select(context.Background(), logentry.SelectParams{Start: 0, End: 1 << 62, Matchers: ms})
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		_, e := it.At()
		out = append(out, e.Line)
	}
	if err := it.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func appendMetric(tb testing.TB, db *DB, ls labels.Labels, t time.Time, v float64) {
	tb.Helper()
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, t.UnixMilli(), v); err != nil {
		tb.Fatalf("append: %v", err)
	}
	if err := app.Commit(); err != nil {
		tb.Fatalf("commit: %v", err)
	}
}

func postingsOf(tb testing.TB, sub *Substrate, kind index.Kind, ms ...*labels.Matcher) uint64 {
	tb.Helper()
	bm, err := sub.Index().Postings(context.Background(), kind, 0, 1<<62, ms...)
	if err != nil {
		tb.Fatal(err)
	}
	return bm.GetCardinality()
}

// TestLogsOnlyRetention: a store that holds only logs drops its expired log
// chunks and their postings by wall clock, and the forgotten streams stay
// forgotten after a restart.
func TestLogsOnlyRetention(t *testing.T) {
	dir := t.TempDir()
	clock := &subClock{}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	clock.set(t0)
	sub := openTestSubstrate(t, dir, clock, nil)
	run := labels.MustNewMatcher(labels.MatchEqual, "run_id", "r42")
	pushLog(t, sub, labels.FromStrings("run_id", "r42", "app", "old"), t0, "old line")
	clock.add(20 * day)
	pushLog(t, sub, labels.FromStrings("run_id", "r42", "app", "new"), clock.now(), "new line")
	if err := sub.Flush(context.Background()); err != nil { // seal into chunks
		t.Fatal(err)
	}
	if n := postingsOf(t, sub, index.KindLog, run); n != 2 {
		t.Fatalf("log postings before retention = %d, want 2", n)
	}

	clock.add(12 * day) // the old stream is 32 days old, the new one 12
	if err := sub.ApplyRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := logLines(t, sub, run); len(got) != 1 || got[0] != "new line" {
		t.Fatalf("lines after retention = %q, want [new line]", got)
	}
	if n := postingsOf(t, sub, index.KindLog, run); n != 1 {
		t.Fatalf("log postings after retention = %d, want 1 (the old stream's must go)", n)
	}
	vals, err := sub.Index().LabelValues(context.Background(), index.KindLog, "app", 0, 1<<62)
	if err != nil || len(vals) != 1 || vals[0] != "new" {
		t.Fatalf("label values of app = %v, %v; want [new]", vals, err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}

	sub = openTestSubstrate(t, dir, clock, nil)
	defer sub.Close()
	if n := postingsOf(t, sub, index.KindLog, run); n != 1 {
		t.Fatalf("log postings after reopen = %d, want 1: the log store restored a forgotten stream", n)
	}
	if got := logLines(t, sub, run); len(got) != 1 || got[0] != "new line" {
		t.Fatalf("lines after reopen = %q, want [new line]", got)
	}
	// A line older than the retention is refused: it would be dropped at
	// the next pass.
	err = sub.Logs().Push(context.Background(), []logstore.PushStream{{Labels: labels.FromStrings("app", "late"),
		Entries: []logentry.Entry{{Timestamp: t0.UnixNano(), Line: "too old"}}}})
	if !errors.Is(err, logstore.ErrTooOld) {
		t.Fatalf("push of a 32-day-old line: err = %v, want ErrTooOld", err)
	}
}

// TestRetentionPerSignal: each signal is judged by its own retention on the
// one wall clock. Metrics that stopped long ago are dropped without taking
// the logs of the same run with them, and a shorter log retention drops
// logs while metrics of the same partitions stay.
func TestRetentionPerSignal(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	run := labels.MustNewMatcher(labels.MatchEqual, "run_id", "r7")
	metric := labels.FromStrings("__name__", "gpu_util", "run_id", "r7")
	stream := labels.FromStrings("run_id", "r7", "app", "trainer")

	t.Run("metrics stopped long ago", func(t *testing.T) {
		clock := &subClock{}
		clock.set(t0)
		sub := openTestSubstrate(t, t.TempDir(), clock, nil)
		defer sub.Close()
		appendMetric(t, sub.Metrics(), metric, t0, 1)
		clock.add(25 * day)
		pushLog(t, sub, stream, clock.now(), "step 100")
		if err := sub.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.add(15 * day) // metrics 40 days old, logs 15
		if err := sub.ApplyRetention(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := postingsOf(t, sub, index.KindMetric, run); n != 0 {
			t.Errorf("metric postings after retention = %d, want 0", n)
		}
		if res := queryAll(t, sub.Metrics(), 0, 1<<62); len(res) != 0 {
			t.Errorf("metric samples after retention: %v", res)
		}
		if n := postingsOf(t, sub, index.KindLog, run); n != 1 {
			t.Errorf("log postings = %d, want 1: metric retention dropped logs", n)
		}
		if got := logLines(t, sub, run); len(got) != 1 {
			t.Errorf("lines = %q, want [step 100]", got)
		}
	})

	t.Run("shorter log retention", func(t *testing.T) {
		clock := &subClock{}
		clock.set(t0)
		sub := openTestSubstrate(t, t.TempDir(), clock, func(o *Options) {
			o.SignalRetention.Logs = 14 * day
			o.SignalRetention.Metrics = 60 * day
		})
		defer sub.Close()
		appendMetric(t, sub.Metrics(), metric, t0, 1)
		pushLog(t, sub, stream, t0, "step 1")
		if err := sub.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.add(20 * day)
		if err := sub.ApplyRetention(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := postingsOf(t, sub, index.KindLog, run); n != 0 {
			t.Errorf("log postings after 20 days with 14d retention = %d, want 0", n)
		}
		if got := logLines(t, sub, run); len(got) != 0 {
			t.Errorf("lines = %q, want none", got)
		}
		if n := postingsOf(t, sub, index.KindMetric, run); n != 1 {
			t.Errorf("metric postings = %d, want 1: log retention dropped metrics", n)
		}
		if res := queryAll(t, sub.Metrics(), 0, 1<<62); len(res) != 1 {
			t.Errorf("metric series after log retention = %d, want 1", len(res))
		}
		if got := sub.Retention(index.KindTrace); got != 30*day {
			t.Errorf("trace retention = %v, want the 30d default", got)
		}
	})
}

// TestDataDirInUse: a second substrate on the same directory fails at once
// and says who holds it.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	clock := &subClock{}
	clock.set(time.Now())
	sub := openTestSubstrate(t, dir, clock, nil)
	defer sub.Close()
	opts := DefaultOptions()
	opts.CheckpointInterval, opts.RetentionInterval = -1, -1
	_, err := OpenSubstrate(context.Background(), dir, opts)
	if !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second open: err = %v, want ErrDirInUse", err)
	}
	if !strings.Contains(err.Error(), "pid") {
		t.Errorf("error %q does not name the holder's pid", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenSubstrate(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
