package ingester

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

const partitions = 2

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

type env struct {
	t    *testing.T
	kopt kafkalog.Options
	sink *kafkalog.Sink
	dir  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(partitions, kafkalog.DefaultTopic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kopt := kafkalog.DefaultOptions()
	kopt.Brokers = c.ListenAddrs()
	kopt.FetchMaxWait = 100 * time.Millisecond
	p, err := kafkalog.NewProducer(kopt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &env{t: t, kopt: kopt, sink: kafkalog.NewSink(p, partitions, 0), dir: t.TempDir()}
}

// write produces n series with one sample at t and one log line each.
func (e *env) write(from, n int, t time.Time) {
	e.t.Helper()
	app := e.sink.AppenderV2(context.Background())
	var streams []logstore.PushStream
	for i := from; i < from+n; i++ {
		ls := labels.FromStrings("__name__", "gpu_power_watts", "gpu", fmt.Sprint(i))
		if _, err := app.Append(0, ls, 0, t.UnixMilli(), float64(i), nil, nil, promstorage.AOptions{}); err != nil {
			e.t.Fatal(err)
		}
		streams = append(streams, logstore.PushStream{Labels: labels.FromStrings("job", "train", "rank", fmt.Sprint(i)),
			Entries: []logentry.Entry{{Timestamp: t.UnixNano(), Line: fmt.Sprintf("rank %d ok", i)}}})
	}
	if err := app.Commit(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.sink.Push(context.Background(), streams); err != nil {
		e.t.Fatal(err)
	}
}

// start opens the substrate in e.dir and an ingester of every partition.
func (e *env) start(group string) (*Ingester, *storage.Substrate, *kafkalog.Reader) {
	e.t.Helper()
	sopts := storage.DefaultOptions()
	sopts.WALSyncInterval = -1
	sopts.RetentionInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), e.dir, sopts)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := kafkalog.NewReader(e.kopt, group, []int32{0, 1})
	if err != nil {
		e.t.Fatal(err)
	}
	in, err := New(Options{Partitions: []int32{0, 1}, TotalPartitions: partitions, StateDir: e.dir, CommitInterval: 50 * time.Millisecond},
		r, &record.Applier{Metrics: sub.Metrics(), Logs: sub.Logs()})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := in.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	return in, sub, r
}

func waitReady(t *testing.T, in *Ingester) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := in.WaitFor(ctx); err != nil {
		t.Fatal(err)
	}
	for !in.Ready() {
		if ctx.Err() != nil {
			t.Fatal("not ready after catching up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func counts(t *testing.T, sub *storage.Substrate) (samples, entries int) {
	t.Helper()
	q, err := sub.Metrics().Querier(0, time.Now().Add(time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_power_watts"))
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			samples++
		}
	}
	it, err := sub.Logs().Select(context.Background(), logentry.SelectParams{Start: 0, End: time.Now().Add(time.Hour).UnixNano(),
		Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.Next() {
		entries++
	}
	return samples, entries
}

// TestConsumeAndResume: an ingester applies what was produced, serves
// read-after-write, and after a crash (no final commit; the substrate
// closed without flushing) resumes where it left off: every record is
// applied exactly once (no log line twice), including those produced while
// it was down.
func TestConsumeAndResume(t *testing.T) {
	e := newEnv(t)
	base := time.Now().Add(-time.Minute)
	e.write(0, 20, base)
	in, sub, r := e.start("weft-ingester-test")
	waitReady(t, in)
	if s, n := counts(t, sub); s != 20 || n != 20 {
		t.Fatalf("after catch-up: %d samples, %d entries; want 20, 20", s, n)
	}

	// Read-after-write through the middleware: a write is visible to the
	// request that follows it.
	e.write(20, 5, base.Add(time.Second))
	h := in.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s, n := counts(t, sub)
		fmt.Fprintf(w, "%d %d", s, n)
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(readapi.HeaderStrong, readapi.StrongValue)
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.String() != "25 25" {
		t.Fatalf("strong read answered %d %q, want 200 \"25 25\"", rec.Code, rec.Body.String())
	}

	// Crash: stop consuming without the final commit, close the store as a
	// kill would leave it (the WAL has what was acknowledged).
	in.cancel()
	<-in.done
	r.Close()
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	e.write(25, 5, base.Add(2*time.Second))

	in2, sub2, r2 := e.start("weft-ingester-test")
	defer func() {
		if err := in2.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		r2.Close()
		_ = sub2.Close()
	}()
	waitReady(t, in2)
	if s, n := counts(t, sub2); s != 30 || n != 30 {
		t.Fatalf("after restart: %d samples, %d entries; want 30, 30 (each record once)", s, n)
	}
	st := in2.Status()
	if !st.Ready || st.Applied[0]+st.Applied[1] != st.HighWatermark[0]+st.HighWatermark[1] {
		t.Fatalf("status %+v", st)
	}
}
