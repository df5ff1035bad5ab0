package tracestore

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// loadSplit pushes every trace in up to three batches minutes apart, as
// several services report one request: some parts are sealed into blocks
// between the batches, some stay in the head. It returns the traces.
func loadSplit(t *testing.T, s *Store, c *clock, traces []*traceentry.Trace) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	var batches [3][]traceentry.Span
	for _, tr := range traces {
		for _, sp := range tr.Spans {
			k := rng.IntN(3)
			batches[k] = append(batches[k], sp)
		}
	}
	for i, b := range batches {
		// Several requests per batch, as exporters send.
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(40))
			push(t, s, b[:n])
			b = b[n:]
		}
		c.advance(2 * time.Minute)
		if i < 2 {
			if err := s.Seal(context.Background(), false); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func checkAllFound(t *testing.T, s *Store, traces []*traceentry.Trace) {
	t.Helper()
	for _, want := range traces {
		got, err := s.FindTraceByID(context.Background(), want.TraceID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			t.Fatalf("trace %s not found", want.TraceID)
		}
		if g, w := traceSigs(got), traceSigs(want); !slices.Equal(g, w) {
			t.Fatalf("trace %s:\n got %q\nwant %q", want.TraceID, g, w)
		}
	}
}

// TestSplitTracesReturnedWhole pushes traces whose spans arrive in three
// batches from several services minutes apart, sealing between them, and
// finds every trace whole by ID: from the head and blocks, after a
// restart that replays the recent records, and after everything is
// sealed.
func TestSplitTracesReturnedWhole(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(t, dir)
	s := openTestStore(t, tdb, testOptions(c))
	traces := genTraces(rand.New(rand.NewPCG(1, 2)), 300, c.t, 5*time.Minute)
	loadSplit(t, s, c, traces)
	st := s.Stats()
	if st.Blocks < 2 || st.HeadTraces == 0 {
		t.Fatalf("stats %+v: want blocks and a head", st)
	}
	checkAllFound(t, s, traces)

	// Crash: the store is not closed, the head is rebuilt from the recent
	// records.
	tdb.close(t)
	tdb = openTestDB(t, dir)
	s = openTestStore(t, tdb, testOptions(c))
	if got := s.Stats(); got.HeadTraces != st.HeadTraces || got.Blocks != st.Blocks {
		t.Fatalf("after reopen %+v, want %+v", got, st)
	}
	checkAllFound(t, s, traces)

	// Everything sealed; a second push of the same spans (a retry) adds
	// no duplicates to what is read.
	push(t, s, traces[0].Spans)
	if err := s.Seal(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.HeadTraces != 0 || st.HeadBytes != 0 {
		t.Fatalf("head not empty after sealing all: %+v", st)
	}
	checkAllFound(t, s, traces)
	var id traceentry.TraceID
	id[0] = 0xff
	if tr, err := s.FindTraceByID(context.Background(), id, 0, 0); err != nil || tr != nil {
		t.Fatalf("unknown trace: %v, %v", tr, err)
	}
	// Nothing is left to replay.
	n := 0
	lo, hi := tagBound(tagRecent)
	if err := s.scan(lo, hi, func(_, _ []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d recent records left (%v)", n, err)
	}
	tdb.close(t)
}

// TestStreamsInSharedIndex checks that trace resources are streams of
// KindTrace in the shared index, restored on reopen.
func TestStreamsInSharedIndex(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t: time.Now()}
	tdb := openTestDB(t, dir)
	s := openTestStore(t, tdb, testOptions(c))
	traces := genTraces(rand.New(rand.NewPCG(3, 4)), 20, c.t, time.Minute)
	for _, tr := range traces {
		push(t, s, tr.Spans)
	}
	check := func() {
		t.Helper()
		m := labels.MustNewMatcher(labels.MatchEqual, "run_id", "r1")
		ids, err := tdb.ix.Postings(context.Background(), index.KindTrace, 0, 1<<62, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tdb.ix.LabelValues(context.Background(), index.KindTrace, "service_name", 0, 1<<62, m)
		if err != nil {
			t.Fatal(err)
		}
		// Resources 1 and 3 (model-server, loader) carry run r1.
		if ids.GetCardinality() != 2 || !slices.Equal(got, []string{"loader", "model-server"}) {
			t.Fatalf("run_id=r1: %d streams, services %v", ids.GetCardinality(), got)
		}
		none, err := tdb.ix.Postings(context.Background(), index.KindMetric, 0, 1<<62, m)
		if err != nil || none.GetCardinality() != 0 {
			t.Fatalf("trace streams leak into metrics: %v %v", none, err)
		}
	}
	check()
	tdb.close(t)
	tdb = openTestDB(t, dir)
	openTestStore(t, tdb, testOptions(c))
	check()
	tdb.close(t)
}

// TestRetention drops whole partitions by the substrate's clock and keeps
// the rest; too-old spans are refused at push.
func TestRetention(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(t, t.TempDir())
	o := testOptions(c)
	o.Retention = 48 * time.Hour
	s := openTestStore(t, tdb, o)
	old := genTraces(rand.New(rand.NewPCG(5, 6)), 30, c.t.Add(-40*time.Hour), time.Minute)
	recent := genTraces(rand.New(rand.NewPCG(6, 7)), 30, c.t, time.Minute)
	for _, tr := range append(slices.Clone(old), recent...) {
		push(t, s, tr.Spans)
	}
	if err := s.Seal(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	res := push(t, s, genTraces(rand.New(rand.NewPCG(8, 9)), 1, c.t.Add(-50*time.Hour), time.Minute)[0].Spans)
	if res.Accepted != 0 || res.TooOld == 0 {
		t.Fatalf("too-old spans: %+v", res)
	}
	c.advance(24 * time.Hour) // old data's day ends before now-48h
	if err := s.DropBefore(context.Background(), c.t.Add(-o.Retention).UnixNano()); err != nil {
		t.Fatal(err)
	}
	for _, tr := range old {
		if got, err := s.FindTraceByID(context.Background(), tr.TraceID, 0, 0); err != nil || got != nil {
			t.Fatalf("dropped trace %s still found (%v)", tr.TraceID, err)
		}
	}
	checkAllFound(t, s, recent)
	tdb.close(t)
}
