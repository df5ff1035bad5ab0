package tracestore

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/traceentry"
)

// TestExport copies a store whose traces lie in the head and in several
// blocks, one tenant's beside the anonymous ones, into a fresh store
// through Export and Push: every trace comes out once and whole, and the
// copy answers as the original, tenants kept apart.
func TestExport(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	src := openTestStore(t, openTestDB(t, t.TempDir()), testOptions(c))
	traces := genTraces(rand.New(rand.NewPCG(3, 4)), 200, c.t, 5*time.Minute)
	loadSplit(t, src, c, traces[:150])
	acme := tenant.With(ctx, "acme")
	for _, tr := range traces[150:] {
		batch := []ResourceSpans{{Labels: streamLabels(tr.Spans[0].Resource), Spans: tr.Spans}}
		if _, err := src.Push(acme, batch); err != nil {
			t.Fatal(err)
		}
	}
	if st := src.Stats(); st.Blocks < 2 || st.HeadTraces == 0 {
		t.Fatalf("stats %+v: want blocks and a head", st)
	}

	dst := openTestStore(t, openTestDB(t, t.TempDir()), testOptions(c))
	seen := map[traceentry.TraceID]int{}
	err := src.Export(ctx, 0, 0, func(id traceentry.TraceID, rs []ResourceSpans) error {
		seen[id]++
		_, err := dst.Push(ctx, rs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(traces) {
		t.Fatalf("exported %d traces, want %d", len(seen), len(traces))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("trace %s exported %d times", id, n)
		}
	}
	for i, want := range traces {
		rctx := ctx
		if i >= 150 {
			rctx = acme
		}
		got, err := dst.FindTraceByID(rctx, want.TraceID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			t.Fatalf("trace %s not in the copy", want.TraceID)
		}
		if g, w := traceSigs(got), traceSigs(want); !slices.Equal(g, w) {
			t.Fatalf("trace %s:\n got %q\nwant %q", want.TraceID, g, w)
		}
	}
	// The tenant's traces stay its own in the copy.
	other := tenant.With(ctx, "other")
	if got, err := dst.FindTraceByID(other, traces[160].TraceID, 0, 0); err != nil || got != nil {
		t.Fatalf("another tenant reads acme's trace: %v, %v", got, err)
	}
	// A bounded export yields only the traces with a span in range.
	lo := c.t.Add(-time.Hour).UnixNano()
	n := 0
	if err := src.Export(ctx, lo, lo+1, func(traceentry.TraceID, []ResourceSpans) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("export of an empty range: %d traces, %v", n, err)
	}
}
