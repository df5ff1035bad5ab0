package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

const testPartitions = 4

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// newCluster starts three in-process kfake brokers with the ingest topic.
func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3), kfake.SeedTopics(testPartitions, DefaultTopic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testOpts(c *kfake.Cluster) Options {
	o := DefaultOptions()
	o.Brokers = c.ListenAddrs()
	o.ProduceTimeout = 3 * time.Second
	o.FetchMaxWait = 100 * time.Millisecond
	return o
}

// readAll polls r until it has n records or the deadline passes.
func readAll(t testing.TB, r *Reader, n int) []Fetched {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []Fetched
	for len(out) < n {
		p, err := r.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, p.Records...)
	}
	return out
}

func TestSinkProducesToPartitions(t *testing.T) {
	c := newCluster(t)
	defer c.Close()
	opts := testOpts(c)
	p, err := NewProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.Partitions(context.Background()); err != nil || n != testPartitions {
		t.Fatalf("Partitions = %d, %v", n, err)
	}
	s := NewSink(p, testPartitions, 0)

	app := s.AppenderV2(context.Background())
	const nSeries = 40
	for i := range nSeries {
		ls := labels.FromStrings("__name__", "gpu_temp", "gpu", fmt.Sprint(i))
		for j := range 3 {
			if _, err := app.Append(0, ls, 0, int64(1000*j), float64(i), nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.Push(context.Background(), []logstore.PushStream{{Labels: labels.FromStrings("job", "train"), Entries: []logentry.Entry{{Timestamp: 1, Line: "hello"}}}}); err != nil {
		t.Fatal(err)
	}

	all := []int32{0, 1, 2, 3}
	r, err := NewReader(opts, "test-group", all)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Start(nil)
	recs := readAll(t, r, 5) // at most one metrics record per partition, plus the logs record
	seen, streams := map[string]bool{}, 0
	for _, f := range recs {
		rec, err := record.Decode(f.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rec.Series {
			if got := record.PartitionOf(s.Labels, testPartitions); got != f.Partition {
				t.Errorf("series %v on partition %d, hashes to %d", s.Labels, f.Partition, got)
			}
			if len(s.Samples) != 3 {
				t.Errorf("series %v has %d samples", s.Labels, len(s.Samples))
			}
			seen[s.Labels.String()] = true
		}
		for _, ps := range rec.Streams {
			if got := record.PartitionOf(ps.Labels, testPartitions); got != f.Partition {
				t.Errorf("stream %v on partition %d, hashes to %d", ps.Labels, f.Partition, got)
			}
			streams++
		}
	}
	if len(seen) != nSeries || streams != 1 {
		t.Fatalf("read %d series and %d streams, want %d and 1", len(seen), streams, nSeries)
	}

	// Offsets: commit, read back, end offsets.
	end, err := r.EndOffsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(context.Background(), end); err != nil {
		t.Fatal(err)
	}
	got, err := r.Committed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if got[p] != end[p] {
			t.Fatalf("committed %v, want %v", got, end)
		}
	}
}

// TestSinkSplitsLargeWrites: a write larger than MaxRecordBytes becomes
// several records, none over the limit, with every sample kept.
func TestSinkSplitsLargeWrites(t *testing.T) {
	var got []Produced
	s := NewSink(produceFunc(func(_ context.Context, recs []Produced) ([]int64, error) {
		got = append(got, recs...)
		return make([]int64, len(recs)), nil
	}), 1, 2000)
	app := s.AppenderV2(context.Background())
	for i := range 50 {
		ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(i))
		for j := range 20 {
			_, _ = app.Append(0, ls, 0, int64(j), float64(i*j), nil, nil, promstorage.AOptions{})
		}
	}
	// One series larger than a record on its own.
	big := labels.FromStrings("__name__", "big")
	for j := range 1000 {
		_, _ = app.Append(0, big, 0, int64(j), float64(j)*1.1, nil, nil, promstorage.AOptions{})
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	samples := 0
	for _, p := range got {
		if len(p.Value) > 2000 {
			t.Errorf("record of %d bytes over the 2000-byte limit", len(p.Value))
		}
		rec, err := record.Decode(p.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rec.Series {
			samples += len(s.Samples)
		}
	}
	if len(got) < 2 || samples != 50*20+1000 {
		t.Fatalf("%d records with %d samples, want several with %d", len(got), samples, 50*20+1000)
	}
}

// TestSinkPushesTracesByTraceID: every span goes to its trace ID's
// partition, whichever resource sent it, keeps its resource's labels, and a
// push larger than MaxRecordBytes is split with every span kept.
func TestSinkPushesTracesByTraceID(t *testing.T) {
	for _, maxBytes := range []int{0, 600} {
		var got []Produced
		s := NewSink(produceFunc(func(_ context.Context, recs []Produced) ([]int64, error) {
			got = append(got, recs...)
			return make([]int64, len(recs)), nil
		}), testPartitions, maxBytes)
		var batch []tracestore.ResourceSpans
		const nTraces = 30
		for r, svc := range []string{"trainer", "loader"} {
			res := &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}}}
			rs := tracestore.ResourceSpans{Labels: labels.FromStrings("service_name", svc)}
			for i := range nTraces {
				rs.Spans = append(rs.Spans, traceentry.Span{TraceID: traceentry.TraceID{0: 1, 15: byte(i)}, SpanID: traceentry.SpanID{6: byte(r + 1), 7: byte(i)},
					Name: svc, StartUnixNano: int64(i), EndUnixNano: int64(i + 1), Resource: res, Scope: &traceentry.InstrumentationScope{}})
			}
			batch = append(batch, rs)
		}
		res, err := s.PushTraces(context.Background(), batch)
		if err != nil || res.Accepted != 2*nTraces {
			t.Fatalf("PushTraces = %+v, %v", res, err)
		}
		spans := map[traceentry.TraceID][]string{}
		for _, p := range got {
			if p.Kind != record.KindTraces || maxBytes > 0 && len(p.Value) > maxBytes {
				t.Fatalf("record of kind %v and %d bytes (limit %d)", p.Kind, len(p.Value), maxBytes)
			}
			rec, err := record.Decode(p.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rec.Resources {
				for _, sp := range r.Spans {
					if want := record.TracePartition(sp.TraceID, testPartitions); p.Partition != want {
						t.Errorf("span of trace %s on partition %d, its trace ID's is %d", sp.TraceID, p.Partition, want)
					}
					if r.Labels.Get("service_name") != sp.Name {
						t.Errorf("span %q under resource %v", sp.Name, r.Labels)
					}
					spans[sp.TraceID] = append(spans[sp.TraceID], sp.Name)
				}
			}
		}
		if len(spans) != nTraces {
			t.Fatalf("max %d: %d traces arrived, want %d", maxBytes, len(spans), nTraces)
		}
		for id, names := range spans {
			if len(names) != 2 {
				t.Fatalf("trace %s arrived with spans %v, want one per resource", id, names)
			}
		}
		if maxBytes > 0 && len(got) <= testPartitions {
			t.Fatalf("a push over the record limit made %d records", len(got))
		}
	}
}

type produceFunc func(context.Context, []Produced) ([]int64, error)

func (f produceFunc) Produce(ctx context.Context, recs []Produced) ([]int64, error) {
	return f(ctx, recs)
}

// TestProduceFailureIsUnavailable: with the brokers gone, a commit fails
// within the produce timeout with an error that is ingest.ErrUnavailable
// (the receivers' 503).
func TestProduceFailureIsUnavailable(t *testing.T) {
	c := newCluster(t)
	opts := testOpts(c)
	opts.ProduceTimeout = time.Second
	p, err := NewProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c.Close()
	s := NewSink(p, testPartitions, 0)
	app := s.AppenderV2(context.Background())
	_, _ = app.Append(0, labels.FromStrings("__name__", "up"), 0, 1, 1, nil, nil, promstorage.AOptions{})
	start := time.Now()
	err = app.Commit()
	if !errors.Is(err, ingest.ErrUnavailable) {
		t.Fatalf("Commit = %v, want ingest.ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("commit failed after %v, long past the 1s produce timeout", d)
	}
	err = s.Push(context.Background(), []logstore.PushStream{{Labels: labels.FromStrings("job", "x"), Entries: []logentry.Entry{{Timestamp: 1, Line: "l"}}}})
	if !errors.Is(err, ingest.ErrUnavailable) {
		t.Fatalf("Push = %v, want ingest.ErrUnavailable", err)
	}
	_, err = s.PushTraces(context.Background(), []tracestore.ResourceSpans{{Labels: labels.FromStrings("service_name", "x"),
		Spans: []traceentry.Span{{TraceID: traceentry.TraceID{15: 1}, SpanID: traceentry.SpanID{7: 1}, StartUnixNano: 1, EndUnixNano: 2}}}})
	if !errors.Is(err, ingest.ErrUnavailable) {
		t.Fatalf("PushTraces = %v, want ingest.ErrUnavailable", err)
	}
}

// TestLogSurvivesBrokerRestart: records acknowledged before the brokers
// restart (persisted in their data directory, on the same ports) are read
// after it, from the committed offset on.
func TestLogSurvivesBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	ports := freePorts(t, 3)
	c := newCluster(t, kfake.DataDir(dir), kfake.SyncWrites(), kfake.Ports(ports...))
	opts := testOpts(c)
	p, err := NewProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce := func(from, n int) {
		t.Helper()
		var recs []Produced
		for i := from; i < from+n; i++ {
			recs = append(recs, Produced{Partition: int32(i % testPartitions), Kind: record.KindLogs, Value: []byte(fmt.Sprint(i))})
		}
		if _, err := p.Produce(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 8)
	r, err := NewReader(opts, "restart-group", []int32{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(nil)
	first := readAll(t, r, 8)
	next := map[int32]int64{}
	for _, f := range first {
		next[f.Partition] = f.Offset + 1
	}
	if err := r.Commit(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	r.Close()
	produce(8, 8)
	c.Close()

	c2 := newCluster(t, kfake.DataDir(dir), kfake.SyncWrites(), kfake.Ports(ports...))
	defer c2.Close()
	r2, err := NewReader(opts, "restart-group", []int32{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	committed, err := r2.Committed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range next {
		if committed[p] != o {
			t.Fatalf("after restart committed %v, want %v", committed, next)
		}
	}
	r2.Start(committed)
	rest := readAll(t, r2, 8)
	got := map[string]bool{}
	for _, f := range rest {
		got[string(f.Value)] = true
	}
	for i := 8; i < 16; i++ {
		if !got[fmt.Sprint(i)] {
			t.Fatalf("record %d lost across the restart; read %v", i, got)
		}
	}
	// The restarted brokers take new produces too.
	produce(16, 4)
}
