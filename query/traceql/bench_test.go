package traceql

import (
	"context"
	"testing"

	"github.com/weftdb/weft/storage/traceentry"
)

// benchEval evaluates q over a 500-span trace and reports the cost per span.
func benchEval(b *testing.B, q string) {
	tr := bigTrace(500)
	ev := mustParse(b, q).NewEvaluator()
	b.ReportAllocs()
	b.ResetTimer()
	matched := 0
	for b.Loop() {
		matched += len(ev.Eval(tr))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tr.Spans)), "ns/span")
	if matched == 0 {
		b.Fatal("the query matched nothing; the benchmark measures the wrong thing")
	}
}

func BenchmarkEvalSimpleFilter(b *testing.B) {
	benchEval(b, `{ resource.service.name = "gpu-worker" && duration > 5ms }`)
}

func BenchmarkEvalIntrinsic(b *testing.B) { benchEval(b, `{ status = error }`) }

func BenchmarkEvalUnscopedRegex(b *testing.B) {
	benchEval(b, `{ .http.method =~ "P.*" && .model = "llama" }`)
}

func BenchmarkEvalOr(b *testing.B) {
	benchEval(b, `{ span.http.status_code >= 500 || status = error || name = "op3" }`)
}

func BenchmarkEvalStructural(b *testing.B) {
	benchEval(b, `{ resource.service.name = "router" } >> { status = error }`)
}

func BenchmarkEvalSibling(b *testing.B) { benchEval(b, `{ status = error } ~ { kind = server }`) }

func BenchmarkEvalPipeline(b *testing.B) {
	benchEval(b, `{ } | by(resource.service.name) | avg(duration) > 1ms`)
}

func BenchmarkParse(b *testing.B) {
	const q = `{ resource.service.name = "frontend" && name = "POST /api/orders" && span.http.status_code >= 500 && duration > 100ms } >> { status = error } | count() > 1 | select(span.http.url)`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch searches 1000 traces of 50 spans, each with one matching
// span, with a limit above 1000: the engine reads, evaluates and shapes a
// result for every trace, its whole cost on top of a store.
func BenchmarkSearch(b *testing.B) {
	src := &memSource{}
	for i := range 1000 {
		tr := bigTrace(50)
		tr.TraceID = traceentry.TraceID{14: byte(i >> 8), 15: byte(i)}
		src.traces = append(src.traces, tr)
	}
	eng := NewEngine(DefaultOptions())
	req := SearchRequest{Query: `{ resource.service.name = "gpu-worker" && span.tokens = 47 }`, Limit: 2000}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := eng.Search(context.Background(), src, req)
		if err != nil || len(resp.Traces) != 1000 {
			b.Fatalf("%v, %d traces", err, len(resp.Traces))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000*50), "ns/span")
}
