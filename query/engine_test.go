package query_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/weftdb/weft/query"
)

// The engine behaves like a default Prometheus server: @ and negative
// offsets enabled, 5m left-open lookback, 1m default subquery step, and the
// sample limit and timeout from the options.
func TestEngineSettings(t *testing.T) {
	st := promqltest.LoadedStorage(t, `
load 1m
  x 0+1x20
`)
	cases := []struct {
		name  string
		opts  func(*query.EngineOptions)
		query string
		at    time.Duration
		want  float64
		err   string
	}{
		{name: "@ modifier", query: "x @ 300", at: 20 * time.Minute, want: 5},
		{name: "negative offset", query: "x offset -2m", at: 5 * time.Minute, want: 7},
		{name: "lookback includes 4m59s", query: "x", at: 24*time.Minute + 59*time.Second, want: 20},
		{name: "default subquery step is 1m", query: "count_over_time(x[10m:])", at: 10 * time.Minute, want: 10},
		{name: "custom lookback", opts: func(o *query.EngineOptions) { o.LookbackDelta = 10 * time.Minute }, query: "x", at: 29 * time.Minute, want: 20},
		{name: "max samples", opts: func(o *query.EngineOptions) { o.MaxSamples = 5 }, query: "x[10m]", at: 10 * time.Minute, err: "query processing would load too many samples into memory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := query.DefaultEngineOptions()
			if c.opts != nil {
				c.opts(&o)
			}
			eng := query.NewEngine(o)
			q, err := eng.NewInstantQuery(context.Background(), st, nil, c.query, time.Unix(0, 0).Add(c.at))
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			res := q.Exec(context.Background())
			if c.err != "" {
				if res.Err == nil || !strings.Contains(res.Err.Error(), c.err) {
					t.Fatalf("err %v, want %q", res.Err, c.err)
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			v, err := res.Vector()
			if err != nil || len(v) != 1 || v[0].F != c.want {
				t.Errorf("got %v (%v), want %v", res.Value, err, c.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	o := query.DefaultEngineOptions()
	if o.Timeout != 2*time.Minute || o.MaxSamples != 50_000_000 || o.LookbackDelta != 5*time.Minute || o.SubqueryStep != time.Minute {
		t.Errorf("defaults %+v", o)
	}
	var _ promql.QueryEngine = query.NewEngine(query.EngineOptions{}) // zero options take the defaults
}
