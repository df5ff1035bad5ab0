package blocks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// scriptLog is a Log of partition 0 holding fixed records: the first Poll
// returns them all, later ones nothing. Commits are recorded.
type scriptLog struct {
	recs []kafkalog.Fetched

	mu        sync.Mutex
	polled    bool
	committed int64
}

func (l *scriptLog) Committed(context.Context) (map[int32]int64, error) {
	return map[int32]int64{}, nil
}
func (l *scriptLog) Start(map[int32]int64) {}
func (l *scriptLog) Poll(ctx context.Context) (kafkalog.Poll, error) {
	l.mu.Lock()
	first := !l.polled
	l.polled = true
	l.mu.Unlock()
	hwm := map[int32]int64{0: int64(len(l.recs))}
	if first {
		return kafkalog.Poll{Records: l.recs, HighWatermark: hwm}, nil
	}
	select {
	case <-ctx.Done():
		return kafkalog.Poll{}, ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return kafkalog.Poll{HighWatermark: hwm}, nil
	}
}

func (l *scriptLog) Commit(_ context.Context, next map[int32]int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committed = next[0]
	return nil
}

func (l *scriptLog) next() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.committed
}

// testSpan is span n (its ID) of trace tr on service svc, starting at
// start and lasting a second.
func testSpan(tr byte, n byte, svc string, start time.Time) (labels.Labels, traceentry.Span) {
	res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}}}
	sp := traceentry.Span{TraceID: traceentry.TraceID{0: 0xbb, 15: tr}, SpanID: traceentry.SpanID{6: tr, 7: n}, Name: fmt.Sprintf("op-%d", n),
		Kind: traceentry.SpanKindServer, StartUnixNano: start.UnixNano(), EndUnixNano: start.Add(time.Second).UnixNano(), Resource: res,
		Attributes: traceentry.Attributes{{Key: "attr." + svc, Value: traceentry.IntValue(int64(n))}}}
	if n > 1 {
		sp.ParentSpanID = traceentry.SpanID{6: tr, 7: 1}
	}
	return labels.FromStrings("service_name", svc), sp
}

// traceRecord encodes one traces record of spans, one resource per span.
func traceRecord(t *testing.T, off int64, at time.Time, spans ...func() (labels.Labels, traceentry.Span)) kafkalog.Fetched {
	t.Helper()
	var rec record.Record
	rec.Kind = record.KindTraces
	for _, f := range spans {
		ls, sp := f()
		rec.Resources = append(rec.Resources, tracestoreResource(ls, sp))
	}
	b, err := record.NewEncoder().AppendTraces(nil, rec.Resources)
	if err != nil {
		t.Fatal(err)
	}
	return kafkalog.Fetched{Partition: 0, Offset: off, Time: at, Value: b}
}

