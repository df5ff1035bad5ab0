package readapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

const total = 4

// openSubstrate opens a store in a temporary directory, without
// background work, closed at the end of the test.
func openSubstrate(t *testing.T) *storage.Substrate {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.RetentionInterval = -1
	opts.CheckpointInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// serve starts the API over a fresh log store holding nStreams streams of
// nEntries each; it returns a client and the streams.
func serve(t *testing.T, nStreams, nEntries int) (*Client, []logstore.PushStream) {
	t.Helper()
	sub := openSubstrate(t)
	base := time.Now().Add(-time.Hour).UnixNano()
	var streams []logstore.PushStream
	for i := range nStreams {
		ps := logstore.PushStream{Labels: labels.FromStrings("job", "train", "rank", fmt.Sprint(i))}
		for j := range nEntries {
			ps.Entries = append(ps.Entries, logentry.Entry{Timestamp: base + int64(j)*1e6, Line: fmt.Sprintf("rank %d step %d", i, j),
				Metadata: labels.FromStrings("trace_id", fmt.Sprint(j))})
		}
		streams = append(streams, ps)
	}
	if err := sub.Logs().Push(context.Background(), streams); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	status := func() Status { return Status{Partitions: []int32{0, 1, 2, 3}, TotalPartitions: total, Ready: true} }
	for p, h := range Handlers(sub.Logs(), sub.Traces(), status, nil) {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return NewClient(srv.URL, srv.Client()), streams
}

func job() []Matcher {
	return EncodeMatchers([]*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")})
}

// TestSelectByPartition: a select for some partitions returns exactly the
// entries of the streams that hash to them, in order, across frames.
func TestSelectByPartition(t *testing.T) {
	c, streams := serve(t, 12, 3000) // ~30 KB per stream: several frames
	ctx := context.Background()
	want := map[string]int{}
	for _, s := range streams {
		if p := record.PartitionOf(s.Labels, total); p == 1 || p == 3 {
			want[s.Labels.String()] = len(s.Entries)
		}
	}
	it, err := c.Select(ctx, Request{Start: 0, End: time.Now().UnixNano(), Matchers: job(), Partitions: []int32{1, 3}, TotalPartitions: total})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[string]int{}
	last := map[string]int64{}
	for it.Next() {
		ls, e := it.At()
		k := ls.String()
		if e.Timestamp < last[k] {
			t.Fatalf("stream %s goes back in time", k)
		}
		last[k] = e.Timestamp
		if e.Metadata.Get("trace_id") == "" {
			t.Fatalf("entry lost its structured metadata: %+v", e)
		}
		got[k]++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}

	totals, err := c.Totals(ctx, Request{Start: 0, End: time.Now().UnixNano(), Matchers: job(), Partitions: []int32{1, 3}, TotalPartitions: total})
	if err != nil {
		t.Fatal(err)
	}
	if len(totals) != len(want) {
		t.Fatalf("totals of %d streams, want %d", len(totals), len(want))
	}
	for _, tt := range totals {
		if int(tt.Stats.Entries) != want[tt.Labels.String()] || tt.Stats.Bytes == 0 {
			t.Fatalf("totals %v: %+v", tt.Labels, tt.Stats)
		}
	}
	vals, err := c.LabelValues(ctx, Request{Start: 0, End: time.Now().UnixNano(), Name: "rank", Matchers: job()})
	if err != nil || len(vals) != 12 {
		t.Fatalf("values %v, %v", vals, err)
	}
	names, err := c.LabelNames(ctx, Request{Start: 0, End: time.Now().UnixNano()})
	if err != nil || fmt.Sprint(names) != "[job rank]" {
		t.Fatalf("names %v, %v", names, err)
	}
	ss, err := c.Series(ctx, Request{Start: 0, End: time.Now().UnixNano(), Matchers: job(), Partitions: []int32{1, 3}, TotalPartitions: total})
	if err != nil || len(ss) != len(want) {
		t.Fatalf("series %v, %v", ss, err)
	}
	st, err := c.Status(ctx)
	if err != nil || !st.Ready || st.TotalPartitions != total {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestBadRequest(t *testing.T) {
	c, _ := serve(t, 1, 1)
	_, err := c.Select(context.Background(), Request{Matchers: []Matcher{{Type: labels.MatchRegexp, Name: "job", Value: "("}}})
	if !errors.Is(err, ErrBadRequest) {
		t.Fatalf("Select with a bad regexp = %v, want ErrBadRequest", err)
	}
}

// TestTruncatedAnswer: an answer cut before its end frame is an error, not
// a short answer.
func TestTruncatedAnswer(t *testing.T) {
	var full bytes.Buffer
	w := bufio.NewWriter(&full)
	rec := record.NewEncoder().AppendLogs(nil, []logstore.PushStream{{Labels: labels.FromStrings("a", "b"), Entries: []logentry.Entry{{Timestamp: 1, Line: "x"}}}})
	_ = writeFrame(w, frameData, rec)
	_ = writeFrame(w, frameEnd, nil)
	_ = w.Flush()
	count := func(b []byte) (int, error) {
		it := &frameIterator{body: io.NopCloser(bytes.NewReader(b)), r: bufio.NewReader(bytes.NewReader(b))}
		n := 0
		for it.Next() {
			n++
		}
		return n, it.Err()
	}
	if n, err := count(full.Bytes()); n != 1 || err != nil {
		t.Fatalf("full answer: %d entries, %v", n, err)
	}
	if _, err := count(full.Bytes()[:full.Len()-2]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut answer: %v, want ErrTruncated", err)
	}
}

// FuzzFrames: the client's frame decoder never panics on a body.
func FuzzFrames(f *testing.F) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	_ = writeFrame(w, frameData, record.NewEncoder().AppendLogs(nil, []logstore.PushStream{{Labels: labels.FromStrings("a", "b"), Entries: []logentry.Entry{{Timestamp: 1, Line: "x"}}}}))
	_ = writeFrame(w, frameError, []byte("boom"))
	_ = writeFrame(w, frameEnd, nil)
	_ = w.Flush()
	f.Add(b.Bytes())
	f.Add([]byte{frameEnd, 0})
	f.Add([]byte{frameData, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, body []byte) {
		it := &frameIterator{body: io.NopCloser(bytes.NewReader(body)), r: bufio.NewReader(bytes.NewReader(body))}
		for it.Next() {
			_, _ = it.At()
		}
		_ = it.Err()
	})
}
