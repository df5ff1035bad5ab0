package logql

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// FuzzQuery evaluates arbitrary queries over a small fixed data set: the
// engine must never panic, whatever the query.
func FuzzQuery(f *testing.F) {
	for _, tc := range roundTripQueries {
		f.Add(tc.in)
	}
	for _, q := range testdataQueries(f) {
		f.Add(q)
	}
	src := &memSource{}
	lines := []string{
		`{"level":"info","n":1,"a":{"b":[1,2]},"_entry":"x"}`,
		`level=error n=2 dur=15ms size=1KB msg="quoted \" value"`,
		"\x1b[31mred\x1b[0m 10.0.0.1 - GET /x 200",
		`not { json`,
		``,
	}
	for i, l := range lines {
		for j := range 3 {
			src.add(labels.FromStrings("app", "a", "pod", string(rune('a'+j))),
				Entry{Timestamp: int64(i*3+j) * int64(time.Second), Line: l, Metadata: labels.FromStrings("trace_id", "t")})
		}
	}
	eng := NewEngine(src, DefaultEngineOptions())
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > 2000 {
			return
		}
		for _, p := range []QueryParams{
			{Query: q, Start: 0, End: int64(20 * time.Second), Step: 5 * time.Second, Direction: Backward, Limit: 5},
			{Query: q, End: int64(15 * time.Second), Instant: true},
		} {
			_, _ = eng.Query(context.Background(), p)
		}
	})
}
