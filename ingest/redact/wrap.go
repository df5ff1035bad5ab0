package redact

import (
	"context"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest/loki"
	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

// The wrappers put a Redactor in front of what every ingest path writes
// to: the log pusher (Loki push and OTLP logs; in front of the tail
// broadcaster too, so tailing shows what is stored), the trace pusher and
// the metric appendable. Each redacts in place what it is handed, then
// passes it on. With a nil Redactor they return what they wrap.

// Labels returns ls with rules for t applied to every value but the
// metric name; ls itself when nothing changed.
func (r *Redactor) Labels(t Target, ls labels.Labels) labels.Labels {
	if !r.Applies(t) {
		return ls
	}
	var b *labels.Builder
	ls.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			return
		}
		if v, changed := r.String(t, l.Value); changed {
			if b == nil {
				b = labels.NewBuilder(ls)
			}
			b.Set(l.Name, v)
		}
	})
	if b == nil {
		return ls
	}
	return b.Labels()
}

// Streams redacts log streams in place: stream label values, lines and
// structured metadata values.
func (r *Redactor) Streams(streams []logstore.PushStream) {
	if r == nil {
		return
	}
	lines, meta := r.Applies(LogLines), r.Applies(StructuredMetadata)
	for i := range streams {
		st := &streams[i]
		st.Labels = r.Labels(LabelValues, st.Labels)
		if !lines && !meta {
			continue
		}
		for j := range st.Entries {
			e := &st.Entries[j]
			if lines {
				e.Line, _ = r.String(LogLines, e.Line)
			}
			if meta && !e.Metadata.IsEmpty() {
				e.Metadata = r.Labels(StructuredMetadata, e.Metadata)
			}
		}
	}
}

// Spans redacts trace batches in place: resource stream labels, and the
// string values of span, event, link, scope and resource attributes and
// status messages. Shared resources and scopes are redacted once.
func (r *Redactor) Spans(batch []tracestore.ResourceSpans) {
	if r == nil {
		return
	}
	attrs := r.Applies(SpanAttributes)
	seenRes := map[*traceentry.Resource]bool{}
	seenScope := map[*traceentry.InstrumentationScope]bool{}
	for i := range batch {
		rs := &batch[i]
		rs.Labels = r.Labels(LabelValues, rs.Labels)
		if !attrs {
			continue
		}
		for j := range rs.Spans {
			sp := &rs.Spans[j]
			r.attributes(sp.Attributes)
			sp.StatusMessage, _ = r.String(SpanAttributes, sp.StatusMessage)
			for k := range sp.Events {
				r.attributes(sp.Events[k].Attributes)
			}
			for k := range sp.Links {
				r.attributes(sp.Links[k].Attributes)
			}
			if res := sp.Resource; res != nil && !seenRes[res] {
				seenRes[res] = true
				r.attributes(res.Attributes)
			}
			if sc := sp.Scope; sc != nil && !seenScope[sc] {
				seenScope[sc] = true
				r.attributes(sc.Attributes)
			}
		}
	}
}

// attributes redacts string values in place, arrays and maps included.
func (r *Redactor) attributes(as traceentry.Attributes) {
	for i := range as {
		if v, changed := r.value(as[i].Value); changed {
			as[i].Value = v
		}
	}
}

// value returns v redacted and whether it changed.
func (r *Redactor) value(v traceentry.Value) (traceentry.Value, bool) {
	switch v.Type() {
	case traceentry.ValueString:
		s, changed := r.String(SpanAttributes, v.Str())
		if changed {
			return traceentry.StringValue(s), true
		}
	case traceentry.ValueArray:
		elems := v.Array()
		var out []traceentry.Value
		for i, e := range elems {
			if ne, changed := r.value(e); changed {
				if out == nil {
					out = append([]traceentry.Value(nil), elems...)
				}
				out[i] = ne
			}
		}
		if out != nil {
			return traceentry.ArrayValue(out...), true
		}
	case traceentry.ValueMap:
		kvs := v.Map()
		var out []traceentry.KeyValue
		for i, kv := range kvs {
			if nv, changed := r.value(kv.Value); changed {
				if out == nil {
					out = append([]traceentry.KeyValue(nil), kvs...)
				}
				out[i].Value = nv
			}
		}
		if out != nil {
			return traceentry.MapValue(out...), true
		}
	}
	return v, false
}

// LogPusher returns p behind the redactor.
func (r *Redactor) LogPusher(p loki.Pusher) loki.Pusher {
	if r == nil {
		return p
	}
	return logPusher{p: p, r: r}
}

type logPusher struct {
	p loki.Pusher
	r *Redactor
}

func (lp logPusher) Push(ctx context.Context, streams []logstore.PushStream) error {
	lp.r.Streams(streams)
	return lp.p.Push(ctx, streams)
}

// TracePusher returns p behind the redactor.
func (r *Redactor) TracePusher(p otlptraces.Pusher) otlptraces.Pusher {
	if r == nil || p == nil {
		return p
	}
	return tracePusher{p: p, r: r}
}

type tracePusher struct {
	p otlptraces.Pusher
	r *Redactor
}

func (tp tracePusher) Push(ctx context.Context, batch []tracestore.ResourceSpans) (tracestore.PushResult, error) {
	tp.r.Spans(batch)
	return tp.p.Push(ctx, batch)
}

// Appendable returns app behind the redactor: label values of series and
// of exemplars are redacted before they reach the appender. Without a
// label_values rule it returns app.
func (r *Redactor) Appendable(app storage.AppendableV2) storage.AppendableV2 {
	if !r.Applies(LabelValues) || app == nil {
		return app
	}
	return appendable{app: app, r: r}
}

type appendable struct {
	app storage.AppendableV2
	r   *Redactor
}

func (a appendable) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return &appender{AppenderV2: a.app.AppenderV2(ctx), r: a.r}
}

// appender redacts each Append's labels; Commit and Rollback pass through.
type appender struct {
	storage.AppenderV2
	r *Redactor
}

func (ap *appender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	ls = ap.r.Labels(LabelValues, ls)
	if len(opts.Exemplars) > 0 {
		var out []exemplar.Exemplar
		for i, e := range opts.Exemplars {
			if nl := ap.r.Labels(LabelValues, e.Labels); !labels.Equal(nl, e.Labels) {
				if out == nil {
					out = append([]exemplar.Exemplar(nil), opts.Exemplars...)
				}
				out[i].Labels = nl
			}
		}
		if out != nil {
			opts.Exemplars = out
		}
	}
	return ap.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}
