package api

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// LogBroadcaster hands the log entries that the push handlers (Loki push,
// OTLP logs over HTTP and gRPC) have stored to the open tail connections
// whose stream selector matches. Publishing never waits for a tail client:
// each connection has a bounded queue, and what does not fit is dropped and
// reported to that client in dropped_entries. Safe for concurrent use; it
// owns no goroutines. Close ends the tail connections (at shutdown).
type LogBroadcaster struct {
	mu     sync.RWMutex
	subs   map[*tailSub]struct{}
	closed bool
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// NewLogBroadcaster returns a broadcaster without subscribers.
func NewLogBroadcaster() *LogBroadcaster {
	return &LogBroadcaster{subs: map[*tailSub]struct{}{}, done: make(chan struct{})}
}

// Close ends every tail connection (closing its WebSocket at once) and
// waits until their handlers have returned; later tail requests answer
// 503. Publishing goes on working (there is no one to publish to).
// Idempotent. Call it when the HTTP server shuts down
// (http.Server.RegisterOnShutdown): Shutdown does not wait for WebSocket
// connections.
func (b *LogBroadcaster) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// Pusher returns p wrapped so that every successful Push is published to
// b. A failed Push publishes nothing (nothing of it is stored).
func (b *LogBroadcaster) Pusher(p loki.Pusher) loki.Pusher {
	return broadcastPusher{p: p, b: b}
}

type broadcastPusher struct {
	p loki.Pusher
	b *LogBroadcaster
}

func (bp broadcastPusher) Push(ctx context.Context, streams []logstore.PushStream) error {
	if err := bp.p.Push(ctx, streams); err != nil {
		return err
	}
	tid, _ := tenant.WriteID(ctx) // the push succeeded: it named one tenant
	bp.b.publish(tid, streams)
	return nil
}

// Publish hands stored streams to the matching subscribers. It does not
// retain streams' slices beyond the subscribers' queues and never modifies
// them; the entries must not be modified afterwards. It does not block on
// a subscriber beyond a short critical section.
func (b *LogBroadcaster) Publish(streams []logstore.PushStream) { b.publish("", streams) }

// publish is Publish for the streams of tenant tid ("" for none: package
// tenant); only subscribers that may read tid's streams get them.
func (b *LogBroadcaster) publish(tid string, streams []logstore.PushStream) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(b.subs) == 0 {
		return
	}
	for s := range b.subs {
		if s.tenant == nil || s.tenant.Matches(tid) {
			s.offer(streams)
		}
	}
}

// subscribe registers a tail connection for the streams that match ms.
// maxQueued bounds its queued entries, maxDropped the dropped entries it
// remembers until the next take. It returns nil after Close; otherwise the
// caller must unsubscribe when its connection ends, and end it when done
// (see Close) is closed. A ctx restricted to tenants (package tenant)
// receives only their streams.
func (b *LogBroadcaster) subscribe(ctx context.Context, ms []*labels.Matcher, maxQueued, maxDropped int) *tailSub {
	s := &tailSub{ms: ms, notify: make(chan struct{}, 1), maxQueued: maxQueued, maxDropped: maxDropped}
	if set, ok := tenant.FromContext(ctx); ok {
		s.tenant = set.Matcher()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.subs[s] = struct{}{}
	b.wg.Add(1)
	return s
}

func (b *LogBroadcaster) unsubscribe(s *tailSub) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
	b.wg.Done()
}

