package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

const (
	// maxTailDelay is Loki's bound on delay_for.
	maxTailDelay = 5 * time.Second
	// tailWriteTimeout bounds one WebSocket message write: a client that
	// reads nothing for this long is disconnected. Until then its queue
	// fills and further entries are dropped (dropped_entries).
	tailWriteTimeout = 10 * time.Second
)

// tail serves /loki/api/v1/tail over WebSocket. It subscribes to the
// broadcaster, sends the newest limit entries since start (the backfill,
// read before the handshake completes so that nothing pushed after it is
// missed), then pushes what the push handlers store: each stored stream
// whose labels match the selector is run through the query's pipeline and
// sent as {"streams":[...]} with at most limit entries per message. With
// delay_for, entries are held until they are delay_for old (by their
// timestamp) and sent in timestamp order. Entries a slow client cannot
// take are dropped (beyond TailMaxQueued) and listed in the next message's
// "dropped_entries"; ingest never waits for a client. An entry that is both
// in the backfill and pushed while it was read is sent once. The
// connection, and its goroutines, end when the client goes away or the
// broadcaster is closed.
func (a *lokiAPI) tail(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("query")
	expr, err := logql.ParseExpr(q)
	if err != nil {
		a.queryError(w, r, err)
		return
	}
	sel, ok := expr.(*logql.LogSelectorExpr)
	if !ok {
		a.badRequest(w, fmt.Errorf("%w: tail needs a log query, not a metric query", errBadParam))
		return
	}
	limit, err := a.limitParam(r, a.opts.DefaultLimit)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	var delay time.Duration
	if v := r.FormValue("delay_for"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxTailDelay {
			a.badRequest(w, fmt.Errorf("%w: delay_for can't be greater than %d", errBadParam, int(maxTailDelay.Seconds())))
			return
		}
		delay = time.Duration(n) * time.Second
	}
	now := a.now().UnixNano()
	from, err := lokiTime(r.FormValue("start"), now-int64(time.Hour))
	if err != nil {
		a.badRequest(w, err)
		return
	}

	bc := a.opts.Broadcaster
	sub := bc.subscribe(r.Context(), sel.Matchers, a.opts.TailMaxQueued, a.opts.TailMaxDropped)
	if sub == nil {
		lokiError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer bc.unsubscribe(sub)
	// Entries stored elsewhere (a querier's ingesters) come from the
	// Tailer into the same queue as pushed ones; it is started before the
	// backfill is read.
	var tailDone chan struct{}
	var tailErr error
	if a.opts.Tailer != nil {
		tctx, stop := context.WithCancel(r.Context())
		tailDone = make(chan struct{})
		go func() {
			defer close(tailDone)
			tailErr = a.opts.Tailer.Tail(tctx, sel.Matchers, func(stored, dropped []logstore.PushStream) error {
				sub.offer(stored)
				sub.offerDropped(dropped)
				return nil
			})
		}()
		defer func() { stop(); <-tailDone }()
	}
	t := &tailConn{query: q, limit: limit, seen: map[string]struct{}{}}
	t.eng = logql.NewEngine(&t.src, logql.EngineOptions{MaxEntriesLimit: a.opts.TailMaxQueued})
	var backfill []logql.StreamResult
	if from <= now {
		res, err := a.engine.Query(r.Context(), logql.QueryParams{Query: q, Start: from, End: now + 1, Direction: logql.Backward, Limit: limit})
		if err != nil {
			a.queryError(w, r, err)
			return
		}
		backfill = res.Streams
		for _, s := range backfill {
			for _, e := range s.Entries {
				t.seen[tailKey(s.Labels, e)] = struct{}{}
				t.seenMax = max(t.seenMax, e.Timestamp)
			}
		}
	}

	// A tail connection lives for as long as its client wants; the
	// listener's read timeout bounds requests, not WebSocket sessions.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	// The cross-site guard (crosssite.go) has judged the handshake's
	// origin already, trusted origins included; the library's own check
	// would refuse those.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept wrote the error response
	}
	defer c.CloseNow()
	t.c = c
	// The connection ends when the client goes away or the broadcaster
	// closes (shutdown); a write in progress is cut short then.
	ctx, cancel := context.WithCancel(c.CloseRead(r.Context()))
	defer cancel()
	go func() {
		select {
		case <-bc.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if len(backfill) > 0 {
		if err := t.write(ctx, backfill, nil); err != nil {
			return
		}
	}

	var pending []tailBatch // taken, held by delay_for
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-bc.done:
				c.CloseNow() // shutdown: no close handshake to wait for
			default:
				c.Close(websocket.StatusNormalClosure, "")
			}
			return
		case <-tailDone:
			if ctx.Err() == nil {
				reason := "tail source ended"
				if tailErr != nil {
					a.log.Warn("tail_source_failed", "err", tailErr)
					reason = tailErr.Error()
				}
				c.Close(websocket.StatusInternalError, truncateReason(reason))
			}
			return
		case <-sub.notify:
		case <-timer.C:
		}
		batches, dropped := sub.take()
		pending = append(pending, batches...)
		ready := pending
		pending = nil
		var next int64
		if delay > 0 {
			ready, pending, next = splitDue(ready, a.now().Add(-delay).UnixNano())
		}
		if len(ready) > 0 || len(dropped) > 0 {
			err := t.send(ctx, ready, dropped)
			sub.release(countEntries(ready))
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, errTailWrite) {
					code := websocket.StatusInternalError
					if errors.Is(err, logql.ErrQueryMemory) || errors.Is(err, logql.ErrTemplateLimit) || errors.Is(err, logql.ErrBytesReadLimit) {
						code = websocket.StatusPolicyViolation // the query's limit, not weft's failure
					}
					c.Close(code, truncateReason(err.Error()))
				}
				return
			}
		}
		if len(pending) > 0 {
			timer.Reset(max(time.Duration(next+int64(delay)-a.now().UnixNano()), time.Millisecond))
		}
	}
}

