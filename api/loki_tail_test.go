package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// tailMsg is one message of the tail endpoint, decoded.
type tailMsg struct {
	Streams []struct {
		Stream map[string]string `json:"stream"`
		Values [][2]string       `json:"values"`
	} `json:"streams"`
	Dropped []struct {
		Labels    map[string]string `json:"labels"`
		Timestamp string            `json:"timestamp"`
	} `json:"dropped_entries"`
}

// lines returns "app/line" for each entry of m, in message order.
func (m tailMsg) lines() []string {
	var out []string
	for _, s := range m.Streams {
		for _, v := range s.Values {
			out = append(out, s.Stream["app"]+"/"+v[1])
		}
	}
	return out
}

// dialTail opens a tail WebSocket with params; the connection closes at
// the end of the test.
func dialTail(tb testing.TB, ctx context.Context, e *lokiEnv, params url.Values) *websocket.Conn {
	tb.Helper()
	u := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/loki/api/v1/tail?" + params.Encode()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	tb.Cleanup(func() { c.CloseNow() })
	return c
}

func readTail(tb testing.TB, ctx context.Context, c *websocket.Conn) tailMsg {
	tb.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		tb.Fatalf("read tail: %v", err)
	}
	var m tailMsg
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("tail message %s: %v", b, err)
	}
	return m
}

// testCtx bounds every wait of a tail test.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

func TestLokiTailPushedLines(t *testing.T) {
	e := newLokiEnv(t)
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"} |= "keep" | logfmt`}})
	ts := lokiNow.Add(-time.Second)
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"other"},"values":[["%s","keep n=0"]]}]}`, ns(ts)))
	e.pushJSON(t, fmt.Sprintf(`{"streams":[
		{"stream":{"app":"other"},"values":[["%s","keep n=1"]]},
		{"stream":{"app":"tail"},"values":[["%s","keep n=2"],["%s","drop n=3"],["%s","keep n=4"]]}]}`,
		ns(ts), ns(ts), ns(ts.Add(time.Millisecond)), ns(ts.Add(2*time.Millisecond))))
	m := readTail(t, ctx, c)
	if got := strings.Join(m.lines(), ","); got != "tail/keep n=2,tail/keep n=4" {
		t.Fatalf("tail sent %q", got)
	}
	// The pipeline applies: logfmt's n is a label of the entries.
	if got := m.Streams[0].Stream["n"]; got != "2" {
		t.Errorf("stream labels %v, want n=2", m.Streams[0].Stream)
	}
	if len(m.Dropped) != 0 {
		t.Errorf("dropped %v", m.Dropped)
	}
	// Only the selector's streams: a later line of "tail" comes next, not
	// anything of "other".
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"other"},"values":[["%s","keep n=5"]]},
		{"stream":{"app":"tail"},"values":[["%s","keep n=6"]]}]}`, ns(ts), ns(ts.Add(3*time.Millisecond))))
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/keep n=6" {
		t.Fatalf("tail sent %q", got)
	}
}

func TestLokiTailBackfillAndLimit(t *testing.T) {
	e := newLokiEnv(t)
	ctx := testCtx(t)
	t0 := lokiNow.Add(-time.Minute)
	var vals []string
	for i := range 5 {
		vals = append(vals, fmt.Sprintf(`["%s","old %d"]`, ns(t0.Add(time.Duration(i)*time.Second)), i))
	}
	e.pushJSON(t, `{"streams":[{"stream":{"app":"tail"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"}`}, "limit": {"2"}, "start": {ns(t0.Add(-time.Second))}})
	// The backfill: the newest two since start, oldest first.
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/old 3,tail/old 4" {
		t.Fatalf("backfill %q", got)
	}
	// A push of three lines comes in messages of at most limit entries.
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","new 0"],["%s","new 1"],["%s","new 2"]]}]}`,
		ns(lokiNow), ns(lokiNow.Add(time.Millisecond)), ns(lokiNow.Add(2*time.Millisecond))))
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/new 0,tail/new 1" {
		t.Fatalf("first live message %q", got)
	}
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/new 2" {
		t.Fatalf("second live message %q", got)
	}
}

func TestLokiTailDelayFor(t *testing.T) {
	var now atomic.Int64
	now.Store(lokiNow.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Now = clock })
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"}`}, "delay_for": {"1"}})
	// Both lines are younger than delay_for: held, then sent together in
	// timestamp order although the later one was pushed first.
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","second"]]}]}`, ns(lokiNow.Add(-100*time.Millisecond))))
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","first"]]}]}`, ns(lokiNow.Add(-900*time.Millisecond))))
	now.Store(lokiNow.Add(time.Second).UnixNano())
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/first,tail/second" {
		t.Fatalf("tail sent %q", got)
	}
	for _, v := range []string{"6", "-1", "x"} {
		code, _ := e.get(t, "/loki/api/v1/tail", url.Values{"query": {`{app="tail"}`}, "delay_for": {v}}, nil)
		if code != 400 {
			t.Errorf("delay_for=%s: %d, want 400", v, code)
		}
	}
	if code, _ := e.get(t, "/loki/api/v1/tail", url.Values{"query": {`count_over_time({app="tail"}[1m])`}}, nil); code != 400 {
		t.Errorf("metric query: %d, want 400", code)
	}
}

