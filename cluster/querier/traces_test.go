package querier

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/blocks"
	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// fixedLog is a block builder's log of partitions 0 and 1 holding fixed
// records: the first Poll returns them, later ones nothing.
type fixedLog struct {
	recs []kafkalog.Fetched
	hwm  map[int32]int64

	mu        sync.Mutex
	polled    bool
	committed map[int32]int64
}

func (l *fixedLog) Committed(context.Context) (map[int32]int64, error) { return map[int32]int64{}, nil }
func (l *fixedLog) Start(map[int32]int64)                              {}
func (l *fixedLog) Poll(ctx context.Context) (kafkalog.Poll, error) {
	l.mu.Lock()
	first := !l.polled
	l.polled = true
	l.mu.Unlock()
	if first {
		return kafkalog.Poll{Records: l.recs, HighWatermark: l.hwm}, nil
	}
	select {
	case <-ctx.Done():
		return kafkalog.Poll{}, ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return kafkalog.Poll{HighWatermark: l.hwm}, nil
	}
}

func (l *fixedLog) Commit(_ context.Context, next map[int32]int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, o := range next {
		l.committed[p] = o
	}
	return nil
}

func (l *fixedLog) done() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, o := range l.hwm {
		if l.committed[p] != o {
			return false
		}
	}
	return true
}

// splitSpan is span n of trace i of TestTracesAcrossTheSplit at t: an
// "old" span (before the split) carries attribute "attr.old", a new one
// "attr.new".
func splitSpan(i int, n byte, t time.Time, old bool) tracestore.ResourceSpans {
	id := traceentry.TraceID{0: 0xcd, 15: byte(i)}
	attr := "attr.new"
	if old {
		attr = "attr.old"
	}
	svc := []string{"router", "loader", "worker"}[n%3]
	if i == 2 {
		svc = "archive-" + svc // trace 2's streams are only in the blocks
	}
	sp := traceentry.Span{TraceID: id, SpanID: traceentry.SpanID{6: byte(i), 7: n}, Name: "op-" + strconv.Itoa(int(n)), Kind: traceentry.SpanKindServer,
		StartUnixNano: t.UnixNano(), EndUnixNano: t.Add(time.Second).UnixNano(),
		Resource:   &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}}},
		Scope:      &traceentry.InstrumentationScope{Name: "weft-test"},
		Attributes: traceentry.Attributes{{Key: attr, Value: traceentry.IntValue(int64(n))}}}
	if n > 1 {
		sp.ParentSpanID = traceentry.SpanID{6: byte(i), 7: 1}
	}
	return tracestore.ResourceSpans{Labels: labels.FromStrings("service_name", svc), Spans: []traceentry.Span{sp}}
}

