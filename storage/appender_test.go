package storage

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index"
)

func TestAppendSemantics(t *testing.T) {
	ls := labels.FromStrings("__name__", "m", "job", "a")
	const min = int64(time.Minute / time.Millisecond)
	tests := []struct {
		name    string
		t       int64
		v       float64
		wantErr error
	}{
		{name: "duplicate same value is idempotent", t: 20 * min, v: 20},
		{name: "duplicate different value", t: 20 * min, v: 21, wantErr: ErrDuplicateSample},
		{name: "out of order within window", t: 15 * min, v: 15},
		{name: "out of order duplicate same value", t: 15 * min, v: 15},
		{name: "out of order duplicate different value", t: 15 * min, v: 16, wantErr: ErrDuplicateSample},
		{name: "beyond window", t: 9*min - 1, v: 9, wantErr: ErrOutOfWindow},
		{name: "in order", t: 21 * min, v: 21},
	}
	db := openTestDB(t, testOptions())
	mustAppend(t, db, ls, 10*min, 10)
	mustAppend(t, db, ls, 20*min, 20)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := db.Appender(context.Background())
			_, err := app.Append(0, ls, tc.t, tc.v)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("append err = %v, want %v", err, tc.wantErr)
			}
			if err := app.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
		})
	}
	res := queryAll(t, db, 0, 100*min)[ls.String()]
	want := []int64{10 * min, 15 * min, 20 * min, 21 * min}
	if len(res) != len(want) {
		t.Fatalf("got %d samples %v, want %v", len(res), res, want)
	}
	for i, g := range res {
		if g.T != want[i] || g.V != float64(g.T/min) {
			t.Fatalf("sample %d = %+v, want t=%d v=%d", i, g, want[i], want[i]/min)
		}
	}
	if !errors.Is(ErrOutOfWindow, promstorage.ErrTooOldSample) || !errors.Is(ErrDuplicateSample, promstorage.ErrDuplicateSampleForTimestamp) || !errors.Is(ErrTooFarInFuture, promstorage.ErrOutOfBounds) {
		t.Fatal("weft errors must match their Prometheus equivalents")
	}
	st := db.Stats()
	if st.SamplesRejected[RejectDuplicate] != 2 || st.SamplesRejected[RejectOutOfWindow] != 1 {
		t.Fatalf("rejected = %v", st.SamplesRejected)
	}
}

func TestNaNDuplicates(t *testing.T) {
	db := openTestDB(t, testOptions())
	ls := labels.FromStrings("__name__", "nan")
	mustAppend(t, db, ls, 1000, math.NaN())
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, 1000, math.NaN()); err != nil {
		t.Fatalf("same NaN kind: %v", err)
	}
	if _, err := app.Append(0, ls, 1000, math.Float64frombits(value.StaleNaN)); !errors.Is(err, ErrDuplicateSample) {
		t.Fatalf("stale NaN over NaN: err = %v", err)
	}
	_ = app.Rollback()
}

func TestInvalidLabels(t *testing.T) {
	db := openTestDB(t, testOptions())
	for name, ls := range map[string]labels.Labels{
		"empty":     labels.EmptyLabels(),
		"bad utf8":  labels.FromStrings("__name__", "x", "a", "\xff"),
		"duplicate": labels.New(labels.Label{Name: "a", Value: "1"}, labels.Label{Name: "a", Value: "2"}),
	} {
		t.Run(name, func(t *testing.T) {
			app := db.Appender(context.Background())
			if _, err := app.Append(0, ls, 1, 1); !errors.Is(err, ErrInvalidLabels) {
				t.Fatalf("err = %v, want ErrInvalidLabels", err)
			}
			_ = app.Rollback()
		})
	}
}

func TestTooFarInFuture(t *testing.T) {
	opts := testOptions()
	now := time.UnixMilli(1_000_000)
	opts.Now = func() time.Time { return now }
	db := openTestDB(t, opts)
	app := db.Appender(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "f"), now.Add(2*time.Hour).UnixMilli(), 1); !errors.Is(err, ErrTooFarInFuture) {
		t.Fatalf("err = %v", err)
	}
	_ = app.Rollback()
}

