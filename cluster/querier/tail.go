package querier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/storage/logstore"
)

// tailRetry is how long a tail waits before planning partitions again that
// no ready ingester could stream.
const tailRetry = time.Second

// errNotReady ends a tail stream whose ingester stopped being ready.
var errNotReady = errors.New("ingester no longer ready")

// Tail implements api.LogTailer over the ingesters: every partition is
// streamed from one ready ingester that owns it (planned as reads are: an
// ingester that owns more of them first), which sends the lines it applies
// from the log. A stream that ends, or whose ingester stops being ready, is
// planned again at once on another replica, else every second until one
// is ready; lines applied while a partition had no stream are not sent (a
// gap, never a duplicate). fn is called from one goroutine per stream. Tail
// returns nil when ctx ends, and fails when the query is refused (a bad
// matcher), fn fails, or the partition count is not known yet.
func (l *Logs) Tail(ctx context.Context, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) error {
	q := l.q
	total := q.topo.totalPartitions()
	if total == 0 {
		return errors.New("querier: no ingester reported the partition count yet")
	}
	type ended struct {
		a     assignment
		err   error
		fnErr bool
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan ended, total) // at most one stream per partition
	running := 0
	defer func() {
		cancel()
		for ; running > 0; running-- {
			<-done
		}
	}()
	pending, avoid := all(total), map[*ingester]bool{}
	var warned string
	for {
		if len(pending) > 0 {
			plan, missing := q.topo.plan(total, pending, avoid)
			for _, a := range plan {
				running++
				go func() {
					err, fnErr := l.tailOne(ctx, a, total, ms, fn)
					done <- ended{a: a, err: err, fnErr: fnErr}
				}()
			}
			pending, avoid = missing, map[*ingester]bool{}
			if w := fmt.Sprint(missing); len(missing) > 0 && w != warned {
				q.logger.Warn("querier_tail_partitions_missing", "partitions", missing)
				warned = w
			}
		}
		var retry <-chan time.Time
		if len(pending) > 0 {
			retry = time.After(tailRetry)
		}
		select {
		case <-ctx.Done():
			return nil
		case e := <-done:
			running--
			if ctx.Err() != nil {
				return nil
			}
			if e.fnErr {
				return e.err
			}
			if errors.Is(e.err, readapi.ErrBadRequest) {
				return e.err
			}
			q.m.fanoutErrors.WithLabelValues(e.a.in.base).Inc()
			q.logger.Warn("querier_tail_stream_ended", "ingester", e.a.in.base, "partitions", e.a.partitions, "err", e.err)
			pending = append(pending, e.a.partitions...)
			avoid[e.a.in] = true // another replica first; this one again at the next retry
		case <-retry:
		}
	}
}

// tailOne streams a's partitions from a.in until ctx ends, the stream
// ends, or a.in stops being ready (a lost host may never close the
// connection; its status polls fail). fnErr reports that fn failed.
func (l *Logs) tailOne(ctx context.Context, a assignment, total int32, ms []*labels.Matcher, fn func(stored, dropped []logstore.PushStream) error) (err error, fnErr bool) {
	l.q.m.tailStreams.Add(1)
	defer l.q.m.tailStreams.Add(-1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(l.q.opts.StatusInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, ok := a.in.snapshot(); !ok {
					cancel(errNotReady)
					return
				}
			}
		}
	}()
	var failed error
	err = a.in.stream.Tail(ctx, request(0, 0, ms, a.partitions, total), func(stored, dropped []logstore.PushStream) error {
		if err := fn(stored, dropped); err != nil {
			failed = err
			return err
		}
		return nil
	})
	if failed != nil {
		return failed, true
	}
	if err == nil && errors.Is(context.Cause(ctx), errNotReady) {
		err = errNotReady
	}
	return err, false
}