func TestLokiTailDroppedEntries(t *testing.T) {
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.TailMaxQueued = 3 })
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"}`}})
	var vals []string
	for i := range 5 {
		vals = append(vals, fmt.Sprintf(`["%s","l%d"]`, ns(lokiNow.Add(time.Duration(i))), i))
	}
	e.pushJSON(t, `{"streams":[{"stream":{"app":"tail"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	m := readTail(t, ctx, c)
	if got := strings.Join(m.lines(), ","); got != "tail/l0,tail/l1,tail/l2" {
		t.Fatalf("tail sent %q", got)
	}
	if len(m.Dropped) != 2 || m.Dropped[0].Timestamp != ns(lokiNow.Add(3)) || m.Dropped[1].Timestamp != ns(lokiNow.Add(4)) ||
		m.Dropped[0].Labels["app"] != "tail" {
		t.Fatalf("dropped_entries %+v", m.Dropped)
	}
	// The queue has room again once the message is written.
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","l5"]]}]}`, ns(lokiNow.Add(5))))
	if m := readTail(t, ctx, c); strings.Join(m.lines(), ",") != "tail/l5" || len(m.Dropped) != 0 {
		t.Fatalf("tail sent %+v", m)
	}
}

// A client that reads nothing does not hold up pushes: every push returns
// while its connection is stuck, and what the client reads afterwards,
// lines and dropped entries, accounts for every line pushed.
func TestLokiTailSlowClientDoesNotBlockPush(t *testing.T) {
	e := newLokiEnvWith(t, func(o *LokiOptions) {
		o.TailMaxQueued = 64
		o.TailMaxDropped = 1 << 20
	})
	// 8 MB of JSON pushed and read back under -race: on a loaded machine it
	// takes longer than the other tail tests' bound, and only a bound it is.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"}`}, "limit": {"1000"}})
	const pushes, perPush = 40, 100
	line := strings.Repeat("x", 2000) // 8 MB in all: more than the sockets buffer
	for p := range pushes {
		vals := make([]string, perPush)
		for i := range vals {
			vals[i] = fmt.Sprintf(`["%s","%s"]`, ns(lokiNow.Add(time.Duration(p*perPush+i))), line)
		}
		e.pushJSON(t, `{"streams":[{"stream":{"app":"tail"},"values":[`+strings.Join(vals, ",")+`]}]}`)
	}
	got, dropped := 0, 0
	for got < pushes*perPush {
		m := readTail(t, ctx, c)
		got += len(m.lines()) + len(m.Dropped)
		dropped += len(m.Dropped)
	}
	t.Logf("%d of %d lines dropped for the slow client", dropped, pushes*perPush)
	if got != pushes*perPush {
		t.Fatalf("%d lines and drops for %d pushed", got, pushes*perPush)
	}
}

// The broadcaster itself: a subscriber that never takes anything does not
// block Publish, holds at most maxQueued entries and remembers at most
// maxDropped drops; streams that do not match are not queued.
func TestLogBroadcasterBoundsASlowSubscriber(t *testing.T) {
	b := NewLogBroadcaster()
	sub := b.subscribe(context.Background(), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "app", "a")}, 10, 4)
	defer b.unsubscribe(sub)
	other := b.subscribe(context.Background(), []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "app", "zzz")}, 10, 4)
	defer b.unsubscribe(other)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				b.Publish([]logstore.PushStream{
					{Labels: labels.FromStrings("app", "a"), Entries: []logentry.Entry{{Timestamp: int64(g*1000 + i), Line: "x"}}},
					{Labels: labels.FromStrings("app", "b"), Entries: []logentry.Entry{{Timestamp: 1, Line: "y"}}},
				})
			}
		}()
	}
	wg.Wait()
	q, d := sub.take()
	if countEntries(q) != 10 || len(d) != 4 {
		t.Fatalf("queued %d, dropped %d; want 10 and 4", countEntries(q), len(d))
	}
	for _, bt := range q {
		if bt.labels.Get("app") != "a" {
			t.Fatalf("queued a stream of %s", bt.labels)
		}
	}
	if q, d := other.take(); len(q) != 0 || len(d) != 0 {
		t.Fatalf("non-matching subscriber got %v %v", q, d)
	}
	// Until release, the taken entries still count: a new entry is dropped.
	b.Publish([]logstore.PushStream{{Labels: labels.FromStrings("app", "a"), Entries: []logentry.Entry{{Timestamp: 5}}}})
	if q, d := sub.take(); len(q) != 0 || len(d) != 1 {
		t.Fatalf("before release: queued %d, dropped %d", countEntries(q), len(d))
	}
	sub.release(10)
	b.Publish([]logstore.PushStream{{Labels: labels.FromStrings("app", "a"), Entries: []logentry.Entry{{Timestamp: 6}}}})
	if q, _ := sub.take(); countEntries(q) != 1 {
		t.Fatalf("after release: queued %d", countEntries(q))
	}
}

