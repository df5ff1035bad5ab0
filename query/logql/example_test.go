package logql_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
)

// oneStream is a Source with one stream, enough for the example.
type oneStream struct {
	ls      labels.Labels
	entries []logql.Entry
}

func (s *oneStream) Select(_ context.Context, p logql.SelectParams) (logql.EntryIterator, error) {
	return &iter{s: s, p: p, i: -1}, nil
}

type iter struct {
	s *oneStream
	p logql.SelectParams
	i int
}

func (it *iter) Next() bool {
	for it.i++; it.i < len(it.s.entries); it.i++ {
		if ts := it.s.entries[it.i].Timestamp; ts >= it.p.Start && ts < it.p.End {
			return true
		}
	}
	return false
}
func (it *iter) At() (labels.Labels, logql.Entry) { return it.s.ls, it.s.entries[it.i] }
func (it *iter) Err() error                       { return nil }
func (it *iter) Close() error                     { return nil }

func Example() {
	src := &oneStream{ls: labels.FromStrings("app", "api")}
	for i, status := range []string{"200", "500", "200", "503"} {
		src.entries = append(src.entries, logql.Entry{
			Timestamp: int64(i+1) * int64(time.Second),
			Line:      "status=" + status,
		})
	}
	eng := logql.NewEngine(src, logql.DefaultEngineOptions())

	// A log query: streams sorted by labels, each stream's entries newest first.
	res, err := eng.Query(context.Background(), logql.QueryParams{
		Query: `{app="api"} | logfmt | status >= 500`,
		Start: 0, End: int64(10 * time.Second), Direction: logql.Backward, Limit: 100,
	})
	if err != nil {
		panic(err)
	}
	for _, s := range res.Streams {
		for _, e := range s.Entries {
			fmt.Println(s.Labels, e.Line)
		}
	}

	// A metric query, evaluated at End.
	res, err = eng.Query(context.Background(), logql.QueryParams{
		Query: `sum by (status) (count_over_time({app="api"} | logfmt [10s]))`,
		End:   int64(10 * time.Second), Instant: true,
	})
	if err != nil {
		panic(err)
	}
	for _, s := range res.Vector {
		fmt.Println(s.Labels, s.V)
	}

	// format_query
	e, _ := logql.ParseExpr(`sum(rate({app="api"}|="x"[5m]))by(status)`)
	fmt.Println(e)
	// Output:
	// {app="api", status="500"} status=500
	// {app="api", status="503"} status=503
	// {status="200"} 2
	// {status="500"} 1
	// {status="503"} 1
	// sum by (status) (rate({app="api"} |= "x" [5m]))
}
