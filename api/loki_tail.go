package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/weftdb/weft/query/logql"
)

// maxTailDelay is Loki's bound on delay_for.
const maxTailDelay = 5 * time.Second

// tail serves /loki/api/v1/tail over WebSocket: it sends the entries since
// start (at most limit), then polls every TailInterval for newer entries
// until the client goes away. Each message is {"streams":[...]} as in a
// query result. Entries arrive at most once: the poll resumes after the
// newest timestamp sent, and entries at that very timestamp are compared
// with those already sent.
func (a *lokiAPI) tail(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("query")
	if _, err := logql.ParseExpr(q); err != nil {
		a.queryError(w, r, err)
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
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept wrote the error response
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	sentAt := map[string]bool{} // entries sent at timestamp from-1
	first := true
	tick := time.NewTicker(a.opts.TailInterval)
	defer tick.Stop()
	for {
		to := a.now().Add(-delay).UnixNano() + 1
		if to > from {
			p := logql.QueryParams{Query: q, Start: from, End: to, Direction: logql.Forward, Limit: limit}
			if !first {
				p.Limit = 0 // engine default (its max)
			}
			res, err := a.engine.Query(ctx, p)
			if err != nil {
				if ctx.Err() == nil {
					c.Close(websocket.StatusInternalError, truncateReason(err.Error()))
				}
				return
			}
			var newest int64 = from - 1
			nextSent := map[string]bool{}
			var out []logql.StreamResult
			for _, s := range res.Streams {
				sr := logql.StreamResult{Labels: s.Labels, StreamLabels: s.StreamLabels}
				for _, e := range s.Entries {
					key := s.Labels.String() + "\x00" + e.Line
					if e.Timestamp == from && sentAt[key] {
						continue
					}
					sr.Entries = append(sr.Entries, e)
					if e.Timestamp > newest {
						newest, nextSent = e.Timestamp, map[string]bool{}
					}
					if e.Timestamp == newest {
						nextSent[key] = true
					}
				}
				if len(sr.Entries) > 0 {
					out = append(out, sr)
				}
			}
			if len(out) > 0 {
				msg := append(appendStreams([]byte(`{"streams":`), out, logql.Forward, false), '}')
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := c.Write(wctx, websocket.MessageText, msg)
				cancel()
				if err != nil {
					return
				}
				if newest == from {
					for k := range nextSent {
						sentAt[k] = true
					}
				} else {
					from, sentAt = newest, nextSent
				}
			}
			first = false
		}
		select {
		case <-ctx.Done():
			c.Close(websocket.StatusNormalClosure, "")
			return
		case <-tick.C:
		}
	}
}

// truncateReason keeps a close reason within WebSocket's 123-byte limit.
func truncateReason(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