// Closing the broadcaster (shutdown) ends open tail connections, waits for
// their handlers, and turns new tail requests away with 503.
func TestLokiTailEndsOnBroadcasterClose(t *testing.T) {
	bc := NewLogBroadcaster()
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Broadcaster = bc })
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="tail"}`}})
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","before"]]}]}`, ns(lokiNow)))
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "tail/before" {
		t.Fatalf("tail sent %q", got)
	}
	closed := make(chan struct{})
	go func() {
		bc.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not return")
	}
	if _, _, err := c.Read(ctx); err == nil {
		t.Fatal("the connection is still open after Close")
	}
	if code, _ := e.get(t, "/loki/api/v1/tail", url.Values{"query": {`{app="tail"}`}}, nil); code != 503 {
		t.Errorf("tail after Close: %d, want 503", code)
	}
	// Pushes go on.
	e.pushJSON(t, fmt.Sprintf(`{"streams":[{"stream":{"app":"tail"},"values":[["%s","after"]]}]}`, ns(lokiNow)))
}

// TestLokiTailOfAppliedLines: lines stored by another path than the push
// API (a scale-out ingester applying the ingest log) reach tail through
// the broadcaster the handler was given.
func TestLokiTailOfAppliedLines(t *testing.T) {
	b := NewLogBroadcaster()
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Broadcaster = b })
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="applied"}`}})
	ts := lokiNow.Add(-time.Second).UnixNano()
	if err := b.Pusher(e.store).Push(ctx, []logstore.PushStream{{Labels: labels.FromStrings("app", "applied"), Entries: []logentry.Entry{{Timestamp: ts, Line: "from the log"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "applied/from the log" {
		t.Fatalf("tail sent %q", got)
	}
}

// TestLokiTailFromTailer: a process that stores no lines (a querier)
// tails through its Tailer, here another process's broadcaster: the
// entries it streams go through the query's pipeline, the entries it
// dropped are reported, and its failure closes the connection with the
// reason.
func TestLokiTailFromTailer(t *testing.T) {
	upstream := NewLogBroadcaster() // the ingester's
	t.Cleanup(upstream.Close)
	ft := &funcTailer{tail: upstream.Tail}
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Tailer = ft })
	ctx := testCtx(t)
	c := dialTail(t, ctx, e, url.Values{"query": {`{app="far"} |= "keep"`}})
	// The Tailer subscribes in the background: wait until it has.
	for !upstream.subscribed() {
		time.Sleep(time.Millisecond)
	}
	ts := lokiNow.Add(-time.Second).UnixNano()
	upstream.Publish([]logstore.PushStream{
		{Labels: labels.FromStrings("app", "far"), Entries: []logentry.Entry{{Timestamp: ts, Line: "keep 1"}, {Timestamp: ts + 1, Line: "drop"}, {Timestamp: ts + 2, Line: "keep 2"}}},
		{Labels: labels.FromStrings("app", "near"), Entries: []logentry.Entry{{Timestamp: ts, Line: "keep other"}}},
	})
	if got := strings.Join(readTail(t, ctx, c).lines(), ","); got != "far/keep 1,far/keep 2" {
		t.Fatalf("tail sent %q", got)
	}
	// Dropped upstream: reported as Loki reports its own.
	ft.send([]logstore.PushStream{{Labels: labels.FromStrings("app", "far"), Entries: []logentry.Entry{{Timestamp: ts + 5}}}})
	m := readTail(t, ctx, c)
	if len(m.lines()) != 0 || len(m.Dropped) != 1 || m.Dropped[0].Labels["app"] != "far" || m.Dropped[0].Timestamp != fmt.Sprint(ts+5) {
		t.Fatalf("tail sent %+v", m)
	}
	// The source fails: the connection closes with its reason.
	ft.fail(errors.New("no ingester for partition 3"))
	_, _, err := c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusInternalError || !strings.Contains(err.Error(), "no ingester for partition 3") {
		t.Fatalf("read after the source failed: %v", err)
	}
}

// funcTailer wraps a LogTailer so that a test can add dropped entries to
// its feed and make it fail.
type funcTailer struct {
	tail func(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error
	mu   sync.Mutex
	fn   func(stored, dropped []logstore.PushStream) error
	stop chan error
}

func (f *funcTailer) Tail(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error {
	f.mu.Lock()
	f.fn, f.stop = fn, make(chan error, 1)
	stop := f.stop
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.tail(ctx, ms, fn) }()
	select {
	case err := <-stop:
		cancel()
		<-done
		return err
	case err := <-done:
		return err
	}
}

func (f *funcTailer) send(dropped []logstore.PushStream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.fn(nil, dropped)
}

func (f *funcTailer) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop <- err
}

// subscribed reports whether a tail connection or feed is subscribed.
func (b *LogBroadcaster) subscribed() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs) > 0
}
