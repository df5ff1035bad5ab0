package query

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

func TestPlainSelectors(t *testing.T) {
	p := parser.NewParser(promqltest.TestParserOpts)
	for qs, want := range map[string]bool{
		`up`:                                true,
		`count by (job) (up{job=~"a.*"})`:   true,
		`rate(http_requests_total[5m])`:     true,
		`up offset 5m + on(job) down @ 100`: true,
		`up smoothed`:                       false,
		`rate(x[5m] anchored)`:              false,
		`sum(up) + sum(x smoothed)`:         false,
	} {
		expr, err := p.ParseExpr(qs)
		if err != nil {
			t.Fatalf("parse %q: %v", qs, err)
		}
		if got := plainSelectors(expr); got != want {
			t.Errorf("plainSelectors(%q) = %v, want %v", qs, got, want)
		}
	}
}

// selectRecorder is a queryable with no data that records, per querier
// source, whether a Select ran.
type selectRecorder struct {
	name string
	got  *[]string
}

func (r selectRecorder) Querier(int64, int64) (storage.Querier, error) { return r, nil }

func (r selectRecorder) Select(context.Context, bool, *storage.SelectHints, ...*labels.Matcher) storage.SeriesSet {
	*r.got = append(*r.got, r.name)
	return storage.EmptySeriesSet()
}

func (selectRecorder) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (selectRecorder) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, nil
}

func (selectRecorder) Close() error { return nil }

// TestLatestSampleEngine runs queries through a real engine and checks
// which queryable their selectors read: the wrapped one for plain instant
// queries only.
func TestLatestSampleEngine(t *testing.T) {
	var got []string
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	e := LatestSampleEngine(engine, func(storage.Queryable) storage.Queryable {
		return selectRecorder{name: "latest", got: &got}
	})
	plain := selectRecorder{name: "plain", got: &got}
	ts := time.Unix(1000, 0)
	for _, tc := range []struct {
		qs, want string
		rng      bool
	}{
		{qs: `sum(up)`, want: "latest"},
		{qs: `up smoothed`, want: "plain"},
		{qs: `sum(up)`, want: "plain", rng: true},
	} {
		got = nil
		var qry promql.Query
		var err error
		if tc.rng {
			qry, err = e.NewRangeQuery(t.Context(), plain, nil, tc.qs, ts.Add(-time.Minute), ts, time.Second)
		} else {
			qry, err = e.NewInstantQuery(t.Context(), plain, nil, tc.qs, ts)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.qs, err)
		}
		if res := qry.Exec(t.Context()); res.Err != nil {
			t.Fatalf("%s: %v", tc.qs, res.Err)
		}
		qry.Close()
		if len(got) != 1 || got[0] != tc.want {
			t.Fatalf("%s (range %v) selected from %v, want [%s]", tc.qs, tc.rng, got, tc.want)
		}
	}
}