// LogTailer streams the log entries that are stored where this process
// does not see them being pushed (LokiOptions.Tailer: a scale-out
// querier's ingesters). Tail calls fn with the newly stored entries of the
// streams that ms select and with the entries that could not be delivered
// (dropped: their streams and timestamps, lines empty), until ctx ends
// (nil) or it or fn fails. fn may be called from several goroutines at
// once; it must not retain the slices' entries beyond the call unless it
// treats them as read-only.
type LogTailer interface {
	Tail(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error
}

// Bounds of one Tail feed: entries waiting for fn, and dropped entries
// remembered until its next call.
const (
	feedMaxQueued  = 10000
	feedMaxDropped = 1000
)

// ErrBroadcasterClosed is Tail's answer after Close.
var ErrBroadcasterClosed = errors.New("log broadcaster closed: shutting down")

// Tail implements LogTailer over what is published to b: a scale-out
// ingester's internal read API serves it to the queriers' tail
// connections. At most 10,000 entries wait for fn (a slow fn never slows
// ingest); the rest reach it as dropped. It returns ErrBroadcasterClosed
// once b is closed.
func (b *LogBroadcaster) Tail(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error {
	sub := b.subscribe(ctx, ms, feedMaxQueued, feedMaxDropped)
	if sub == nil {
		return ErrBroadcasterClosed
	}
	defer b.unsubscribe(sub)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.done:
			return ErrBroadcasterClosed
		case <-sub.notify:
		}
		batches, dropped := sub.take()
		stored := make([]logstore.PushStream, len(batches))
		for i, tb := range batches {
			stored[i] = logstore.PushStream{Labels: tb.labels, Entries: tb.entries}
		}
		err := fn(stored, droppedStreams(dropped))
		sub.release(countEntries(batches))
		if err != nil {
			return err
		}
	}
}

// droppedStreams is ds as streams of entries without lines, one stream
// piece per entry (the order of ds is kept).
func droppedStreams(ds []droppedEntry) []logstore.PushStream {
	if len(ds) == 0 {
		return nil
	}
	out := make([]logstore.PushStream, len(ds))
	for i, d := range ds {
		out[i] = logstore.PushStream{Labels: d.labels, Entries: []logentry.Entry{{Timestamp: d.ts}}}
	}
	return out
}

// tailBatch is some entries of one stream, ascending or not.
type tailBatch struct {
	labels  labels.Labels
	entries []logentry.Entry
}

// droppedEntry is an entry a slow tail client did not get.
type droppedEntry struct {
	labels labels.Labels
	ts     int64
}

// tailSub is one tail connection's queue. offer runs on pushing
// goroutines, take and release on the connection's goroutine.
type tailSub struct {
	ms         []*labels.Matcher
	tenant     *labels.Matcher // the tenants it may read; nil: all
	notify     chan struct{}   // a token after each offer that queued or dropped something
	maxQueued  int
	maxDropped int

	mu      sync.Mutex
	queue   []tailBatch
	held    int // entries queued or taken but not yet released
	dropped []droppedEntry
}

func (s *tailSub) matches(ls labels.Labels) bool {
	for _, m := range s.ms {
		if !m.Matches(ls.Get(m.Name)) {
			return false
		}
	}
	return true
}

// offer queues the entries of the matching streams that fit and records
// the rest as dropped.
func (s *tailSub) offer(streams []logstore.PushStream) {
	changed := false
	for _, ps := range streams {
		if len(ps.Entries) == 0 || !s.matches(ps.Labels) {
			continue
		}
		s.mu.Lock()
		n := min(len(ps.Entries), max(s.maxQueued-s.held, 0))
		if n > 0 {
			s.queue = append(s.queue, tailBatch{labels: ps.Labels, entries: ps.Entries[:n:n]})
			s.held += n
		}
		s.drop(ps.Labels, ps.Entries[n:])
		s.mu.Unlock()
		changed = true
	}
	if changed {
		s.wake()
	}
}

// offerDropped records entries that another process dropped before they
// reached this one (a LogTailer's dropped).
func (s *tailSub) offerDropped(streams []logstore.PushStream) {
	if len(streams) == 0 {
		return
	}
	s.mu.Lock()
	for _, ps := range streams {
		s.drop(ps.Labels, ps.Entries)
	}
	s.mu.Unlock()
	s.wake()
}

// drop records es as dropped, up to maxDropped; s.mu is held.
func (s *tailSub) drop(ls labels.Labels, es []logentry.Entry) {
	for _, e := range es {
		if len(s.dropped) >= s.maxDropped {
			return
		}
		s.dropped = append(s.dropped, droppedEntry{labels: ls, ts: e.Timestamp})
	}
}

func (s *tailSub) wake() {
	select {
	case s.notify <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// take returns the queued batches and the dropped entries since the last
// take. The taken entries still count against maxQueued until release.
func (s *tailSub) take() ([]tailBatch, []droppedEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, d := s.queue, s.dropped
	s.queue, s.dropped = nil, nil
	return q, d
}

// release gives back room for n entries taken earlier (sent or discarded).
func (s *tailSub) release(n int) {
	s.mu.Lock()
	s.held -= n
	s.mu.Unlock()
}
