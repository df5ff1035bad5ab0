package readapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// TestTailStreamsPartitions: the tail route streams what is published
// after the request, only the requested partitions' streams that match,
// with a feed's dropped entries in their own frames, and ends with the
// source's error when it closes.
func TestTailStreamsPartitions(t *testing.T) {
	bc := api.NewLogBroadcaster()
	mux := http.NewServeMux()
	for p, h := range TailHandlers(bc, nil) {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, srv.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var mine, theirs []labels.Labels
	for i := 0; len(mine) < 3 || len(theirs) < 3; i++ {
		ls := labels.FromStrings("job", "train", "rank", fmt.Sprint(i))
		if record.PartitionOf(ls, total) == 2 {
			mine = append(mine, ls)
		} else {
			theirs = append(theirs, ls)
		}
	}
	type msg struct{ stored, dropped []logstore.PushStream }
	got := make(chan msg, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.Tail(ctx, Request{Matchers: job(), Partitions: []int32{2}, TotalPartitions: total}, func(stored, dropped []logstore.PushStream) error {
			got <- msg{stored, dropped}
			return nil
		})
	}()
	// Publish until the subscription is live (its first entry arrives).
	var first msg
	for first.stored == nil {
		bc.Publish([]logstore.PushStream{{Labels: mine[0], Entries: []logentry.Entry{{Timestamp: 1, Line: "probe"}}}})
		select {
		case first = <-got:
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no probe came back")
		}
	}
	for drained := false; !drained; {
		select {
		case <-got:
		case <-time.After(50 * time.Millisecond):
			drained = true
		}
	}
	var pub []logstore.PushStream
	for i, ls := range append(append([]labels.Labels{}, mine...), theirs...) {
		pub = append(pub, logstore.PushStream{Labels: ls, Entries: []logentry.Entry{{Timestamp: int64(10 + i), Line: "line " + ls.Get("rank")}}})
	}
	pub = append(pub, logstore.PushStream{Labels: labels.FromStrings("job", "eval", "rank", "0"), Entries: []logentry.Entry{{Timestamp: 5, Line: "other job"}}})
	bc.Publish(pub)
	m := <-got
	if len(m.stored) != len(mine) || len(m.dropped) != 0 {
		t.Fatalf("tail sent %+v", m)
	}
	for i, s := range m.stored {
		if !labels.Equal(s.Labels, mine[i]) || len(s.Entries) != 1 || s.Entries[0].Line != "line "+mine[i].Get("rank") || s.Entries[0].Timestamp != int64(10+i) {
			t.Fatalf("stream %d: %+v", i, s)
		}
	}

	// A burst beyond the feed's queue while nothing is taken: what does
	// not fit is dropped, reported with its timestamps.
	burst := logstore.PushStream{Labels: mine[1]}
	for i := range 10500 {
		burst.Entries = append(burst.Entries, logentry.Entry{Timestamp: int64(1000 + i), Line: "b"})
	}
	bc.Publish([]logstore.PushStream{burst})
	var stored, dropped int
	for stored+dropped < 10500 {
		select {
		case m := <-got:
			for _, s := range m.stored {
				stored += len(s.Entries)
			}
			for _, s := range m.dropped {
				for _, e := range s.Entries {
					if e.Line != "" || e.Timestamp < 1000 || !labels.Equal(s.Labels, mine[1]) {
						t.Fatalf("dropped entry %+v of %s", e, s.Labels)
					}
				}
				dropped += len(s.Entries)
			}
		case <-ctx.Done():
			t.Fatalf("stored %d dropped %d of 10500", stored, dropped)
		}
	}
	// The feed queues at most 10,000 entries, less those of the last
	// message if it has not released them yet.
	if stored > 10000 || stored < 9900 || dropped != 10500-stored {
		t.Errorf("stored %d, dropped %d; want about 10000 and the rest of 10500", stored, dropped)
	}

	bc.Close()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("Tail after the source closed: %v", err)
	}

	// A bad matcher is the request's fault.
	err := c.Tail(ctx, Request{Matchers: []Matcher{{Type: 9, Name: "a"}}}, func(_, _ []logstore.PushStream) error { return nil })
	if !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bad matcher: %v", err)
	}
}

func FuzzTailFrames(f *testing.F) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	enc := record.NewEncoder()
	_ = writeFrame(w, frameData, enc.AppendLogs(nil, []logstore.PushStream{{Labels: labels.FromStrings("a", "b"), Entries: []logentry.Entry{{Timestamp: 1, Line: "x"}}}}))
	_ = writeFrame(w, frameDropped, enc.AppendLogs(nil, []logstore.PushStream{{Labels: labels.FromStrings("a", "b"), Entries: []logentry.Entry{{Timestamp: 2}}}}))
	_ = writeFrame(w, frameError, []byte("boom"))
	_ = w.Flush()
	f.Add(b.Bytes())
	f.Add([]byte{frameEnd, 0})
	f.Add([]byte{frameDropped, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, body []byte) {
		c := NewClient("http://fuzz", nil)
		err := c.readTail(bufio.NewReader(bytes.NewReader(body)), func(stored, dropped []logstore.PushStream) error {
			if (stored == nil) == (dropped == nil) && len(stored)+len(dropped) > 0 {
				t.Fatalf("a frame gave stored %d and dropped %d", len(stored), len(dropped))
			}
			return nil
		})
		if err == nil {
			t.Fatal("a tail answer ended without an error")
		}
	})
}