// tailConn is the state of one tail connection; used by its goroutine only.
type tailConn struct {
	c     *websocket.Conn
	query string
	limit int
	src   tailSource
	eng   *logql.Engine
	// seen holds the backfill's entries (after the pipeline), up to
	// seenMax: a pushed entry among them is not sent again.
	seen    map[string]struct{}
	seenMax int64
}

var errTailWrite = errors.New("tail write")

// send runs ready (entries of matching streams) through the query's
// pipeline and writes the result, with dropped, in messages of at most
// limit entries.
func (t *tailConn) send(ctx context.Context, ready []tailBatch, dropped []droppedEntry) error {
	var out []logql.StreamResult
	if n := countEntries(ready); n > 0 {
		lo, hi := int64(1<<63-1), int64(-1<<63)
		for _, b := range ready {
			for _, e := range b.entries {
				lo, hi = min(lo, e.Timestamp), max(hi, e.Timestamp)
			}
		}
		t.src.set(ready)
		res, err := t.eng.Query(ctx, logql.QueryParams{Query: t.query, Start: lo, End: hi + 1, Direction: logql.Forward, Limit: n})
		t.src.set(nil)
		if err != nil {
			return fmt.Errorf("tail pipeline: %w", err)
		}
		out = res.Streams
		if len(t.seen) > 0 {
			out = t.unseen(out)
		}
	}
	return t.write(ctx, out, dropped)
}

// unseen drops the entries that the backfill sent.
func (t *tailConn) unseen(ss []logql.StreamResult) []logql.StreamResult {
	out := ss[:0]
	for _, s := range ss {
		es := s.Entries[:0]
		for _, e := range s.Entries {
			if e.Timestamp <= t.seenMax {
				if _, ok := t.seen[tailKey(s.Labels, e)]; ok {
					continue
				}
			}
			es = append(es, e)
		}
		if len(es) > 0 {
			s.Entries = es
			out = append(out, s)
		}
	}
	return out
}