// TestOlderThanRetention: a sample older than the wall clock minus the
// retention is rejected for any series, a new one too, while a new series
// may start anywhere inside the retention.
func TestOlderThanRetention(t *testing.T) {
	opts := testOptions()
	opts.Retention = 24 * time.Hour
	db := openTestDB(t, opts)
	now := time.Now().UnixMilli()
	app := db.Appender(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "a"), now, 1); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	app = db.Appender(context.Background())
	if _, err := app.Append(0, labels.FromStrings("__name__", "b"), 0, 1); !errors.Is(err, ErrOutOfWindow) || !errors.Is(err, promstorage.ErrTooOldSample) {
		t.Fatalf("1970 sample of a new series: err = %v, want ErrOutOfWindow", err)
	}
	if _, err := app.Append(0, labels.FromStrings("__name__", "c"), now-23*time.Hour.Milliseconds(), 1); err != nil {
		t.Fatalf("new series inside the retention: %v", err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestRollbackDiscards(t *testing.T) {
	db := openTestDB(t, testOptions())
	ls := labels.FromStrings("__name__", "r")
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := app.Rollback(); err != nil {
		t.Fatal(err)
	}
	if res := queryAll(t, db, 0, 10); len(res) != 0 {
		t.Fatalf("rolled back samples visible: %v", res)
	}
}

func TestHistogramsExemplarsMetadataST(t *testing.T) {
	db := openTestDB(t, testOptions())
	ctx := context.Background()
	h := &histogram.Histogram{Schema: 1, Count: 5, Sum: 12, ZeroCount: 1, ZeroThreshold: 0.001,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 0}}
	fh := &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 3.5, Sum: 7,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1.5, 2}, CustomValues: []float64{1, 5}}
	hl := labels.FromStrings("__name__", "h")
	fl := labels.FromStrings("__name__", "fh")
	cl := labels.FromStrings("__name__", "c_total")
	app := db.AppenderV2(ctx)
	for i := int64(0); i < 3; i++ {
		if _, err := app.Append(0, hl, 0, 1000*(i+1), 0, h, nil, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Append(0, fl, 0, 1000*(i+1), 0, nil, fh, promstorage.AOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ex := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "abc"), Value: 3, Ts: 2000, HasTs: true}
	md := metadata.Metadata{Type: model.MetricTypeCounter, Help: "a counter", Unit: "seconds"}
	if _, err := app.Append(0, cl, 500, 2000, 3, nil, nil, promstorage.AOptions{Metadata: md, Exemplars: []exemplar.Exemplar{ex}}); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	res := queryAll(t, db, 0, 10_000)
	if got := res[hl.String()]; len(got) != 3 || !got[0].H.Equals(h.ToFloat(nil)) {
		t.Fatalf("histogram series = %+v", got)
	}
	if got := res[fl.String()]; len(got) != 3 || !got[2].H.Equals(fh) {
		t.Fatalf("float histogram series = %+v", got)
	}
	if got := res[cl.String()]; len(got) != 1 || got[0].ST != 500 || got[0].V != 3 {
		t.Fatalf("counter with start timestamp = %+v", got)
	}
	m, err := db.Metadata(ctx, "c_total", 0)
	if err != nil || len(m["c_total"]) != 1 || m["c_total"][0] != md {
		t.Fatalf("metadata = %v, %v", m, err)
	}
	eq, err := db.ExemplarQuerier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := eq.Select(0, 10_000, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "c_total")})
	if err != nil || len(exs) != 1 || len(exs[0].Exemplars) != 1 || !exs[0].Exemplars[0].Equals(ex) {
		t.Fatalf("exemplars = %v, %v", exs, err)
	}

	// V1 start-timestamp zero sample: a 0 at st before the first sample.
	app1 := db.Appender(ctx)
	zl := labels.FromStrings("__name__", "z_total")
	if _, err := app1.AppendSTZeroSample(0, zl, 5000, 4000); err != nil {
		t.Fatal(err)
	}
	if _, err := app1.Append(0, zl, 5000, 7); err != nil {
		t.Fatal(err)
	}
	if err := app1.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := queryAll(t, db, 0, 10_000)[zl.String()]; len(got) != 2 || got[0].T != 4000 || got[0].V != 0 || got[1].V != 7 {
		t.Fatalf("st zero sample series = %+v", got)
	}
}

