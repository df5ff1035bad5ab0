package logstore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
)

const day = int64(24 * time.Hour)

func TestPushSelect(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			db := openTestDB(t, t.TempDir())
			defer db.close(t)
			s := openTestStore(t, db, testOptions())
			a := labels.FromStrings("job", "train", "run_id", "r42")
			b := labels.FromStrings("job", "eval", "run_id", "r43")
			// Out of order inside one push and across pushes.
			push(t, s, a, ent(30, "third"), ent(10, "first", "trace_id", "abc"))
			push(t, s, a, ent(20, "second"))
			push(t, s, b, ent(day+5, "next day"))
			if sealed {
				if err := s.Seal(context.Background(), true); err != nil {
					t.Fatal(err)
				}
				push(t, s, a, ent(15, "late"))
			}
			got := selectAll(t, s, logentry.SelectParams{Start: 0, End: 2 * day,
				Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "run_id", "r42")}})
			want := []string{"first", "second", "third"}
			if sealed {
				want = []string{"first", "late", "second", "third"}
			}
			var lines []string
			for _, e := range got {
				lines = append(lines, e.Line)
				if e.stream != a.String() {
					t.Fatalf("stream %s", e.stream)
				}
			}
			if !slices.Equal(lines, want) {
				t.Fatalf("lines %q, want %q", lines, want)
			}
			if got[0].Metadata.Get("trace_id") != "abc" {
				t.Fatalf("metadata %s", got[0].Metadata)
			}
			// Time bounds: [Start, End).
			got = selectAll(t, s, logentry.SelectParams{Start: 15, End: 30})
			lines = lines[:0]
			for _, e := range got {
				lines = append(lines, e.Line)
			}
			want = []string{"second"}
			if sealed {
				want = []string{"late", "second"}
			}
			if !slices.Equal(lines, want) {
				t.Fatalf("[15,30): %q, want %q", lines, want)
			}
			got = selectAll(t, s, logentry.SelectParams{Start: day, End: 2 * day})
			if len(got) != 1 || got[0].Line != "next day" || got[0].stream != b.String() {
				t.Fatalf("day 2: %+v", got)
			}
		})
	}
}

// A log stream is a stream of KindLog in the shared index: label APIs over
// KindAny see it beside metric series.
func TestSharedIndex(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	if _, _, err := db.ix.GetOrCreate(index.KindMetric, labels.FromStrings("__name__", "gpu_util", "run_id", "r42"), 0); err != nil {
		t.Fatal(err)
	}
	push(t, s, labels.FromStrings("run_id", "r42", "service_name", "trainer"), ent(int64(time.Millisecond), "hello"))
	m := labels.MustNewMatcher(labels.MatchEqual, "run_id", "r42")
	for kind, want := range map[index.Kind]uint64{index.KindAny: 2, index.KindLog: 1, index.KindMetric: 1} {
		bm, err := db.ix.Postings(context.Background(), kind, 0, 10, m)
		if err != nil {
			t.Fatal(err)
		}
		if bm.GetCardinality() != want {
			t.Fatalf("kind %v: %d streams, want %d", kind, bm.GetCardinality(), want)
		}
	}
}

// Reopening rebuilds heads from recent records and streams from stream
// records, even when the index never persisted them.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	o := testOptions()
	o.SealEntries = 3
	s, err := Open(context.Background(), db.db, db.ix, o)
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("app", "x")
	var want []string
	for i := range 10 {
		line := fmt.Sprintf("line %d", i)
		push(t, s, ls, ent(int64(i)*int64(time.Hour), line, "i", fmt.Sprint(i)))
		want = append(want, line)
	}
	s.Close()
	db.close(t) // the index was never persisted

	db = openTestDB(t, dir)
	defer db.close(t)
	s = openTestStore(t, db, o)
	got := selectAll(t, s, logentry.SelectParams{Start: 0, End: 2 * day,
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "app", "x")}})
	var lines []string
	for _, e := range got {
		lines = append(lines, e.Line)
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("after reopen %q, want %q", lines, want)
	}
	// Streams created after reopening get new IDs.
	push(t, s, labels.FromStrings("app", "y"), ent(1, "y"))
	if n := len(selectAll(t, s, all())); n != 11 {
		t.Fatalf("%d entries, want 11", n)
	}
}

