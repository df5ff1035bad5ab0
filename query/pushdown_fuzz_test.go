package query_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/weftdb/weft/query"
)

// FuzzPushdownDifferential builds aggregation and range-function queries
// from the input (the operator, the grouping, what is aggregated, a range
// and an offset, the evaluation time and step) and requires the aggregation pushdown to answer them as the
// plain engine does, bit for bit and with the same annotations, over the
// store of TestAggregationPushdownMatchesEngine, with weft's engine.
func FuzzPushdownDifferential(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 0, 0, 0}, {1, 1, 2, 0, 30, 0}, {2, 2, 3, 1, 50, 1}, {3, 3, 4, 0, 200, 2},
		{4, 4, 1, 0, 10, 3}, {5, 5, 0, 2, 255, 1}, {6, 0, 5, 0, 90, 2}, {7, 1, 6, 0, 120, 0},
	} {
		f.Add(seed)
	}
	db, base := pushdownStore(f)
	engine := weftEngine()
	pushed := query.AggregationPushdown(engine, query.PushdownOptions{})
	ops := []string{"sum", "avg", "min", "max", "count", "group", "topk(2, %s)", "count(count by (team, model) (%s))",
		"%s", "%s > 40", "(%s) <= 20", "%s != 0", "%s == bool 1", "abs(%s)"}
	groups := []string{"", " by (team)", " by (model)", " by (team, model)", " by (nope)", " without (gpu)", " by (__name__)"}
	inners := []string{"gpu_util", "gpu_energy", "rate(gpu_energy[%dm])", "increase(gpu_ops_total[%dm])",
		`{__name__=~"gpu_(util|energy)", team=~".+"}`, `gpu_util{team!="a"}`, "gpu_latency",
		"delta(gpu_util[%dm])", "irate(gpu_energy[%dm])", "idelta(gpu_util[%dm])", "avg_over_time(gpu_util[%dm])",
		"sum_over_time(gpu_energy[%dm])", "min_over_time(gpu_util[%dm])", "max_over_time(gpu_util[%dm])",
		"count_over_time(gpu_util[%dm])", "present_over_time(gpu_energy[%dm])", "stddev_over_time(gpu_util[%dm])",
		"stdvar_over_time(gpu_energy[%dm])", "deriv(gpu_energy[%dm])", "predict_linear(gpu_util[%dm], 600)",
		"rate(gpu_latency[%dm])"}
	offsets := []string{"", " offset 5m", " offset 1m"}

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 6 {
			return
		}
		op, group, inner := ops[int(in[0])%len(ops)], groups[int(in[1])%len(groups)], inners[int(in[2])%len(inners)]
		if a := 1 + int(in[3])%10; strings.Contains(inner, "%d") {
			inner = fmt.Sprintf(inner, a)
		}
		sel := inner + offsets[int(in[3])%len(offsets)]
		if inner[len(inner)-1] == ')' { // a function: the offset goes inside its range
			sel = inner
		}
		var expr string
		switch {
		case strings.Contains(op, "%s"):
			expr = fmt.Sprintf(op, sel)
		default:
			expr = op + group + " (" + sel + ")"
		}
		at := time.UnixMilli(base + int64(in[4])*20_000) // 0..85 min into the hour of data
		step := time.Duration(1+in[5]%4) * 37 * time.Second
		run := func(e promql.QueryEngine) (string, string, error) {
			qry, err := e.NewRangeQuery(context.Background(), db, nil, expr, at, at.Add(20*step), step)
			if err != nil {
				return "", "", err
			}
			defer qry.Close()
			r := qry.Exec(context.Background())
			if r.Err != nil {
				return "", "", r.Err
			}
			return dump(r.Value), annos(r, expr), nil
		}
		want, wantAnnos, wantErr := run(engine)
		got, gotAnnos, gotErr := run(pushed)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%s: engine error %v, pushdown error %v", expr, wantErr, gotErr)
		}
		if want != got {
			t.Fatalf("%s: results differ\n%s", expr, firstDiff(want, got))
		}
		if wantAnnos != gotAnnos {
			t.Fatalf("%s: annotations differ\nengine:   %s\npushdown: %s", expr, wantAnnos, gotAnnos)
		}
	})
}