func TestExemplarRingBounded(t *testing.T) {
	opts := testOptions()
	opts.MaxExemplarsPerSeries = 3
	db := openTestDB(t, opts)
	ls := labels.FromStrings("__name__", "e")
	for i := int64(1); i <= 5; i++ {
		app := db.Appender(context.Background())
		ref, err := app.Append(0, ls, i, float64(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.AppendExemplar(ref, ls, exemplar.Exemplar{Labels: labels.FromStrings("id", "x"), Value: float64(i), Ts: i, HasTs: true}); err != nil {
			t.Fatal(err)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	eq, _ := db.ExemplarQuerier(context.Background())
	res, err := eq.Select(0, 10, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "e")})
	if err != nil || len(res) != 1 {
		t.Fatalf("select: %v %v", res, err)
	}
	var ts []int64
	for _, e := range res[0].Exemplars {
		ts = append(ts, e.Ts)
	}
	if len(ts) != 3 || ts[0] != 3 || ts[2] != 5 {
		t.Fatalf("exemplar timestamps = %v, want [3 4 5]", ts)
	}
}

func TestExemplarForUnknownSeries(t *testing.T) {
	db := openTestDB(t, testOptions())
	app := db.AppenderV2(context.Background()).(promstorage.ExemplarAppenderV2)
	ls := labels.FromStrings("__name__", "nope")
	_, err := app.AppendExemplars(0, ls, []exemplar.Exemplar{{Labels: labels.FromStrings("id", "1"), Value: 1, Ts: 1, HasTs: true}})
	if !errors.Is(err, promstorage.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	_ = app.Rollback()
	if n := db.Index().NumStreams(index.KindMetric); n != 0 {
		t.Fatalf("exemplar created %d series", n)
	}
}

func TestDuplicateAgainstPebble(t *testing.T) {
	db := openTestDB(t, testOptions())
	ls := labels.FromStrings("__name__", "p")
	for k := int64(0); k < 130; k++ { // seals the first 120 samples
		mustAppend(t, db, ls, k*1000, float64(k))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, db, ls, 131_000, 131)
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, 125_000, 125); err != nil {
		t.Fatalf("same value already in Pebble: %v", err)
	}
	if _, err := app.Append(0, ls, 126_000, -1); !errors.Is(err, ErrDuplicateSample) {
		t.Fatalf("different value already in Pebble: err = %v", err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestSealedSeriesDropsExt checks that a plain float series goes back to
// carrying no ext once its sealed chunks are in Pebble, and that its data
// and duplicate checks stay intact.
func TestSealedSeriesDropsExt(t *testing.T) {
	db := openTestDB(t, testOptions())
	ls := labels.FromStrings("__name__", "x")
	for k := int64(0); k < 130; k++ { // seals the first 120 samples
		mustAppend(t, db, ls, k*1000, float64(k))
	}
	var s *memSeries
	db.series.forEach(func(m *memSeries) { s = m })
	if err := db.writePending([]*memSeries{s}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	ext := s.ext
	s.mu.Unlock()
	if ext != nil {
		t.Fatalf("ext = %+v after its pending chunks were written, want nil", ext)
	}
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, 5_000, -1); !errors.Is(err, ErrDuplicateSample) {
		t.Fatalf("different value at a sealed timestamp: err = %v", err)
	}
	if err := app.Rollback(); err != nil {
		t.Fatal(err)
	}
	res := queryAll(t, db, 0, 200_000)
	if n := len(res[ls.String()]); n != 130 {
		t.Fatalf("read back %d samples, want 130", n)
	}
}

// TestCommitSeriesRuns commits a batch in which series repeat back to back,
// as a remote-write request's time series with several samples do, with
// runs that mix in-order samples (Commit's fast path), an out-of-order one
// and a duplicate (its general path) and a start timestamp, and checks that
// every sample lands as it would one commit at a time.
func TestCommitSeriesRuns(t *testing.T) {
	const min = int64(time.Minute / time.Millisecond)
	a := labels.FromStrings("__name__", "m", "s", "a")
	b := labels.FromStrings("__name__", "m", "s", "b")
	db := openTestDB(t, testOptions())
	mustAppend(t, db, a, 10*min, 10)
	mustAppend(t, db, b, 10*min, 10)

	app := db.Appender(context.Background())
	appends := []struct {
		ls   labels.Labels
		t    int64
		v    float64
		st   int64
		note string
	}{
		{a, 11 * min, 11, 0, "in order"},
		{a, 12 * min, 12, 0, "in order"},
		{a, 13 * min, 13, 0, "in order"},
		{b, 11 * min, 11, 0, "in order"},
		{b, 12 * min, 12, 0, "in order"},
		{b, 12 * min, 99, 0, "duplicate of the previous, differing: rejected at commit"},
		{b, 9 * min, 9, 0, "out of order within the window"},
		{a, 14 * min, 14, 0, "in order, a again after b's run"},
		{a, 15 * min, 15, 5 * min, "with a start timestamp"},
	}
	v2 := &appenderV2{app.(*appender)}
	for _, x := range appends {
		if _, err := v2.Append(0, x.ls, x.st, x.t, x.v, nil, nil, promstorage.AppendV2Options{}); err != nil {
			t.Fatalf("append %s@%d (%s): %v", x.ls, x.t, x.note, err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	res := queryAll(t, db, 0, 100*min)
	want := map[string][]got{
		a.String(): {{T: 10 * min, V: 10}, {T: 11 * min, V: 11}, {T: 12 * min, V: 12}, {T: 13 * min, V: 13}, {T: 14 * min, V: 14}, {ST: 5 * min, T: 15 * min, V: 15}},
		b.String(): {{T: 9 * min, V: 9}, {T: 10 * min, V: 10}, {T: 11 * min, V: 11}, {T: 12 * min, V: 12}},
	}
	requireSamples(t, res, want)
	if st := db.Stats(); st.SamplesRejected[RejectDuplicate] != 1 {
		t.Fatalf("rejected = %v, want one duplicate", st.SamplesRejected)
	}
}