// write sends ss in messages of at most limit entries (ascending within
// each stream); dropped goes with the first.
func (t *tailConn) write(ctx context.Context, ss []logql.StreamResult, dropped []droppedEntry) error {
	for first := true; first || len(ss) > 0; first = false {
		var msg []logql.StreamResult
		n := 0
		for len(ss) > 0 && n < t.limit {
			s := ss[0]
			k := min(len(s.Entries), t.limit-n)
			part := s
			part.Entries = s.Entries[:k]
			msg = append(msg, part)
			n += k
			if k == len(s.Entries) {
				ss = ss[1:]
			} else {
				s.Entries = s.Entries[k:]
				ss[0] = s
			}
		}
		if len(msg) == 0 && len(dropped) == 0 {
			return nil
		}
		b := appendStreams([]byte(`{"streams":`), msg, logql.Forward, false)
		if len(dropped) > 0 {
			b = appendDropped(append(b, `,"dropped_entries":`...), dropped)
			dropped = nil
		}
		b = append(b, '}')
		wctx, cancel := context.WithTimeout(ctx, tailWriteTimeout)
		err := t.c.Write(wctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: %w", errTailWrite, err)
		}
	}
	return nil
}

// appendDropped writes Loki's dropped_entries:
// [{"labels":{...},"timestamp":"<unix ns>"},...].
func appendDropped(b []byte, ds []droppedEntry) []byte {
	b = append(b, '[')
	for i, d := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"labels":`...)
		b = appendLabelMap(b, d.labels)
		b = append(b, `,"timestamp":"`...)
		b = strconv.AppendInt(b, d.ts, 10)
		b = append(b, `"}`...)
	}
	return append(b, ']')
}

func tailKey(ls labels.Labels, e logql.ResultEntry) string {
	return ls.String() + "\x00" + strconv.FormatInt(e.Timestamp, 10) + "\x00" + e.Line
}

func countEntries(bs []tailBatch) int {
	n := 0
	for _, b := range bs {
		n += len(b.entries)
	}
	return n
}

// splitDue splits bs into the entries at or before due and the rest; next
// is the earliest timestamp of the rest.
func splitDue(bs []tailBatch, due int64) (ready, held []tailBatch, next int64) {
	next = 1<<63 - 1
	for _, b := range bs {
		var r, h tailBatch
		r.labels, h.labels = b.labels, b.labels
		for _, e := range b.entries {
			if e.Timestamp <= due {
				r.entries = append(r.entries, e)
			} else {
				h.entries = append(h.entries, e)
				next = min(next, e.Timestamp)
			}
		}
		if len(r.entries) > 0 {
			ready = append(ready, r)
		}
		if len(h.entries) > 0 {
			held = append(held, h)
		}
	}
	return ready, held, next
}

// tailSource is the LogQL Source of one tail connection: the batches being
// sent, merged per stream and sorted by time, so that the engine applies
// the query's pipeline to pushed entries exactly as to stored ones.
type tailSource struct {
	streams []tailBatch
}

func (s *tailSource) set(bs []tailBatch) {
	s.streams = s.streams[:0]
	if len(bs) == 0 {
		return
	}
	idx := map[string]int{}
	for _, b := range bs {
		k := b.labels.String()
		i, ok := idx[k]
		if !ok {
			i = len(s.streams)
			idx[k] = i
			s.streams = append(s.streams, tailBatch{labels: b.labels})
		}
		s.streams[i].entries = append(s.streams[i].entries, b.entries...)
	}
	for _, st := range s.streams {
		slices.SortStableFunc(st.entries, func(x, y logql.Entry) int { return cmp.Compare(x.Timestamp, y.Timestamp) })
	}
}

func (s *tailSource) Select(_ context.Context, p logql.SelectParams) (logql.EntryIterator, error) {
	return &tailIter{streams: s.streams, p: p, e: -1}, nil
}

// tailIter yields the entries of tailSource within the select's range.
type tailIter struct {
	streams []tailBatch
	p       logql.SelectParams
	s, e    int
}

func (it *tailIter) Next() bool {
	for it.s < len(it.streams) {
		it.e++
		es := it.streams[it.s].entries
		for it.e < len(es) && (es[it.e].Timestamp < it.p.Start || es[it.e].Timestamp >= it.p.End) {
			it.e++
		}
		if it.e < len(es) {
			return true
		}
		it.s, it.e = it.s+1, -1
	}
	return false
}

func (it *tailIter) At() (labels.Labels, logql.Entry) {
	return it.streams[it.s].labels, it.streams[it.s].entries[it.e]
}
func (it *tailIter) Err() error   { return nil }
func (it *tailIter) Close() error { return nil }

// truncateReason keeps a close reason within WebSocket's 123-byte limit.
func truncateReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