// TestTracesAcrossTheSplit: traces whose spans lie on both sides of the
// querier's ingesters/blocks split come back whole and once, by ID and by
// search, and the Tempo API answers as a single node holding every span:
// trace 0's old spans are in the blocks and (still) on the ingester, trace
// 1's only in the blocks (the ingester no longer has them), trace 2 is in
// the blocks alone (on a service of its own, which the investigation
// index finds there), trace 3 on the ingester alone.
func TestTracesAcrossTheSplit(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	split := now.Add(-time.Hour)
	oldT, newT := split.Add(-5*time.Minute), split.Add(5*time.Minute)
	type placed struct {
		rs               tracestore.ResourceSpans
		blocks, ingester bool
	}
	var all []placed
	for i := range 4 {
		for n := byte(1); n <= 3; n++ {
			old := n < 3 || i == 2
			at := newT.Add(time.Duration(i)*time.Second + time.Duration(n)*100*time.Millisecond)
			if old {
				at = oldT.Add(time.Duration(i)*time.Second + time.Duration(n)*100*time.Millisecond)
			}
			p := placed{rs: splitSpan(i, n, at, old)}
			switch {
			case i == 3:
				p.ingester = true
			case i == 2:
				p.blocks = true
			case old:
				p.blocks, p.ingester = true, i == 0
			default:
				p.ingester = true
			}
			all = append(all, p)
		}
	}

	single, ing := newNode(t, nil), newNode(t, []int32{0, 1})
	var recs []kafkalog.Fetched
	hwm := map[int32]int64{0: 0, 1: 0}
	recTime := now.Add(-3 * time.Hour).Truncate(time.Minute)
	for _, p := range all {
		if _, err := single.sub.Traces().Push(ctx, []tracestore.ResourceSpans{p.rs}); err != nil {
			t.Fatal(err)
		}
		if p.ingester {
			if _, err := ing.sub.Traces().Push(ctx, []tracestore.ResourceSpans{p.rs}); err != nil {
				t.Fatal(err)
			}
		}
		if p.blocks {
			b, err := record.NewEncoder().AppendTraces(nil, []tracestore.ResourceSpans{p.rs})
			if err != nil {
				t.Fatal(err)
			}
			part := record.TracePartition(p.rs.Spans[0].TraceID, total)
			recs = append(recs, kafkalog.Fetched{Partition: part, Offset: hwm[part], Time: recTime, Value: b})
			hwm[part]++
		}
	}
	bucket, err := blocks.NewFSBucket(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := &fixedLog{recs: recs, hwm: hwm, committed: map[int32]int64{}}
	bb, err := blocks.NewBuilder(blocks.BuilderOptions{Partitions: []int32{0, 1}, Window: time.Minute, Grace: time.Second, ScratchDir: t.TempDir()}, log, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := bb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !log.done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("blocks not built in 20s: %d uploaded", bb.Uploaded())
		}
	}
	bb.Stop()
	br, err := blocks.NewReader(blocks.ReaderOptions{CacheDir: t.TempDir(), SyncInterval: time.Hour}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)
	if n := len(br.Blocks()); n == 0 {
		t.Fatal("no blocks")
	}

	q, err := New(Options{Ingesters: []string{ing.srv.URL}, TotalPartitions: total, StatusInterval: time.Hour,
		QueryIngestersWithin: time.Hour, Blocks: br, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	q.Start(ctx)
	t.Cleanup(q.Stop)
	tr := q.Traces()

	// What each trace must be: every span written, once.
	want := map[traceentry.TraceID][]string{}
	for _, p := range all {
		id := p.rs.Spans[0].TraceID
		want[id] = append(want[id], rowsOf(p.rs.Spans)...)
	}
	for id := range want {
		slices.Sort(want[id])
	}
	for id, w := range want {
		got, err := tr.FindTraceByID(ctx, id, 0, 0)
		if err != nil || got == nil {
			t.Fatalf("find %s: %v, %v", id, got, err)
		}
		if g := rowsOf(got.Spans); !slices.Equal(g, w) {
			t.Errorf("trace %s by ID:\n got %q\nwant %q", id, g, w)
		}
	}
	it, err := tr.Fetch(ctx, traceentry.FetchRequest{Start: oldT.Add(-time.Minute).UnixNano(), End: now.UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[traceentry.TraceID]bool{}
	var lastEnd int64 = 1<<63 - 1
	for it.Next() {
		got := it.At()
		if seen[got.TraceID] {
			t.Errorf("search yields trace %s twice", got.TraceID)
		}
		seen[got.TraceID] = true
		if g := rowsOf(got.Spans); !slices.Equal(g, want[got.TraceID]) {
			t.Errorf("trace %s of the search:\n got %q\nwant %q", got.TraceID, g, want[got.TraceID])
		}
		if _, end := got.TimeRange(); end > lastEnd {
			t.Errorf("trace %s ends at %d, after the one before it (%d): not most recent first", got.TraceID, end, lastEnd)
		} else {
			lastEnd = end
		}
	}
	if err := it.Close(); err != nil || len(seen) != len(want) {
		t.Fatalf("search: %d of %d traces, %v", len(seen), len(want), err)
	}
	span, res, err := tr.TagNames(ctx, oldT.Add(-time.Minute).UnixNano(), now.UnixNano())
	if err != nil || !slices.Equal(span, []string{"attr.new", "attr.old"}) || !slices.Equal(res, []string{"service.name"}) {
		t.Fatalf("tag names %v %v, %v; want the blocks' and the ingester's", span, res, err)
	}
	// The investigation index lists trace streams of the blocks too.
	ids, err := q.Index().Postings(ctx, index.KindTrace, oldT.Add(-time.Minute).UnixMilli(), now.UnixMilli(),
		labels.MustNewMatcher(labels.MatchRegexp, "service_name", "archive-.*"))
	if err != nil || ids.GetCardinality() != 3 {
		t.Fatalf("trace streams of the blocks in the index: %v, %v; want the 3 archive streams", ids, err)
	}
	if reads := counterValue(t, q.m.blockReads); reads == 0 {
		t.Fatal("no block reads counted")
	}

	// The Tempo API over the querier answers as over the single node.
	srv := httptest.NewServer(Middleware(apiHandler(t, q, q.Logs(), tr, nil)))
	t.Cleanup(srv.Close)
	s, e := strconv.FormatInt(oldT.Add(-time.Minute).Unix(), 10), strconv.FormatInt(now.Unix(), 10)
	checks := []check{
		{"/api/search", url.Values{"q": {`{ }`}, "start": {s}, "end": {e}, "limit": {"100"}}},
		{"/api/search", url.Values{"q": {`{ span.attr.new > 0 }`}, "start": {s}, "end": {e}, "limit": {"100"}}},
		{"/api/search", url.Values{"q": {`{ resource.service.name = "loader" } && { span.attr.old > 0 }`}, "start": {s}, "end": {e}, "limit": {"100"}}},
		{"/api/v2/search/tags", url.Values{"start": {s}, "end": {e}}},
	}
	for id := range want {
		checks = append(checks, check{"/api/v2/traces/" + id.String(), nil})
	}
	for _, c := range checks {
		wc, _, w := get(t, single.srv.URL, c.path, c.params)
		gc, _, g := get(t, srv.URL, c.path, c.params)
		if wc != 200 || gc != 200 {
			t.Fatalf("%s %v: single %d %v, querier %d %v", c.path, c.params, wc, w, gc, g)
		}
		if d := reflect.ValueOf(data(w)); !d.IsValid() || (d.Kind() == reflect.Slice || d.Kind() == reflect.Map) && d.Len() == 0 {
			t.Errorf("%s %v: the single node's answer is empty", c.path, c.params)
		}
		if !reflect.DeepEqual(data(w), data(g)) {
			t.Errorf("%s %v:\nsingle  %v\nquerier %v", c.path, c.params.Get("q"), data(w), data(g))
		}
	}
}

// rowsOf summarises spans as sorted comparable rows.
func rowsOf(spans []traceentry.Span) []string {
	var rows []string
	for _, sp := range spans {
		rows = append(rows, fmt.Sprintf("%s %s<-%s %s %s %d-%d %v", sp.TraceID, sp.SpanID, sp.ParentSpanID, sp.Name, sp.Resource.ServiceName(),
			sp.StartUnixNano, sp.EndUnixNano, sp.Attributes))
	}
	slices.Sort(rows)
	return rows
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
