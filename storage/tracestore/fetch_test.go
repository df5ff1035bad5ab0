package tracestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/query/traceql"
	"github.com/weftdb/weft/storage/traceentry"
)

// memSource yields the generated traces whole, ignoring the hints: the
// reference answer.
type memSource struct{ traces []*traceentry.Trace }

func (m *memSource) Fetch(ctx context.Context, _ traceentry.FetchRequest) (traceentry.Iterator, error) {
	return &sliceIter{traces: m.traces, i: -1}, nil
}

type sliceIter struct {
	traces []*traceentry.Trace
	i      int
}

func (it *sliceIter) Next() bool            { it.i++; return it.i < len(it.traces) }
func (it *sliceIter) At() *traceentry.Trace { return it.traces[it.i] }
func (it *sliceIter) Err() error            { return nil }
func (it *sliceIter) Close() error          { return nil }

// summary is a search answer in a form that does not depend on the order
// a source yields traces or spans in.
func summary(r *traceql.SearchResponse) []string {
	var out []string
	for _, t := range r.Traces {
		s := fmt.Sprintf("%s %s %s %d", t.TraceID, t.RootServiceName, t.RootTraceName, t.DurationMs)
		for _, ss := range t.SpanSets {
			var ids []string
			for _, sp := range ss.Spans {
				ids = append(ids, sp.SpanID)
			}
			slices.Sort(ids)
			s += fmt.Sprintf(" [%d %v %v]", ss.Matched, ids, ss.Attributes)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestFetchMatchesEngine runs TraceQL searches through the engine over
// the store, whose Fetch uses the hints to skip blocks, pages and trace
// parts, and over the same traces in memory with no skipping: the answers
// must be equal (the hints never exclude a match, and every trace comes
// back whole although its spans were pushed in batches minutes apart and
// lie in several blocks and the head).
func TestFetchMatchesEngine(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	base := c.t
	tdb := openTestDB(t, t.TempDir())
	defer tdb.close(t)
	s := openTestStore(t, tdb, testOptions(c))
	n := 400
	if raceEnabled {
		n = 120
	}
	traces := genTraces(rand.New(rand.NewPCG(11, 12)), n, base, 10*time.Minute)
	loadSplit(t, s, c, traces)
	mem := &memSource{traces: traces}
	eng := traceql.NewEngine(traceql.DefaultOptions())
	some := traces[17].TraceID.String()
	queries := []string{
		`{}`,
		`{ resource.service.name = "router" }`,
		`{ resource.service.name = "router" && name = "forward" }`,
		`{ resource.service.name = "nope" }`,
		`{ resource.ai.run.id = "r1" && status = error }`,
		`{ resource.host.id = 2 }`,
		`{ name = "load" && duration > 2s }`,
		`{ duration < 10ms }`,
		`{ duration >= 2900ms && kind = server }`,
		`{ status = error }`,
		`{ kind = server && status != ok }`,
		`{ span.http.route = "/v1" }`,
		`{ .http.route =~ "/v[12]" && resource.service.name =~ "gpu.*" }`,
		`{ span.http.response.status_code >= 400 }`,
		`{ span.gpu.index > 5 && name != "forward" }`,
		`{ span.tags = "a" && duration > 1s }`,
		`{ event:name = "exception" }`,
		`{ event.exception.type = "OOM" && resource.service.name = "loader" }`,
		`{ instrumentation:name = "weft-test" && statusMessage = "boom" }`,
		`{ link:traceID != "0" }`,
		`{ name = "forward" } >> { name = "all-reduce" }`,
		`{ status = error } || { resource.service.name = "gpu-worker" && duration > 2500ms }`,
		`{ trace:id = "` + some + `" }`,
		`{ rootServiceName = "router" && duration > 1s }`,
		`{ traceDuration > 3s }`,
		`{ name = "nonexistent" }`,
		`{ span.http.route = "/v9" || name = "load" }`,
		`{ resource.service.name = "loader" } | count() > 2`,
		`{ } | by(resource.service.name) | count() > 3`,
	}
	ranges := [][2]time.Duration{{0, 0}, {2 * time.Minute, 4 * time.Minute}, {9 * time.Minute, 30 * time.Minute}}
	partial := 0 // answers with some but not all traces
	for _, q := range queries {
		for _, r := range ranges {
			req := traceql.SearchRequest{Query: q, Limit: 100000, SpansPerSpanSet: 1000}
			if r != [2]time.Duration{} {
				req.Start, req.End = base.Add(r[0]).UnixNano(), base.Add(r[1]).UnixNano()
			}
			want, err := eng.Search(context.Background(), mem, req)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			got, err := eng.Search(context.Background(), s, req)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if g, w := summary(got), summary(want); !reflect.DeepEqual(g, w) {
				t.Fatalf("%s %v: store found %d traces, memory %d\n got %s\nwant %s", q, r, len(g), len(w),
					strings.Join(g, "\n     "), strings.Join(w, "\n     "))
			}
			if q == `{}` && r == [2]time.Duration{} && len(got.Traces) != len(traces) {
				t.Fatalf("{} found %d traces, want %d", len(got.Traces), len(traces))
			}
			if n := len(got.Traces); n > 0 && n < len(traces) {
				partial++
			}
		}
	}
	if partial < len(queries) {
		t.Fatalf("only %d answers selective: the fixture does not exercise the hints", partial)
	}
}

// TestFetchSkips shows the hints at work: a search on an indexed value
// absent from the data reads no page, and one on a service reads only the
// blocks holding its stream.
func TestFetchSkips(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(t, t.TempDir())
	defer tdb.close(t)
	s := openTestStore(t, tdb, testOptions(c))
	// Two batches of traces, one service each, sealed apart.
	for _, svc := range []string{"a", "b"} {
		res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}}}
		for _, tr := range genTraces(rand.New(rand.NewPCG(1, 1)), 50, c.t, time.Minute) {
			for i := range tr.Spans {
				tr.Spans[i].Resource = res
				tr.Spans[i].TraceID[0] = svc[0]
			}
			push(t, s, tr.Spans)
		}
		if err := s.Seal(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	stats := func(q string) ReadStats {
		t.Helper()
		query, err := traceql.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		it, err := s.Fetch(context.Background(), traceentry.FetchRequest{Hints: query.Hints()})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return it.(StatsIterator).Stats()
	}
	if st := stats(`{ span.http.route = "/nowhere" }`); st.Pages != 0 || st.SkippedBlocks != 2 {
		t.Errorf("absent indexed value: %+v", st)
	}
	if st := stats(`{ resource.service.name = "b" && name = "forward" }`); st.Blocks != 1 || st.SkippedBlocks != 1 || st.AssembledTraces == 0 {
		t.Errorf("one service: %+v", st)
	}
	if st := stats(`{ duration > 1h }`); st.Pages != 0 {
		t.Errorf("duration beyond every page: %+v", st)
	}
	if st := stats(`{}`); st.AssembledTraces != 100 {
		t.Errorf("everything: %+v", st)
	}
}
