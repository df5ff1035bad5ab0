package otlp

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/teststorage"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// dumpSeries returns every stored sample as "labels t value" lines, sorted.
// Floats print with %g (StaleNaN as "stale"), histograms with their String.
func dumpSeries(tb testing.TB, q storage.Queryable) []string {
	tb.Helper()
	qr, err := q.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	defer qr.Close()
	ss := qr.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var out []string
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			switch vt {
			case chunkenc.ValFloat:
				t, v := it.At()
				vs := fmt.Sprintf("%g", v)
				if value.IsStaleNaN(v) {
					vs = "stale"
				}
				out = append(out, fmt.Sprintf("%s %d %s", s.Labels(), t, vs))
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				out = append(out, fmt.Sprintf("%s %d %s", s.Labels(), t, h))
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(nil)
				out = append(out, fmt.Sprintf("%s %d %s", s.Labels(), t, h))
			}
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// loadJSON reads an OTLP/JSON metrics payload from testdata.
func loadJSON(tb testing.TB, name string) pmetric.Metrics {
	tb.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

// checkGolden compares lines with testdata/name, or rewrites it under -update.
func checkGolden(tb testing.TB, name string, lines []string) {
	tb.Helper()
	got := strings.Join(lines, "\n") + "\n"
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if got != string(want) {
		tb.Fatalf("series differ from %s (rerun with -update after review)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func newTestIngester(tb testing.TB, opts Options) (*Ingester, *teststorage.TestStorage) {
	tb.Helper()
	db := teststorage.New(tb)
	ing, err := New(db, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return ing, db
}
