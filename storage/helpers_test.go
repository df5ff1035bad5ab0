package storage

import (
	"context"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// got is one sample read back through the querier.
type got struct {
	ST, T int64
	V     float64
	H     *histogram.FloatHistogram
}

// queryAll returns every sample of every series matching ms in [mint, maxt],
// keyed by the series' label string.
func queryAll(tb testing.TB, db *DB, mint, maxt int64, ms ...*labels.Matcher) map[string][]got {
	tb.Helper()
	if len(ms) == 0 {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}
	}
	q, err := db.Querier(mint, maxt)
	if err != nil {
		tb.Fatalf("querier: %v", err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, &promstorage.SelectHints{Start: mint, End: maxt}, ms...)
	out := map[string][]got{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var samples []got
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			g := got{T: it.AtT(), ST: it.AtST()}
			if g.T < mint || g.T > maxt {
				continue
			}
			switch vt {
			case chunkenc.ValFloat:
				_, g.V = it.At()
			default:
				_, g.H = it.AtFloatHistogram(nil)
			}
			samples = append(samples, g)
		}
		if err := it.Err(); err != nil {
			tb.Fatalf("iterate: %v", err)
		}
		out[s.Labels().String()] = samples
	}
	if err := ss.Err(); err != nil {
		tb.Fatalf("select: %v", err)
	}
	return out
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// requireSamples fails unless every series of want has exactly its float
// samples (start timestamps and value bits included) in res.
func requireSamples(tb testing.TB, res, want map[string][]got) {
	tb.Helper()
	for k, w := range want {
		g := res[k]
		if len(g) != len(w) {
			tb.Fatalf("%s: got %+v, want %+v", k, g, w)
		}
		for i := range w {
			if g[i].T != w[i].T || g[i].ST != w[i].ST || !sameBits(g[i].V, w[i].V) {
				tb.Fatalf("%s: got %+v, want %+v", k, g, w)
			}
		}
	}
}

func mustAppend(tb testing.TB, db *DB, ls labels.Labels, t int64, v float64) {
	tb.Helper()
	app := db.Appender(context.Background())
	if _, err := app.Append(0, ls, t, v); err != nil {
		tb.Fatalf("append %s@%d: %v", ls, t, err)
	}
	if err := app.Commit(); err != nil {
		tb.Fatalf("commit: %v", err)
	}
}
