package query

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/storage"
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
		`up{`:                               false, // does not parse
	} {
		if _, err := p.ParseExpr(qs); err != nil && qs != `up{` {
			t.Fatalf("parse %q: %v", qs, err)
		}
		if got := plainSelectors(p, qs); got != want {
			t.Errorf("plainSelectors(%q) = %v, want %v", qs, got, want)
		}
	}
}

// recordingEngine records the queryable each query was created with.
type recordingEngine struct{ got storage.Queryable }

func (e *recordingEngine) NewInstantQuery(_ context.Context, q storage.Queryable, _ promql.QueryOpts, _ string, _ time.Time) (promql.Query, error) {
	e.got = q
	return nil, nil
}

func (e *recordingEngine) NewRangeQuery(_ context.Context, q storage.Queryable, _ promql.QueryOpts, _ string, _, _ time.Time, _ time.Duration) (promql.Query, error) {
	e.got = q
	return nil, nil
}

type markedQueryable struct{ storage.Queryable }

func TestLatestSampleEngineWrapsOnlyPlainInstantQueries(t *testing.T) {
	rec := &recordingEngine{}
	e := LatestSampleEngine(rec, NewParser(), func(q storage.Queryable) storage.Queryable { return markedQueryable{q} })
	ctx := t.Context()
	if _, _ = e.NewInstantQuery(ctx, nil, nil, `sum(up)`, time.Unix(0, 0)); rec.got == nil {
		t.Fatal("plain instant query: queryable not wrapped")
	}
	if _, ok := rec.got.(markedQueryable); !ok {
		t.Fatalf("plain instant query got %T, want the wrapped queryable", rec.got)
	}
	if _, _ = e.NewInstantQuery(ctx, nil, nil, `up smoothed`, time.Unix(0, 0)); rec.got != nil {
		t.Fatalf("smoothed instant query got %T, want the queryable as passed", rec.got)
	}
	if _, _ = e.NewRangeQuery(ctx, nil, nil, `sum(up)`, time.Unix(0, 0), time.Unix(60, 0), time.Second); rec.got != nil {
		t.Fatalf("range query got %T, want the queryable as passed", rec.got)
	}
}
