package storage

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
)

// latestSet runs one Select under ctx and returns each series' sample
// timestamps by metric name.
func latestSet(tb testing.TB, db *DB, ctx context.Context, hints *promstorage.SelectHints) map[string][]int64 {
	tb.Helper()
	q, err := LatestSampleQueryable(db).Querier(minInt64, maxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	if ctx == nil {
		// Through the queryable: every Select is latest-sample.
		ctx = context.Background()
	} else {
		q, err = db.Querier(minInt64, maxInt64)
		if err != nil {
			tb.Fatal(err)
		}
		defer q.Close()
	}
	ss := q.Select(ctx, false, hints, labels.MustNewMatcher(labels.MatchRegexp, "job", ".+"))
	got := map[string][]int64{}
	for ss.Next() {
		got[ss.At().Labels().Get("__name__")] = selectSamples(tb, ss.At())
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	return got
}

// TestLatestSampleSelects checks what a latest-sample Select returns: only
// the newest sample at or before the end of an instant selector's range, no
// series whose newest sample is older than the range, and every sample in
// the range wherever the head does not know the answer (the range ends
// before the newest sample, other hints, tombstones, series older than the
// process).
func TestLatestSampleSelects(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(context.Background(), dir, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	const s = 1000
	for _, x := range []struct {
		name string
		ts   []int64
	}{
		{"busy", []int64{10 * s, 20 * s, 30 * s}},
		{"idle", []int64{5 * s}},
		{"gone", []int64{1 * s}},
		{"deleted", []int64{10 * s, 20 * s}},
	} {
		for _, ts := range x.ts {
			mustAppend(t, db, labels.FromStrings("__name__", x.name, "job", "a"), ts, float64(ts))
		}
	}
	if err := db.DeleteSeries(context.Background(), 10*s, 10*s, labels.MustNewMatcher(labels.MatchEqual, "__name__", "deleted")); err != nil {
		t.Fatal(err)
	}
	instant := func(start, end int64) *promstorage.SelectHints {
		return &promstorage.SelectHints{Start: start, End: end}
	}
	cases := []struct {
		name  string
		ctx   context.Context // nil: through LatestSampleQueryable
		hints *promstorage.SelectHints
		want  map[string][]int64
	}{
		{"latest only", nil, instant(2*s, 40*s), map[string][]int64{
			"busy": {30 * s}, "idle": {5 * s}, "deleted": {20 * s},
		}},
		// The chunk path returns whole chunks, samples past the range
		// included (as Prometheus' head does); the engine skips them.
		{"range ends before the newest sample", nil, instant(2*s, 25*s), map[string][]int64{
			"busy": {10 * s, 20 * s, 30 * s}, "idle": {5 * s}, "deleted": {20 * s},
		}},
		{"range query step", nil, &promstorage.SelectHints{Start: 2 * s, End: 40 * s, Step: s}, map[string][]int64{
			"busy": {10 * s, 20 * s, 30 * s}, "idle": {5 * s}, "deleted": {20 * s},
		}},
		{"matrix selector", nil, &promstorage.SelectHints{Start: 2 * s, End: 40 * s, Range: 38 * s}, map[string][]int64{
			"busy": {10 * s, 20 * s, 30 * s}, "idle": {5 * s}, "deleted": {20 * s},
		}},
		{"not marked", context.Background(), instant(2*s, 40*s), map[string][]int64{
			"busy": {10 * s, 20 * s, 30 * s}, "idle": {5 * s}, "deleted": {20 * s},
		}},
		{"marked context", WithLatestSampleSelects(context.Background()), instant(0, 40*s), map[string][]int64{
			"busy": {30 * s}, "idle": {5 * s}, "gone": {1 * s}, "deleted": {20 * s},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := latestSet(t, db, tc.ctx, tc.hints)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for name, w := range tc.want {
				if !slices.Equal(got[name], w) {
					t.Fatalf("%s: got %v, want %v (all: %v)", name, got[name], w, got)
				}
			}
		})
	}

	// After a restart the head has not seen these series' samples (they
	// are in Pebble): a latest-sample Select reads their chunks.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(context.Background(), dir, testOptions()); err != nil {
		t.Fatal(err)
	}
	got := latestSet(t, db, nil, instant(2*s, 40*s))
	if want := []int64{10 * s, 20 * s, 30 * s}; !slices.Equal(got["busy"], want) {
		t.Fatalf("after reopen: busy = %v, want %v", got["busy"], want)
	}
}
