package usage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/usage"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

func openSub(t *testing.T, dir string) *storage.Substrate {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// clock is a settable Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// appendSeries appends n samples of one series per team and commits (or
// rolls back).
func appendSeries(t *testing.T, app promstorage.AppendableV2, id string, teams map[string]int, commit bool) {
	t.Helper()
	ap := app.AppenderV2(tenant.With(context.Background(), id))
	now := time.Now().UnixMilli()
	for team, n := range teams {
		ls := labels.FromStrings(labels.MetricName, "up", "team", team, "namespace", "ns-"+team)
		for i := range n {
			if _, err := ap.Append(0, ls, 0, now-int64(n-i)*1000, 1, nil, nil, promstorage.AOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var err error
	if commit {
		err = ap.Commit()
	} else {
		err = ap.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// usageSeries reads every sample of a usage metric of tenant id: the sum of
// the values by team.
func usageSeries(t *testing.T, db *storage.DB, id, metric string) map[string]float64 {
	t.Helper()
	q, err := db.Querier(0, time.Now().Add(time.Hour).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(tenant.With(context.Background(), id), false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, metric))
	out := map[string]float64{}
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		for it.Next() != 0 {
			_, v := it.At()
			out[s.Labels().Get("team")+"/"+s.Labels().Get("namespace")] += v
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	if ss.Err() != nil {
		t.Fatal(ss.Err())
	}
	return out
}

func TestSamplesCountedPerTenantTeamAndSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	sub := openSub(t, dir)
	clk := &clock{t: time.Now()}
	acct := usage.New(usage.Options{Sink: sub.Metrics(), Now: clk.now})
	app := acct.Appendable(sub.Metrics())

	appendSeries(t, app, "acme", map[string]int{"vision": 3, "nlp": 2, "": 1}, true)
	appendSeries(t, app, "acme", map[string]int{"vision": 100}, false) // rolled back: not counted
	appendSeries(t, app, "globex", map[string]int{"vision": 5}, true)
	if err := acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendSeries(t, app, "acme", map[string]int{"vision": 1}, true)
	if err := acct.Flush(context.Background()); err != nil { // the same millisecond: written one later
		t.Fatal(err)
	}
	clk.t = clk.t.Add(time.Minute)
	appendSeries(t, app, "acme", map[string]int{"vision": 3}, true)
	if err := acct.Stop(context.Background()); err != nil { // the last flush
		t.Fatal(err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}

	// After a restart: a new accountant counts on; the series add up.
	sub = openSub(t, dir)
	defer func() {
		if err := sub.Close(); err != nil {
			t.Error(err)
		}
	}()
	clk.t = clk.t.Add(time.Minute)
	acct = usage.New(usage.Options{Sink: sub.Metrics(), Now: clk.now})
	appendSeries(t, acct.Appendable(sub.Metrics()), "acme", map[string]int{"nlp": 7}, true)
	if err := acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	want := map[string]map[string]float64{
		"acme":   {"vision/ns-vision": 7, "nlp/ns-nlp": 9, "/ns-": 1},
		"globex": {"vision/ns-vision": 5},
	}
	for id, w := range want {
		got := usageSeries(t, sub.Metrics(), id, usage.MetricSamples)
		if !equalMaps(got, w) {
			t.Errorf("tenant %s: samples %v, want %v", id, got, w)
		}
	}
	// The flushed series themselves are not counted as ingest.
	if s := acct.Snapshot(); len(s) != 1 || s[0].Samples != 0 {
		t.Errorf("after flush: %+v, want the one group at zero", s)
	}
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestLogBytesAsLokiCountsThem(t *testing.T) {
	md := labels.FromStrings("trace_id", "abc") // 8 + 3
	if got := usage.LogBytes("hello", md); got != 5+11 {
		t.Fatalf("LogBytes = %d, want 16", got)
	}

	sub := openSub(t, t.TempDir())
	defer sub.Close()
	acct := usage.New(usage.Options{Sink: sub.Metrics()})
	p := acct.LogPusher(sub.Logs())
	now := time.Now().UnixNano()
	push := func(id string, streams ...logstore.PushStream) error {
		return p.Push(tenant.With(context.Background(), id), streams)
	}
	if err := push("acme",
		logstore.PushStream{Labels: labels.FromStrings("team", "vision", "namespace", "a"), Entries: []logentry.Entry{
			{Timestamp: now, Line: "hello", Metadata: md}, {Timestamp: now + 1, Line: "world"}}},
		logstore.PushStream{Labels: labels.FromStrings("team", "nlp", "namespace", "b"), Entries: []logentry.Entry{{Timestamp: now, Line: "x"}}},
	); err != nil {
		t.Fatal(err)
	}
	if err := push("globex", logstore.PushStream{Labels: labels.FromStrings("job", "j"), Entries: []logentry.Entry{{Timestamp: now, Line: "four"}}}); err != nil {
		t.Fatal(err)
	}
	got := snapshot(acct, func(u usage.Usage) int64 { return u.LogBytes })
	want := map[string]int64{"acme/vision/a": 21, "acme/nlp/b": 1, "globex//": 4}
	if !equalCounts(got, want) {
		t.Errorf("log bytes %v, want %v", got, want)
	}
	if err := acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := usageSeries(t, sub.Metrics(), "acme", usage.MetricLogBytes); !equalMaps(got, map[string]float64{"vision/a": 21, "nlp/b": 1}) {
		t.Errorf("acme's log bytes series: %v", got)
	}
}

func snapshot(a *usage.Accountant, f func(usage.Usage) int64) map[string]int64 {
	out := map[string]int64{}
	for _, u := range a.Snapshot() {
		if n := f(u); n != 0 {
			out[u.Tenant+"/"+u.Team+"/"+u.Namespace] = n
		}
	}
	return out
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fakeTraces accepts all but tooOld spans of each push.
type fakeTraces struct {
	tooOld int
	err    error
}

func (f fakeTraces) Push(_ context.Context, rss []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	n := 0
	for _, rs := range rss {
		n += len(rs.Spans)
	}
	return tracestore.PushResult{Accepted: n - f.tooOld, TooOld: f.tooOld}, f.err
}

func TestSpansCountedAsAccepted(t *testing.T) {
	rss := []tracestore.ResourceSpans{
		{Labels: labels.FromStrings("team", "vision"), Spans: make([]traceentry.Span, 6)},
		{Labels: labels.FromStrings("team", "nlp"), Spans: make([]traceentry.Span, 2)},
	}
	ctx := tenant.With(context.Background(), "acme")
	for _, tc := range []struct {
		name string
		p    fakeTraces
		want map[string]int64
	}{
		{"all accepted", fakeTraces{}, map[string]int64{"acme/vision/": 6, "acme/nlp/": 2}},
		{"some too old", fakeTraces{tooOld: 4}, map[string]int64{"acme/vision/": 3, "acme/nlp/": 1}},
		{"store failed", fakeTraces{err: errors.New("disk")}, map[string]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acct := usage.New(usage.Options{})
			_, _ = acct.TracePusher(tc.p).Push(ctx, rss)
			if got := snapshot(acct, func(u usage.Usage) int64 { return u.Spans }); !equalCounts(got, tc.want) {
				t.Errorf("spans %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNilAccountantWrapsNothing(t *testing.T) {
	var a *usage.Accountant
	p := fakeTraces{}
	if got := a.TracePusher(p); got != p {
		t.Error("nil accountant wrapped the trace pusher")
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestStartStopFlushesPeriodically(t *testing.T) {
	sub := openSub(t, t.TempDir())
	defer sub.Close()
	acct := usage.New(usage.Options{Sink: sub.Metrics(), Interval: 20 * time.Millisecond})
	acct.Start()
	appendSeries(t, acct.Appendable(sub.Metrics()), "acme", map[string]int{"vision": 2}, true)
	deadline := time.Now().Add(5 * time.Second)
	for len(usageSeries(t, sub.Metrics(), "acme", usage.MetricSamples)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no flush within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := acct.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := acct.Stop(context.Background()); err != nil { // idempotent
		t.Fatal(err)
	}
	if got := usageSeries(t, sub.Metrics(), "acme", usage.MetricSamples); got["vision/ns-vision"] != 2 {
		t.Errorf("samples %v, want vision/ns-vision 2", got)
	}
}

func TestFlushIsMarked(t *testing.T) {
	var seen []bool
	sink := markSink{seen: &seen}
	acct := usage.New(usage.Options{Sink: sink})
	appendSeries(t, acct.Appendable(nopAppendable{}), "acme", map[string]int{"vision": 1}, true)
	if err := acct.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !seen[0] {
		t.Errorf("flush contexts marked %v, want [true]", seen)
	}
	if usage.Flushing(context.Background()) {
		t.Error("a plain context is marked as a flush")
	}
}

// markSink records whether each appender's context is a flush's.
type markSink struct{ seen *[]bool }

func (m markSink) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	*m.seen = append(*m.seen, usage.Flushing(ctx))
	return nopAppender{}
}
