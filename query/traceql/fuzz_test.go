package traceql

import (
	"context"
	"testing"

	"github.com/weftdb/weft/storage/traceentry"
)

func addSeeds(f *testing.F) {
	for _, q := range testdataQueries(f, true) {
		f.Add(q)
	}
	for _, q := range testdataQueries(f, false) {
		f.Add(q)
	}
	for _, q := range extraQueries {
		f.Add(q)
	}
}

// FuzzParse: the parser never panics, and whatever parses prints as a query
// that parses to the same tree.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, q string) {
		p, err := Parse(q)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("%q: error %v is not a *ParseError", q, err)
			}
			return
		}
		s := p.String()
		p2, err := Parse(s)
		if err != nil {
			t.Fatalf("%q printed as %q, which fails: %v", q, s, err)
		}
		if p.dump() != p2.dump() {
			t.Fatalf("%q printed as %q, which parses differently:\n%s\n%s", q, s, p.dump(), p2.dump())
		}
		_ = ParseLenient(q)
	})
}

// FuzzEval evaluates arbitrary queries over fixed traces: evaluation never
// panics, a matching trace always passes the query's pushdown hints, and a
// search through a source that prunes by the hints answers the same.
func FuzzEval(f *testing.F) {
	addSeeds(f)
	src := &memSource{traces: fuzzTraces()}
	eng := NewEngine(DefaultOptions())
	f.Fuzz(func(t *testing.T, q string) {
		query, err := Parse(q)
		if err != nil {
			_ = ParseLenient(q).EvalTrace(src.traces[0])
			return
		}
		h := query.Hints()
		ev := query.NewEvaluator()
		for _, tr := range src.traces {
			ms := ev.Eval(tr)
			if len(ms) > 0 && !refHintsAllow(h, tr) {
				t.Fatalf("%q matches trace %s but its hints %+v exclude it", q, tr.TraceID, h)
			}
		}
		req := SearchRequest{Query: q, Limit: 100, SpansPerSpanSet: 100}
		a, err := eng.Search(context.Background(), src, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := eng.Search(context.Background(), &pruningSource{mem: src}, req)
		if err != nil {
			t.Fatal(err)
		}
		if describe(a) != describe(b) {
			t.Fatalf("%q: pruning by hints changed the answer:\n%s\n%s", q, describe(a), describe(b))
		}
	})
}

// fuzzTraces loads the traces of the conformance files, so that fuzzed
// queries meet every shape the suite has (trees, broken trees, events,
// links, arrays, bytes, maps), plus a large generated one.
func fuzzTraces() []*traceentry.Trace {
	traces := []*traceentry.Trace{bigTrace(60)}
	for _, f := range []string{"testdata/structural.test", "testdata/attributes.test", "testdata/intrinsics.test", "testdata/pipelines.test"} {
		ld := newLoader()
		if err := ld.loadFile(f); err != nil {
			panic(err)
		}
		traces = append(traces, ld.src.traces...)
	}
	return traces
}
