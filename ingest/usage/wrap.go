package usage

import (
	"context"
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// Appendable returns app behind the accounting of samples: every sample a
// commit stores is counted under its series' team and namespace.
func (a *Accountant) Appendable(app promstorage.AppendableV2) promstorage.AppendableV2 {
	if a == nil || app == nil {
		return app
	}
	return appendable{app: app, a: a}
}

type appendable struct {
	app promstorage.AppendableV2
	a   *Accountant
}

func (ap appendable) AppenderV2(ctx context.Context) promstorage.AppenderV2 {
	return &appender{AppenderV2: ap.app.AppenderV2(ctx), a: ap.a, id: tenantOf(ctx)}
}

// appender counts the samples of one commit.
type appender struct {
	promstorage.AppenderV2
	a  *Accountant
	id string
	b  batch
}

func (ap *appender) Append(ref promstorage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts promstorage.AOptions) (promstorage.SeriesRef, error) {
	r, err := ap.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
	if err == nil || partial(err) {
		ap.b.add(ls, 1)
	}
	return r, err
}

// partial reports whether err says the sample was stored and only an
// exemplar was not (out of line: the error target escapes to the heap).
func partial(err error) bool {
	var pe *promstorage.AppendPartialError
	return errors.As(err, &pe)
}

// CopiesLabels: the appender keeps nothing of the labels it is given (the
// batch copies its keys), so it copies when what it wraps does; the
// remote-write decoder then lends it labels in a reused buffer.
func (ap *appender) CopiesLabels() bool { return ingest.CopiesLabels(ap.AppenderV2) }

func (ap *appender) AppendExemplars(ref promstorage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (promstorage.SeriesRef, error) {
	if x, ok := ap.AppenderV2.(interface {
		AppendExemplars(promstorage.SeriesRef, labels.Labels, []exemplar.Exemplar) (promstorage.SeriesRef, error)
	}); ok {
		return x.AppendExemplars(ref, ls, es)
	}
	return ref, nil
}

func (ap *appender) Commit() error {
	if err := ap.AppenderV2.Commit(); err != nil {
		return err
	}
	ap.a.commit(ap.id, kindSamples, &ap.b)
	return nil
}

func (ap *appender) Rollback() error {
	ap.b = batch{}
	return ap.AppenderV2.Rollback()
}

// LogBytes is a log entry's size as Loki counts it against its ingestion
// rate: the line plus the names and values of its structured metadata.
func LogBytes(line string, metadata labels.Labels) int {
	n := len(line)
	metadata.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) })
	return n
}

// LogPusher returns p behind the accounting of log bytes (LogBytes).
func (a *Accountant) LogPusher(p loki.Pusher) loki.Pusher {
	if a == nil || p == nil {
		return p
	}
	return logPusher{p: p, a: a}
}

type logPusher struct {
	p loki.Pusher
	a *Accountant
}

func (lp logPusher) Push(ctx context.Context, streams []logstore.PushStream) error {
	if err := lp.p.Push(ctx, streams); err != nil {
		return err
	}
	var b batch
	for _, s := range streams {
		n := 0
		for _, e := range s.Entries {
			n += LogBytes(e.Line, e.Metadata)
		}
		b.add(s.Labels, int64(n))
	}
	lp.a.commit(tenantOf(ctx), kindLogBytes, &b)
	return nil
}

// TracePusher returns p behind the accounting of spans.
func (a *Accountant) TracePusher(p otlptraces.Pusher) otlptraces.Pusher {
	if a == nil || p == nil {
		return p
	}
	return tracePusher{p: p, a: a}
}

type tracePusher struct {
	p otlptraces.Pusher
	a *Accountant
}

// Push counts the spans the store accepted. When it dropped some as too old
// (PushResult.TooOld), which resource they were of is not reported: the
// accepted count is spread over the resources in proportion to their spans.
func (tp tracePusher) Push(ctx context.Context, rss []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	res, err := tp.p.Push(ctx, rss)
	if err != nil || res.Accepted <= 0 {
		return res, err
	}
	total := 0
	for _, rs := range rss {
		total += len(rs.Spans)
	}
	var b batch
	left := res.Accepted
	for i, rs := range rss {
		n := len(rs.Spans)
		if res.Accepted < total {
			n = len(rs.Spans) * res.Accepted / total
			if i == len(rss)-1 {
				n = left
			}
		}
		n = min(n, left)
		left -= n
		b.add(rs.Labels, int64(n))
	}
	tp.a.commit(tenantOf(ctx), kindSpans, &b)
	return res, nil
}