func TestLineFilterSkipsChunks(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.SealEntries = 100
	s := openTestStore(t, db, o)
	ls := labels.FromStrings("app", "api")
	const chunks = 20
	for c := range chunks {
		es := make([]logentry.Entry, 100)
		for i := range es {
			es[i] = ent(int64(c*100+i), fmt.Sprintf("level=info msg=\"request done\" trace_id=%032x status=200", (c*100+i)*7919))
		}
		push(t, s, ls, es...)
	}
	needle := fmt.Sprintf("%032x", 1234*7919)
	it, err := s.Select(context.Background(), logentry.SelectParams{Start: 0, End: 1 << 40,
		LineFilters: []logentry.LineFilter{{Op: logentry.LineContains, Value: needle}}})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for it.Next() {
		_, e := it.At()
		if e.Timestamp == 1234 {
			found++
		}
	}
	ii := it.(*iterator)
	it.Close()
	if found != 1 {
		t.Fatalf("needle entry found %d times", found)
	}
	if ii.chunksRead > 2 || ii.chunksRead+ii.chunksSkipped != chunks {
		t.Fatalf("read %d chunks, skipped %d, want ≤2 read of %d", ii.chunksRead, ii.chunksSkipped, chunks)
	}
}

func TestRetention(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	ls := labels.FromStrings("app", "x")
	for d := range int64(5) {
		push(t, s, ls, ent(d*day+1, fmt.Sprintf("day %d", d)))
	}
	if err := s.Seal(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := s.DropBefore(context.Background(), 3*day+100); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range selectAll(t, s, all()) {
		lines = append(lines, e.Line)
	}
	if want := []string{"day 3", "day 4"}; !slices.Equal(lines, want) {
		t.Fatalf("after retention %q, want %q", lines, want)
	}
}

func TestConcurrentPushSealSelect(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.SealEntries = 16
	s := openTestStore(t, db, o)
	const writers, perWriter = 4, 200
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			ls := labels.FromStrings("w", fmt.Sprint(w%2))
			for i := range perWriter {
				if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: []logentry.Entry{ent(int64(i), fmt.Sprintf("%d-%d", w, i))}}}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	// The reader checks snapshots while writers push and seal; it never
	// calls t.Fatal (not its goroutine) and is waited for.
	stop, readerDone := make(chan struct{}), make(chan error, 1)
	go func() {
		readerDone <- func() error {
			for {
				select {
				case <-stop:
					return nil
				default:
				}
				it, err := s.Select(context.Background(), all())
				if err != nil {
					return err
				}
				seen := map[string]bool{}
				for it.Next() {
					_, e := it.At()
					if seen[e.Line] {
						it.Close()
						return fmt.Errorf("duplicate %q", e.Line)
					}
					seen[e.Line] = true
				}
				if err := it.Close(); err != nil {
					return err
				}
			}
		}()
	}()
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	if n := len(selectAll(t, s, all())); n != writers*perWriter {
		t.Fatalf("%d entries, want %d", n, writers*perWriter)
	}
}

