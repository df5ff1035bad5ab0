package readapi

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/storage/logstore"
)

// frameDropped carries the entries the node could not deliver to a tail:
// a logs record whose entries hold timestamps only.
const frameDropped = 'x'

// Tailer is what the tail route streams: the log lines a node stores as it
// stores them (api.LogBroadcaster.Tail over what an ingester applies). It
// calls fn with the stored entries of the streams ms select and the entries
// it dropped, until ctx ends (nil) or it or fn fails.
type Tailer interface {
	Tail(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error
}

// TailHandlers returns the tail route over t, for api.Options.Handlers
// beside Handlers'.
func TailHandlers(t Tailer, logger *slog.Logger) map[string]http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &server{log: logger}
	return map[string]http.Handler{"POST " + PathTail: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.tail(t, w, r) })}
}

// tail streams the lines stored from now on of the requested streams and
// partitions, a frame per batch, flushed at once, until the client goes
// away; an error frame ends it when the source fails. Request's Start,
// End, Name, LineFilters and Direction are not used.
func (s *server) tail(t Tailer, w http.ResponseWriter, r *http.Request) {
	q, err := decodeRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	// The stream lives as long as the querier's tail connection; the
	// server's read timeout bounds requests, not this.
	_ = rc.SetReadDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := record.NewEncoder()
	var frame []byte
	send := func(typ byte, ss []logstore.PushStream) error {
		for len(ss) > 0 {
			n, size := 0, 0
			for n < len(ss) && (n == 0 || size < frameBytes) {
				for _, e := range ss[n].Entries {
					size += len(e.Line) + 16
				}
				n++
			}
			frame = enc.AppendLogs(frame[:0], ss[:n])
			if err := writeFrame(bw, typ, frame); err != nil {
				return err
			}
			ss = ss[n:]
		}
		return nil
	}
	err = t.Tail(r.Context(), q.ms, func(stored, dropped []logstore.PushStream) error {
		if err := send(frameData, q.only(stored)); err != nil {
			return err
		}
		if err := send(frameDropped, q.only(dropped)); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		s.end(bw, "internal_tail_failed", err)
	}
}

// only returns the streams of the requested partitions (ss itself when
// every partition is asked for).
func (q *query) only(ss []logstore.PushStream) []logstore.PushStream {
	if q.want == nil {
		return ss
	}
	var out []logstore.PushStream
	for _, s := range ss {
		if q.keep(s.Labels) {
			out = append(out, s)
		}
	}
	return out
}

// Tail streams the lines the node stores from now on, of the streams and
// partitions req selects, calling fn for each frame (stored entries, or
// dropped ones with timestamps only), until ctx ends (nil), fn fails, or
// the stream ends: ErrTruncated when the node went away, its error when it
// failed. The client's http.Client must not have a Timeout (it would cut
// the stream).
func (c *Client) Tail(ctx context.Context, req Request, fn func(stored, dropped []logstore.PushStream) error) error {
	resp, err := c.do(ctx, http.MethodPost, PathTail, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = c.readTail(bufio.NewReaderSize(resp.Body, 64<<10), fn)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// readTail decodes a tail answer's frames into fn until it ends.
func (c *Client) readTail(r *bufio.Reader, fn func(stored, dropped []logstore.PushStream) error) error {
	var buf []byte
	for {
		typ, payload, err := readFrame(r, buf)
		if err != nil {
			return fmt.Errorf("tail %s: %w", c.base, err)
		}
		buf = payload
		switch typ {
		case frameData, frameDropped:
			rec, err := record.Decode(payload)
			if err != nil || rec.Kind != record.KindLogs {
				return fmt.Errorf("decode tail frame of %s: kind %d: %w", c.base, rec.Kind, err)
			}
			if typ == frameData {
				err = fn(rec.Streams, nil)
			} else {
				err = fn(nil, rec.Streams)
			}
			if err != nil {
				return err
			}
		case frameError:
			return fmt.Errorf("remote tail of %s failed: %s", c.base, payload)
		case frameEnd:
			return fmt.Errorf("tail %s: %w", c.base, ErrTruncated)
		default:
			return fmt.Errorf("unknown tail frame type %q from %s", typ, c.base)
		}
	}
}