// readTraces returns every trace of the bucket's blocks as rows "trace
// span parent name service start", sorted, through a Reader's Fetch, and
// fails if a trace comes twice.
func readTraces(t *testing.T, r *Reader) []string {
	t.Helper()
	it, err := r.Fetch(context.Background(), traceentry.FetchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	seen := map[traceentry.TraceID]bool{}
	var rows []string
	for it.Next() {
		tr := it.At()
		if seen[tr.TraceID] {
			t.Fatalf("trace %s yielded twice", tr.TraceID)
		}
		seen[tr.TraceID] = true
		rows = append(rows, spanRows(tr)...)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(rows)
	return rows
}

func spanRows(tr *traceentry.Trace) []string {
	var rows []string
	for _, sp := range tr.Spans {
		rows = append(rows, fmt.Sprintf("%s %s<-%s %s %s %d", tr.TraceID, sp.SpanID, sp.ParentSpanID, sp.Name, sp.Resource.ServiceName(), sp.StartUnixNano))
	}
	slices.Sort(rows)
	return rows
}

func openReader(t *testing.T, bucket Bucket) *Reader {
	t.Helper()
	r, err := NewReader(ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// TestTracesBuildReadCompact: the block builder puts a window's spans in
// its block (meta.json counts them, min_time and max_time cover them); a
// trace whose spans reached two windows is read back from the blocks as
// one trace with every span once (the span replayed into both windows
// too); the compactor's merged block holds the same traces, that span
// once, and answers the same.
func TestTracesBuildReadCompact(t *testing.T) {
	ctx := context.Background()
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	// Data times: trace 1 has spans in both windows (2 and 3 in the
	// second, 3 replayed there); trace 2 lies in the first, 3 in the
	// second.
	d := base.Add(-10 * time.Minute)
	s := func(tr, n byte, svc string, off time.Duration) func() (labels.Labels, traceentry.Span) {
		return func() (labels.Labels, traceentry.Span) { return testSpan(tr, n, svc, d.Add(off)) }
	}
	log := &scriptLog{recs: []kafkalog.Fetched{
		traceRecord(t, 0, base.Add(time.Second), s(1, 1, "router", 0), s(2, 1, "router", 5*time.Second)),
		traceRecord(t, 1, base.Add(2*time.Second), s(1, 3, "loader", 30*time.Second), s(2, 2, "loader", 6*time.Second)),
		traceRecord(t, 2, base.Add(61*time.Second), s(1, 2, "worker", 70*time.Second), s(3, 1, "router", 80*time.Second)),
		traceRecord(t, 3, base.Add(62*time.Second), s(1, 3, "loader", 30*time.Second)), // a replayed span
	}}
	bucket, err := NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(BuilderOptions{Partitions: []int32{0}, Window: time.Minute, Grace: time.Second, ScratchDir: t.TempDir(),
		Now: func() time.Time { return base.Add(time.Hour) }}, log, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.Uploaded() < 2 || log.next() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %d blocks uploaded, offset %d committed", b.Uploaded(), log.next())
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Stop()

	r := openReader(t, bucket)
	metas := r.Blocks()
	if len(metas) != 2 || metas[0].TraceIDs == nil || metas[1].TraceIDs == nil {
		t.Fatalf("blocks (each with a trace-ID filter): %+v", metas)
	}
	ms := func(off time.Duration) int64 { return d.Add(off).UnixMilli() }
	if m := metas[0]; m.Stats.Spans != 4 || m.Stats.TraceStreams != 2 || m.MinTime != ms(0) || m.MaxTime != ms(31*time.Second) {
		t.Fatalf("first block: spans %d, trace streams %d, time %d..%d; want 4, 2, %d..%d", m.Stats.Spans, m.Stats.TraceStreams, m.MinTime, m.MaxTime, ms(0), ms(31*time.Second))
	}
	if m := metas[1]; m.Stats.Spans != 3 || m.MinTime != ms(30*time.Second) || m.MaxTime != ms(81*time.Second) {
		t.Fatalf("second block: spans %d, time %d..%d; want 3, %d..%d", m.Stats.Spans, m.MinTime, m.MaxTime, ms(30*time.Second), ms(81*time.Second))
	}

	// What was written, each span once: the rows the blocks must answer.
	var want []string
	for _, f := range []func() (labels.Labels, traceentry.Span){s(1, 1, "router", 0), s(1, 2, "worker", 70*time.Second), s(1, 3, "loader", 30*time.Second),
		s(2, 1, "router", 5*time.Second), s(2, 2, "loader", 6*time.Second), s(3, 1, "router", 80*time.Second)} {
		_, sp := f()
		want = append(want, spanRows(&traceentry.Trace{TraceID: sp.TraceID, Spans: []traceentry.Span{sp}})...)
	}
	slices.Sort(want)
	check := func(t *testing.T, r *Reader) {
		t.Helper()
		if got := readTraces(t, r); !slices.Equal(got, want) {
			t.Fatalf("traces of the blocks:\n got %q\nwant %q", got, want)
		}
		_, sp := s(1, 1, "router", 0)()
		tr, err := r.FindTraceByID(ctx, sp.TraceID, 0, 0)
		if err != nil || tr == nil {
			t.Fatalf("find trace 1: %v, %v", tr, err)
		}
		if got := spanRows(tr); !slices.Equal(got, want[:3]) {
			t.Fatalf("trace 1 by ID:\n got %q\nwant %q", got, want[:3])
		}
		// A search of the second window's data alone still returns trace 1
		// whole (its first spans are in the first block).
		it, err := r.Fetch(ctx, traceentry.FetchRequest{Start: d.Add(65 * time.Second).UnixNano(), End: d.Add(90 * time.Second).UnixNano(),
			Hints: traceentry.Hints{Conditions: []traceentry.Condition{{Field: traceentry.Field{Scope: traceentry.ScopeResource, Name: "service.name"},
				Op: traceentry.OpEqual, Operand: traceentry.StringValue("worker")}}}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for it.Next() {
			if it.At().TraceID == sp.TraceID {
				found = true
				if got := spanRows(it.At()); !slices.Equal(got, want[:3]) {
					t.Fatalf("trace 1 found by its late span:\n got %q\nwant %q", got, want[:3])
				}
			}
		}
		if err := it.Close(); err != nil || !found {
			t.Fatalf("search of the late span: found %v, %v", found, err)
		}
		span, res, err := r.TagNames(ctx, d.UnixNano(), d.Add(time.Hour).UnixNano())
		if err != nil || !slices.Equal(span, []string{"attr.loader", "attr.router", "attr.worker"}) || !slices.Equal(res, []string{"service.name"}) {
			t.Fatalf("tag names %v %v, %v", span, res, err)
		}
		streams, err := r.TraceStreams(ctx, d.UnixNano(), d.Add(time.Hour).UnixNano())
		if err != nil || fmt.Sprint(streams) != `[{service_name="loader"} {service_name="router"} {service_name="worker"}]` {
			t.Fatalf("trace streams %v, %v", streams, err)
		}
		// Outside every block: nothing.
		if tr, err := r.FindTraceByID(ctx, sp.TraceID, d.Add(-3*time.Hour).UnixNano(), d.Add(-2*time.Hour).UnixNano()); err != nil || tr != nil {
			t.Fatalf("trace 1 in a range without blocks: %v, %v", tr, err)
		}
	}
	t.Run("built", func(t *testing.T) { check(t, r) })

	c, err := NewCompactor(CompactorOptions{Partitions: []int32{0}, Ranges: []time.Duration{time.Hour}, Grace: time.Second,
		ScratchDir: t.TempDir(), Now: func() time.Time { return base.Add(2 * time.Hour) }}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Compact(ctx); err != nil || n != 1 {
		t.Fatalf("Compact = %d, %v; want 1 block", n, err)
	}
	m, err := readMeta(ctx, bucket, CompactedID(0, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if m.TraceIDs == nil {
		t.Fatal("merged block without a trace-ID filter")
	}
	if m.Stats.Spans != len(want) || m.Stats.TraceStreams != 3 || m.MinTime != ms(0) || m.MaxTime != ms(81*time.Second) {
		t.Fatalf("merged block: %+v; want %d spans (the replayed one once), 3 trace streams", m, len(want))
	}
	t.Run("compacted", func(t *testing.T) {
		r := openReader(t, bucket)
		if got := r.Blocks(); len(got) != 1 || got[0].ID != m.ID {
			t.Fatalf("blocks after compaction: %+v", got)
		}
		check(t, r)
	})
}

func tracestoreResource(ls labels.Labels, sp traceentry.Span) tracestore.ResourceSpans {
	return tracestore.ResourceSpans{Labels: ls, Spans: []traceentry.Span{sp}}
}