func TestMetadataQueries(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.SealEntries = 2
	s := openTestStore(t, db, o)
	a := labels.FromStrings("app", "a", "env", "prod")
	b := labels.FromStrings("app", "b")
	push(t, s, a, ent(1, "xx"), ent(2, "yyy"), ent(3, "z"))
	push(t, s, b, ent(4, "1234"))
	ctx := context.Background()
	names, err := s.LabelNames(ctx, 0, day)
	if err != nil || !slices.Equal(names, []string{"app", "env"}) {
		t.Fatalf("names %v %v", names, err)
	}
	vals, err := s.LabelValues(ctx, "app", 0, day, labels.MustNewMatcher(labels.MatchEqual, "env", "prod"))
	if err != nil || !slices.Equal(vals, []string{"a"}) {
		t.Fatalf("values %v %v", vals, err)
	}
	ser, err := s.Series(ctx, 0, day, labels.MustNewMatcher(labels.MatchRegexp, "app", ".+"))
	if err != nil || len(ser) != 2 || !labels.Equal(ser[0], a) || !labels.Equal(ser[1], b) {
		t.Fatalf("series %v %v", ser, err)
	}
	st, err := s.Stats(ctx, 0, day)
	if err != nil {
		t.Fatal(err)
	}
	// Stream a: 3 entries sealed into chunks of 2 and 1; b: 1 in its head.
	if want := (Stats{Streams: 2, Chunks: 2, Entries: 4, Bytes: 10}); st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	// A bound inside the first chunk: it is read, the second counted from
	// its header.
	if st, err = s.Stats(ctx, 2, day); err != nil {
		t.Fatal(err)
	}
	if want := (Stats{Streams: 2, Chunks: 2, Entries: 3, Bytes: 8}); st != want {
		t.Fatalf("stats from 2: %+v, want %+v", st, want)
	}
}

// With background goroutines, full heads are sealed by the sealer; Close
// stops every goroutine.
func TestBackgroundSealer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.MaintenanceInterval = time.Hour
	o.SealEntries = 10
	s, err := Open(context.Background(), db.db, db.ix, o)
	if err != nil {
		t.Fatal(err)
	}
	ls := labels.FromStrings("app", "x")
	for i := range 10 {
		push(t, s, ls, ent(int64(i), fmt.Sprint(i)))
	}
	// Wait for the sealer without timing: a seal call waits for one in
	// progress, and the head is empty once the sealer is done.
	st := s.streams[func() index.ID {
		for id := range s.streams {
			return id
		}
		return 0
	}()]
	for {
		st.mu.Lock()
		n := len(st.entries)
		st.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(selectAll(t, s, all())); n != 10 {
		t.Fatalf("%d entries after sealing, want 10", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMetadataHintSkipsChunks(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	defer db.close(t)
	o := testOptions()
	o.SealEntries = 50
	s := openTestStore(t, db, o)
	ls := labels.FromStrings("app", "api")
	for c := range 10 {
		es := make([]logentry.Entry, 50)
		for i := range es {
			n := c*50 + i
			es[i] = ent(int64(n), "request done", "trace_id", fmt.Sprintf("%032x", n*7919))
		}
		push(t, s, ls, es...)
	}
	want := fmt.Sprintf("%032x", 321*7919)
	it, err := s.SelectWithHints(context.Background(), all(), Hints{MetadataEqual: []labels.Label{{Name: "trace_id", Value: want}}})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for it.Next() {
		if _, e := it.At(); e.Metadata.Get("trace_id") == want {
			found++
		}
	}
	ii := it.(*iterator)
	it.Close()
	if found != 1 || ii.chunksRead != 1 || ii.chunksSkipped != 9 {
		t.Fatalf("found %d, read %d chunks, skipped %d; want 1, 1, 9", found, ii.chunksRead, ii.chunksSkipped)
	}
}

// A push retried by its client stores the lines twice; Select returns them
// once. Equal timestamps with different lines all stay.
func TestDuplicatesReturnedOnce(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", sealed), func(t *testing.T) {
			db := openTestDB(t, t.TempDir())
			defer db.close(t)
			s := openTestStore(t, db, testOptions())
			ls := labels.FromStrings("app", "x")
			batch := []logentry.Entry{ent(5, "a"), ent(5, "b"), ent(6, "c")}
			push(t, s, ls, batch...)
			if sealed {
				if err := s.Seal(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
			push(t, s, ls, batch...) // the retry
			var lines []string
			for _, e := range selectAll(t, s, all()) {
				lines = append(lines, e.Line)
			}
			if want := []string{"a", "b", "c"}; !slices.Equal(lines, want) {
				t.Fatalf("lines %q, want %q", lines, want)
			}
		})
	}
}
