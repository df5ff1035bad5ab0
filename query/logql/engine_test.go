package logql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func TestLineFilterPushdown(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []LineFilter
	}{
		{`{a="b"}`, nil},
		{`{a="b"} |= "x" != "y"`, []LineFilter{{Op: LineContains, Value: "x"}, {Op: LineNotContains, Value: "y"}}},
		{`{a="b"} |~ "x" |= "y"`, []LineFilter{{Op: LineContains, Value: "y"}}},
		{`{a="b"} |= "x" or "y" |= "z"`, []LineFilter{{Op: LineContains, Value: "z"}}},
		{`{a="b"} | json |= "x" | line_format "{{.a}}" |= "y"`, []LineFilter{{Op: LineContains, Value: "x"}}},
		{`{a="b"} | unpack |= "x"`, nil},
		{`{a="b"} | decolorize |= "x"`, nil},
		{`{a="b"} |= ""`, nil},
		{`count_over_time({a="b"} |= "needle" [1m])`, []LineFilter{{Op: LineContains, Value: "needle"}}},
	} {
		t.Run(tc.q, func(t *testing.T) {
			src := &memSource{}
			eng := NewEngine(src, DefaultEngineOptions())
			_, err := eng.Query(context.Background(), QueryParams{Query: tc.q, Start: 0, End: int64(time.Minute), Step: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(src.last.LineFilters, tc.want) {
				t.Fatalf("pushed %v, want %v", src.last.LineFilters, tc.want)
			}
		})
	}
}

func TestSelectParams(t *testing.T) {
	src := &memSource{}
	eng := NewEngine(src, DefaultEngineOptions())
	_, err := eng.Query(context.Background(), QueryParams{
		Query: `count_over_time({a="b"}[1m] offset 1h)`,
		Start: int64(2 * time.Hour), End: int64(3 * time.Hour), Step: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Windows are (t-1m-1h, t-1h] for t in [2h, 3h]: [Start, End) = [1h-1m+1ns, 2h+1ns).
	if src.last.Start != int64(time.Hour-time.Minute)+1 || src.last.End != int64(2*time.Hour)+1 {
		t.Fatalf("select [%d, %d)", src.last.Start, src.last.End)
	}
	if src.last.Direction != Forward {
		t.Fatal("metric queries read forward")
	}
	if len(src.last.Matchers) != 1 || src.last.Matchers[0].String() != `a="b"` {
		t.Fatalf("matchers %v", src.last.Matchers)
	}
}

func TestCategorizedLabels(t *testing.T) {
	src := &memSource{}
	st := labels.FromStrings("app", "a")
	src.add(st, Entry{Timestamp: 1, Line: `level=info`, Metadata: labels.FromStrings("trace_id", "t1")})
	src.add(st, Entry{Timestamp: 2, Line: `level=error`})
	eng := NewEngine(src, DefaultEngineOptions())
	res, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"} | logfmt`, Start: 0, End: 10, Direction: Forward})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Streams) != 2 {
		t.Fatalf("classic form: %d streams, want 2", len(res.Streams))
	}
	for _, s := range res.Streams {
		if !labels.Equal(s.StreamLabels, st) {
			t.Fatalf("stream labels %s", s.StreamLabels)
		}
	}
	cat := res.Categorized(Forward)
	if len(cat) != 1 || !labels.Equal(cat[0].Labels, st) || len(cat[0].Entries) != 2 {
		t.Fatalf("categorized: %+v", cat)
	}
	e0, e1 := cat[0].Entries[0], cat[0].Entries[1]
	if e0.StructuredMetadata.String() != `{trace_id="t1"}` || e0.Parsed.String() != `{level="info"}` {
		t.Fatalf("entry 0: sm %s parsed %s", e0.StructuredMetadata, e0.Parsed)
	}
	if !e1.StructuredMetadata.IsEmpty() || e1.Parsed.String() != `{level="error"}` {
		t.Fatalf("entry 1: sm %s parsed %s", e1.StructuredMetadata, e1.Parsed)
	}
}

func TestStatsAndLimits(t *testing.T) {
	src := &memSource{}
	for i := range 100 {
		src.add(labels.FromStrings("app", "a", "pod", fmt.Sprint(i%10)), Entry{Timestamp: int64(i), Line: "0123456789"})
	}
	opts := DefaultEngineOptions()
	opts.MaxSeries = 5
	eng := NewEngine(src, opts)
	res, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, Start: 0, End: 100, Limit: 7, Direction: Backward})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range res.Streams {
		n += len(s.Entries)
		for _, e := range s.Entries {
			if e.Timestamp < 93 {
				t.Fatalf("backward limit kept an old entry at %d", e.Timestamp)
			}
		}
	}
	if n != 7 {
		t.Fatalf("%d entries, want 7", n)
	}
	if res.Stats.EntriesScanned != 100 || res.Stats.BytesScanned != 1000 {
		t.Fatalf("stats %+v", res.Stats)
	}
	_, err = eng.Query(context.Background(), QueryParams{Query: `count_over_time({app="a"}[1s])`, End: 100, Instant: true})
	if !errors.Is(err, ErrTooManySeries) {
		t.Fatalf("want ErrTooManySeries, got %v", err)
	}
	// The limit is on the result: aggregations over many series are fine.
	for _, q := range []string{`sum(count_over_time({app="a"}[1s]))`, `topk(5, count_over_time({app="a"}[1s]))`, `sum by (pod) (count_over_time({app="a", pod=~"[1-4]"}[1s]))`} {
		if _, err = eng.Query(context.Background(), QueryParams{Query: q, End: 100, Instant: true}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err = eng.Query(context.Background(), QueryParams{Query: `sum(count_over_time({app="a"}[1s] |= "x") `, End: 100, Instant: true})
	if !errors.Is(err, ErrParse) {
		t.Fatalf("want a parse error, got %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	src := &memSource{}
	for i := range 5000 {
		src.add(labels.FromStrings("app", "a"), Entry{Timestamp: int64(i), Line: "x"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	eng := NewEngine(src, DefaultEngineOptions())
	_, err := eng.Query(ctx, QueryParams{Query: `count_over_time({app="a"}[1s])`, End: 5000, Instant: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

type failingSource struct{ err error }

func (f failingSource) Select(context.Context, SelectParams) (EntryIterator, error) {
	return nil, f.err
}

func TestSourceError(t *testing.T) {
	boom := errors.New("boom")
	eng := NewEngine(failingSource{boom}, DefaultEngineOptions())
	_, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, End: 10})
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
}

func TestDefaultStep(t *testing.T) {
	src := &memSource{}
	eng := NewEngine(src, DefaultEngineOptions())
	res, err := eng.Query(context.Background(), QueryParams{Query: `vector(1)`, Start: 0, End: int64(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// Loki's default step: max(floor(range/250), 1s) = 14s for one hour.
	if got := len(res.Matrix[0].Points); got != int(time.Hour/(14*time.Second))+1 {
		t.Fatalf("%d points", got)
	}
}

func TestMaxLookback(t *testing.T) {
	src := &memSource{}
	for i := range 10 {
		src.add(labels.FromStrings("app", "a"), Entry{Timestamp: int64(i) * int64(time.Second), Line: "x"})
	}
	opts := DefaultEngineOptions()
	opts.MaxLookback = 3 * time.Second
	opts.Now = func() time.Time { return time.Unix(10, 0) }
	eng := NewEngine(src, opts)
	res, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, Start: 0, End: int64(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Streams[0].Entries); n != 3 || src.last.Start != int64(7*time.Second) {
		t.Fatalf("%d entries, select start %d; want 3 entries from 7s", n, src.last.Start)
	}
	res, err = eng.Query(context.Background(), QueryParams{Query: `count_over_time({app="a"}[10s])`, End: int64(10 * time.Second), Instant: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Vector) != 1 || res.Vector[0].V != 3 {
		t.Fatalf("count %v, want 3", res.Vector)
	}
}

func TestInterval(t *testing.T) {
	src := &memSource{}
	for i := range 10 {
		src.add(labels.FromStrings("app", "a"), Entry{Timestamp: int64(i) * int64(time.Second), Line: fmt.Sprint(i)})
	}
	eng := NewEngine(src, DefaultEngineOptions())
	res, err := eng.Query(context.Background(), QueryParams{Query: `{app="a"}`, End: int64(10 * time.Second), Interval: 3 * time.Second, Direction: Forward})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Streams[0].Entries {
		got = append(got, e.Line)
	}
	if !slices.Equal(got, []string{"0", "3", "6", "9"}) {
		t.Fatalf("entries %v, want one every 3s", got)
	}
}

func TestConcurrentQueries(t *testing.T) {
	src := &memSource{}
	for i := range 200 {
		src.add(labels.FromStrings("app", "a", "pod", fmt.Sprint(i%4)), Entry{Timestamp: int64(i), Line: fmt.Sprintf("n=%d", i)})
	}
	eng := NewEngine(src, DefaultEngineOptions())
	queries := []string{
		`{app="a"} | logfmt | line_format "{{.n}}-{{.pod}}" | label_format x="{{.n}}"`,
		`sum by (pod) (rate({app="a"} | logfmt | n > 10 [100ns]))`,
		`sum_over_time({app="a"} | logfmt | unwrap n [200ns])`,
	}
	errc := make(chan error, 8)
	for g := range 8 {
		go func() {
			q := queries[g%len(queries)]
			_, err := eng.Query(context.Background(), QueryParams{Query: q, Start: 0, End: 200, Step: 50, Direction: Backward, Limit: 50})
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
