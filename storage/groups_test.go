package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/index/tenant"
)

// TestSelectGroups checks SelectGroups against Select: every series Select
// returns comes once, in the group of its grouping labels' values, with
// the same samples (sealed chunks, head and a tombstone included); an
// instant select hands out each series' latest sample through Latest.
func TestSelectGroups(t *testing.T) {
	opts := testOptions()
	opts.SamplesPerChunk = 8
	db := openTestDB(t, opts)
	ctx := context.Background()
	app := db.Appender(ctx)
	base := db.opts.Now().UnixMilli() - 3600_000
	for i := range 40 {
		b := labels.NewScratchBuilder(3)
		b.Add(labels.MetricName, "m")
		b.Add("gpu", fmt.Sprint(i))
		if i%3 != 0 {
			b.Add("team", fmt.Sprintf("t%d", i%3))
		}
		ls := b.Labels()
		for s := range 30 + i {
			if _, err := app.Append(0, ls, base+int64(s)*15_000, float64(i*s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSeries(ctx, base, base+100_000, labels.MustNewMatcher(labels.MatchEqual, "gpu", "4")); err != nil {
		t.Fatal(err)
	}
	name := labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "m")

	for _, tc := range []struct {
		name       string
		start, end int64
		step       int64
		by         []string
	}{
		{"range by team", base, base + 3600_000, 60_000, []string{"team"}},
		{"range all", base + 200_000, base + 400_000, 60_000, nil},
		// The series' latest samples are at 435 to 1020 s: those of
		// series 5 to 39 are in the range.
		{"instant by team", base + 500_000, base + 1_100_000, 0, []string{"team", "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]string{} // series dump → its group labels
			q, err := db.Querier(tc.start, tc.end)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			hints := &promstorage.SelectHints{Start: tc.start, End: tc.end, Step: tc.step}
			ss := q.Select(ctx, false, hints, name)
			for ss.Next() {
				ls := ss.At().Labels()
				d := dumpSeries(t, ss.At(), tc.step == 0)
				want[d] = labels.NewBuilder(ls).Keep(tc.by...).Labels().String()
			}
			if ss.Err() != nil {
				t.Fatal(ss.Err())
			}

			groups, set, err := q.(*querier).SelectGroups(ctx, hints, tc.by, name)
			if err != nil {
				t.Fatal(err)
			}
			gs := set.(*seriesSet)
			n, latest := 0, 0
			for gs.Next() {
				n++
				var d string
				if tt, v, ok := gs.Latest(); ok {
					latest++
					d = fmt.Sprintf("%d:%g ", tt, v)
				} else {
					if tc.step == 0 && gs.At().Labels().Len() != 0 {
						t.Errorf("grouped series has labels %s", gs.At().Labels())
					}
					d = dumpSeries(t, gs.At(), tc.step == 0)
				}
				g, ok := want[d]
				if !ok {
					t.Errorf("series %q not returned by Select", d)
					continue
				}
				if got := groups[gs.Group()].String(); got != g {
					t.Errorf("series %q in group %s, want %s", d, got, g)
				}
				delete(want, d)
			}
			if gs.Err() != nil {
				t.Fatal(gs.Err())
			}
			if len(want) > 0 || n == 0 {
				t.Errorf("%d series returned, %d of Select's missing", n, len(want))
			}
			// Instant: every series comes from the head's latest sample.
			if wantLatest := map[bool]int{true: n, false: 0}[tc.step == 0]; latest != wantLatest {
				t.Errorf("%d series handed out by Latest, want %d", latest, wantLatest)
			}
		})
	}
}

// dumpSeries renders a series' samples (only the last for an instant
// select, which is all the engine reads of it).
func dumpSeries(t *testing.T, s promstorage.Series, lastOnly bool) string {
	t.Helper()
	var out string
	it := s.Iterator(nil)
	for it.Next() == chunkenc.ValFloat {
		tt, v := it.At()
		if lastOnly {
			out = ""
		}
		out += fmt.Sprintf("%d:%g ", tt, v)
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return out
}

// TestSelectGroupsTenantLabel checks that SelectGroups refuses to group by
// a tenant label, which the index stores under another name than a reader
// sees (or not at all), so that the pushdown leaves such an aggregation
// to the engine.
func TestSelectGroupsTenantLabel(t *testing.T) {
	db := openTestDB(t, testOptions())
	q, err := db.Querier(0, db.opts.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	hints := &promstorage.SelectHints{Start: 0, End: db.opts.Now().UnixMilli()}
	name := labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, "m")
	for _, by := range [][]string{{tenant.FederatedLabelName}, {"team", tenant.LabelName}} {
		if _, _, err := q.(*querier).SelectGroups(context.Background(), hints, by, name); err == nil {
			t.Errorf("SelectGroups by %v: no error", by)
		}
	}
}
