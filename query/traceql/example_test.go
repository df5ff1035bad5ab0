package traceql_test

import (
	"context"
	"fmt"

	"github.com/weftdb/weft/query/traceql"
	"github.com/weftdb/weft/storage/traceentry"
)

// oneTrace is the smallest Source: it serves one trace whatever is asked.
type oneTrace struct{ tr *traceentry.Trace }

func (s oneTrace) Fetch(context.Context, traceentry.FetchRequest) (traceentry.Iterator, error) {
	return &iter{tr: s.tr}, nil
}

type iter struct {
	tr   *traceentry.Trace
	done bool
}

func (it *iter) Next() bool            { ok := !it.done; it.done = true; return ok }
func (it *iter) At() *traceentry.Trace { return it.tr }
func (it *iter) Err() error            { return nil }
func (it *iter) Close() error          { return nil }

func exampleTrace() *traceentry.Trace {
	api := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("api")}}}
	db := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue("db")}}}
	return &traceentry.Trace{
		TraceID: traceentry.TraceID{15: 0x42},
		Spans: []traceentry.Span{
			{SpanID: traceentry.SpanID{7: 1}, Name: "GET /orders", Kind: traceentry.SpanKindServer, StartUnixNano: 0, EndUnixNano: 250e6, Resource: api},
			{SpanID: traceentry.SpanID{7: 2}, ParentSpanID: traceentry.SpanID{7: 1}, Name: "SELECT", Kind: traceentry.SpanKindClient,
				StatusCode: traceentry.StatusError, StartUnixNano: 10e6, EndUnixNano: 200e6, Resource: db,
				Attributes: traceentry.Attributes{{Key: "db.system", Value: traceentry.StringValue("postgresql")}}},
		},
	}
}

func Example() {
	q, err := traceql.Parse(`{ resource.service.name = "api" } >> { status = error && duration > 100ms }`)
	if err != nil {
		panic(err)
	}
	fmt.Println(q)
	fmt.Printf("hints: %d conditions, all=%v\n", len(q.Hints().Conditions), q.Hints().AllConditions)

	for _, m := range q.EvalTrace(exampleTrace()) {
		for _, s := range m.Spans {
			fmt.Println("matched span", s.SpanID, s.Name)
		}
	}

	resp, err := traceql.NewEngine(traceql.DefaultOptions()).Search(context.Background(), oneTrace{exampleTrace()},
		traceql.SearchRequest{Query: `{ span.db.system = "postgresql" } | select(kind)`})
	if err != nil {
		panic(err)
	}
	for _, tr := range resp.Traces {
		fmt.Println(tr.TraceID, tr.RootServiceName, tr.RootTraceName, tr.DurationMs, "ms")
		for _, s := range tr.SpanSets[0].Spans {
			fmt.Println(" ", s.SpanID, s.Name, s.Attributes)
		}
	}
	// Output:
	// { resource.service.name = "api" } >> { status = error && duration > 100ms }
	// hints: 2 conditions, all=true
	// matched span 0000000000000002 SELECT
	// 42 api GET /orders 250 ms
	//   0000000000000002 SELECT [{db.system "postgresql"} {kind "client"}]
}

func ExampleParse_error() {
	_, err := traceql.Parse("{ span.http.status_code >= 500 &&\n  status = }")
	fmt.Println(err)
	// Output: parse error at line 2, col 12: unexpected }, expected a value, an attribute or an intrinsic
}

func ExampleParseLenient() {
	fmt.Println(traceql.ParseLenient(`{ resource.cluster = "eu" && span.http.method = `))
	// Output: { resource.cluster = "eu" }
}
