package tracestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// testDB is a Pebble database and index as the substrate makes them.
type testDB struct {
	dir string
	db  *pebble.DB
	ix  *index.Index
}

func openTestDB(tb testing.TB, dir string) *testDB {
	tb.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Merger: index.Merger(), Logger: quietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(db, index.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return &testDB{dir: dir, db: db, ix: ix}
}

func (t *testDB) close(tb testing.TB) {
	tb.Helper()
	if err := t.ix.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := t.db.Close(); err != nil {
		tb.Fatal(err)
	}
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(string, ...any)        {}
func (quietLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func testOptions(c *clock) Options {
	o := DefaultOptions()
	o.MaintenanceInterval = -1
	o.NoSealOnClose = true // tests close the database before their cleanup closes the store
	o.PageBytes = 4 << 10  // several pages per block
	if c != nil {
		o.Now = c.now
	}
	return o
}

func openTestStore(tb testing.TB, t *testDB, o Options) *Store {
	tb.Helper()
	s, err := Open(context.Background(), t.db, t.ix, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// genTraces makes n random traces of a few services with every kind of
// field, spans starting at base and spread over spread.
func genTraces(rng *rand.Rand, n int, base time.Time, spread time.Duration) []*traceentry.Trace {
	services := []string{"router", "model-server", "gpu-worker", "loader"}
	var res []*traceentry.Resource
	for i, svc := range services {
		res = append(res, &traceentry.Resource{Attributes: traceentry.Attributes{
			{Key: "service.name", Value: traceentry.StringValue(svc)},
			{Key: "ai.run.id", Value: traceentry.StringValue(fmt.Sprintf("r%d", i%2))},
			{Key: "host.id", Value: traceentry.IntValue(int64(i))},
		}})
	}
	scope := &traceentry.InstrumentationScope{Name: "weft-test", Version: "1.0"}
	names := []string{"GET /infer", "forward", "backward", "all-reduce", "load"}
	var out []*traceentry.Trace
	for i := 0; i < n; i++ {
		tr := &traceentry.Trace{}
		binaryPut(tr.TraceID[:], rng.Uint64(), rng.Uint64())
		start := base.Add(time.Duration(rng.Int64N(int64(spread)))).UnixNano()
		nsp := 1 + rng.IntN(6)
		for j := 0; j < nsp; j++ {
			sp := traceentry.Span{TraceID: tr.TraceID, Scope: scope}
			binaryPut(sp.SpanID[:], rng.Uint64()|1)
			if j > 0 {
				sp.ParentSpanID = tr.Spans[rng.IntN(j)].SpanID
			}
			sp.Name = names[rng.IntN(len(names))]
			sp.Kind = traceentry.SpanKind(rng.IntN(6))
			sp.StatusCode = traceentry.StatusCode(rng.IntN(3))
			if sp.StatusCode == traceentry.StatusError {
				sp.StatusMessage = "boom"
			}
			sp.StartUnixNano = start + rng.Int64N(int64(time.Second))
			sp.EndUnixNano = sp.StartUnixNano + rng.Int64N(int64(3*time.Second))
			sp.Resource = res[rng.IntN(len(res))]
			sp.Attributes = traceentry.Attributes{
				{Key: "http.route", Value: traceentry.StringValue(fmt.Sprintf("/v%d", rng.IntN(3)))},
				{Key: "gpu.index", Value: traceentry.IntValue(rng.Int64N(8))},
			}
			if rng.IntN(2) == 0 {
				sp.Attributes = append(sp.Attributes, traceentry.KeyValue{Key: "http.response.status_code", Value: traceentry.IntValue(int64(200 + 100*rng.IntN(4)))})
			}
			if rng.IntN(3) == 0 {
				sp.Attributes = append(sp.Attributes, traceentry.KeyValue{Key: "tags", Value: traceentry.ArrayValue(traceentry.StringValue("a"), traceentry.StringValue("b"))})
			}
			if rng.IntN(4) == 0 {
				sp.Events = []traceentry.Event{{TimeUnixNano: sp.StartUnixNano + 5, Name: "exception",
					Attributes: traceentry.Attributes{{Key: "exception.type", Value: traceentry.StringValue("OOM")}}}}
			}
			if rng.IntN(5) == 0 {
				sp.Links = []traceentry.Link{{TraceID: tr.TraceID, SpanID: sp.SpanID, TraceState: "k=v", Flags: 1}}
			}
			tr.Spans = append(tr.Spans, sp)
		}
		out = append(out, tr)
	}
	return out
}

func binaryPut(dst []byte, vs ...uint64) {
	for i, v := range vs {
		for j := 0; j < 8 && 8*i+j < len(dst); j++ {
			dst[8*i+j] = byte(v >> (8 * j))
		}
	}
}

// streamLabels is what ingest would derive from a resource.
func streamLabels(r *traceentry.Resource) labels.Labels {
	run, _ := r.Attributes.Get("ai.run.id")
	return labels.FromStrings("service_name", r.ServiceName(), "run_id", run.Str())
}

// push stores spans grouped by resource, as one request.
func push(tb testing.TB, s *Store, spans []traceentry.Span) PushResult {
	tb.Helper()
	var batch []ResourceSpans
	idx := map[*traceentry.Resource]int{}
	for _, sp := range spans {
		i, ok := idx[sp.Resource]
		if !ok {
			i = len(batch)
			idx[sp.Resource] = i
			batch = append(batch, ResourceSpans{Labels: streamLabels(sp.Resource)})
		}
		batch[i].Spans = append(batch[i].Spans, sp)
	}
	res, err := s.Push(context.Background(), batch)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// spanSig is a comparable summary of a span, for comparing traces.
func spanSig(sp *traceentry.Span) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %d %d %d %d %q %q", sp.TraceID, sp.SpanID, sp.ParentSpanID, sp.StartUnixNano, sp.EndUnixNano,
		sp.Kind, sp.StatusCode, sp.Name, sp.StatusMessage)
	attrs := slices.Clone(sp.Attributes)
	slices.SortFunc(attrs, func(a, b traceentry.KeyValue) int { return strings.Compare(a.Key, b.Key) })
	for _, kv := range attrs {
		fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value)
	}
	if sp.Resource != nil {
		for _, kv := range sp.Resource.Attributes {
			fmt.Fprintf(&b, " r.%s=%s", kv.Key, kv.Value)
		}
	}
	if sp.Scope != nil {
		fmt.Fprintf(&b, " scope=%s/%s", sp.Scope.Name, sp.Scope.Version)
	}
	for _, e := range sp.Events {
		fmt.Fprintf(&b, " ev(%d %s %v)", e.TimeUnixNano, e.Name, e.Attributes)
	}
	for _, l := range sp.Links {
		fmt.Fprintf(&b, " link(%s %s %s %d)", l.TraceID, l.SpanID, l.TraceState, l.Flags)
	}
	return b.String()
}

func traceSigs(tr *traceentry.Trace) []string {
	var out []string
	for i := range tr.Spans {
		out = append(out, spanSig(&tr.Spans[i]))
	}
	slices.Sort(out)
	return out
}
