package querier

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// tailNode is an ingester as a tail sees it: its status and the tail
// route over the broadcaster of the lines it applies.
type tailNode struct {
	bc    *api.LogBroadcaster
	srv   *httptest.Server
	ready atomic.Bool
}

func newTailNode(t *testing.T, partitions ...int32) *tailNode {
	t.Helper()
	n := &tailNode{bc: api.NewLogBroadcaster()}
	n.ready.Store(true)
	mux := http.NewServeMux()
	for p, h := range readapi.Handlers(nil, nil, func() readapi.Status {
		return readapi.Status{Partitions: partitions, TotalPartitions: total, Ready: n.ready.Load()}
	}, nil) {
		mux.Handle(p, h)
	}
	for p, h := range readapi.TailHandlers(n.bc, nil) {
		mux.Handle(p, h)
	}
	n.srv = httptest.NewServer(mux)
	t.Cleanup(func() { n.bc.Close(); n.srv.Close() })
	return n
}

// stop takes the ingester away: not ready, its streams cut.
func (n *tailNode) stop() {
	n.ready.Store(false)
	n.bc.Close()
	n.srv.CloseClientConnections()
}

// rankOf returns a stream's labels of partition p: job="train", rank=....
func rankOf(p int32, skip int) labels.Labels {
	for i := 0; ; i++ {
		ls := labels.FromStrings("job", "train", "rank", strconv.Itoa(i))
		if record.PartitionOf(ls, total) == p {
			if skip == 0 {
				return ls
			}
			skip--
		}
	}
}

type tailed struct{ stored, dropped []logstore.PushStream }

// TestTailFansOutToIngesters: a tail streams each partition from one of
// its ingesters, only that partition's streams, and moves a partition to
// its replica when its ingester goes away.
func TestTailFansOutToIngesters(t *testing.T) {
	a, b, replica := newTailNode(t, 0), newTailNode(t, 1), newTailNode(t, 0)
	q, err := New(Options{Ingesters: []string{a.srv.URL, b.srv.URL, replica.srv.URL}, TotalPartitions: total, StatusInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q.Start(ctx)
	defer q.Stop()

	got := make(chan tailed, 64)
	tctx, stopTail := context.WithCancel(ctx)
	tailErr := make(chan error, 1)
	go func() {
		tailErr <- q.Logs().Tail(tctx, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", "train")},
			func(stored, dropped []logstore.PushStream) error {
				got <- tailed{stored, dropped}
				return nil
			})
	}()
	p0, p1 := rankOf(0, 0), rankOf(1, 0)
	line := func(ls labels.Labels, s string) []logstore.PushStream {
		return []logstore.PushStream{{Labels: ls, Entries: []logentry.Entry{{Timestamp: time.Now().UnixNano(), Line: s}}}}
	}
	// await publishes probes to n until one comes back: its stream is up.
	await := func(n *tailNode, ls labels.Labels) {
		t.Helper()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case g := <-got:
				for _, s := range g.stored {
					if labels.Equal(s.Labels, ls) && s.Entries[0].Line == "probe" {
						return
					}
				}
			case <-tick.C:
				n.bc.Publish(line(ls, "probe"))
			case <-ctx.Done():
				t.Fatalf("no probe of %s came back", ls)
			}
		}
	}
	await(a, p0)
	await(b, p1)
	drain(got)

	// The replica is not streamed; a's stream carries partition 0 only.
	replica.bc.Publish(line(p0, "from the replica"))
	a.bc.Publish(append(line(p0, "p0 from a"), line(p1, "p1 wrongly on a")...))
	b.bc.Publish(line(p1, "p1 from b"))
	b.bc.Publish([]logstore.PushStream{{Labels: labels.FromStrings("job", "other", "rank", "0"), Entries: []logentry.Entry{{Timestamp: 1, Line: "not selected"}}}})
	want := map[string]bool{p0.String() + " p0 from a": true, p1.String() + " p1 from b": true}
	deadline := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case g := <-got:
			for _, s := range g.stored {
				for _, e := range s.Entries {
					if e.Line == "probe" { // a late one of await's
						continue
					}
					k := s.Labels.String() + " " + e.Line
					if !want[k] {
						t.Fatalf("tail sent %s", k)
					}
					delete(want, k)
				}
			}
		case <-deadline:
			t.Fatalf("not sent: %v", want)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, g := range drain(got) {
		for _, s := range g.stored {
			for _, e := range s.Entries {
				if e.Line != "probe" {
					t.Fatalf("tail sent more: %s %q", s.Labels, e.Line)
				}
			}
		}
	}

	// a goes away: partition 0 moves to the replica.
	a.stop()
	await(replica, p0)
	if n := q.m.tailStreams.Load(); n != 2 {
		t.Errorf("tail streams after the failover: %d, want 2", n)
	}

	stopTail()
	if err := <-tailErr; err != nil {
		t.Fatalf("Tail returned %v after its ctx ended", err)
	}
	if n := q.m.tailStreams.Load(); n != 0 {
		t.Errorf("tail streams after the end: %d", n)
	}
}

func drain(c chan tailed) []tailed {
	var out []tailed
	for {
		select {
		case g := <-c:
			out = append(out, g)
		default:
			return out
		}
	}
}
