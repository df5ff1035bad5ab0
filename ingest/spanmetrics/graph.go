package spanmetrics

import (
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/traceentry"
)

// graph pairs client and server spans into service-graph edges: a client
// (or producer) span and the server (or consumer) span whose parent it is.
// Either side may arrive first, from another service, in another request;
// the first waits in pending for Options.GraphWait. Guarded by
// Processor.mu.
type graph struct {
	max     int
	pending map[edgeKey]*side
	order   []edgeKey // insertion order, for expiry (may hold stale keys)
}

type edgeKey struct {
	trace traceentry.TraceID
	span  traceentry.SpanID // the client span's ID
}

// side is one half of an edge.
type side struct {
	client    bool
	service   string
	seconds   float64
	failed    bool
	messaging bool
	end       int64
	at        time.Time
}

func newGraph(max int) *graph {
	return &graph{max: max, pending: map[edgeKey]*side{}}
}

// expire drops waiting sides older than before, and the oldest beyond max.
func (g *graph) expire(before time.Time) {
	for len(g.order) > 0 {
		k := g.order[0]
		s, ok := g.pending[k]
		if ok && !s.at.Before(before) && len(g.pending) <= g.max {
			break
		}
		if ok && (s.at.Before(before) || len(g.pending) > g.max) {
			delete(g.pending, k)
		}
		g.order = g.order[1:]
	}
	if cap(g.order) > 4*len(g.order)+1024 {
		g.order = append([]edgeKey(nil), g.order...)
	}
}

// observeEdge pairs a client or server span; p.mu held.
func (p *Processor) observeEdge(service string, sp *traceentry.Span, now time.Time) {
	g := p.graph
	var k edgeKey
	me := &side{service: service, seconds: float64(sp.DurationNanos()) / 1e9,
		failed: sp.StatusCode == traceentry.StatusError, end: sp.EndUnixNano, at: now}
	switch sp.Kind {
	case traceentry.SpanKindClient, traceentry.SpanKindProducer:
		k = edgeKey{sp.TraceID, sp.SpanID}
		me.client = true
		me.messaging = sp.Kind == traceentry.SpanKindProducer
	case traceentry.SpanKindServer, traceentry.SpanKindConsumer:
		if sp.ParentSpanID.IsZero() {
			return
		}
		k = edgeKey{sp.TraceID, sp.ParentSpanID}
		me.messaging = sp.Kind == traceentry.SpanKindConsumer
	default:
		return
	}
	other, ok := g.pending[k]
	if !ok || other.client == me.client {
		g.pending[k] = me
		g.order = append(g.order, k)
		if len(g.pending) > g.max {
			g.expire(time.Time{})
		}
		return
	}
	delete(g.pending, k)
	client, server := other, me
	if me.client {
		client, server = me, other
	}
	p.edge(sp.TraceID, client, server, now)
}

// edge counts one client → server request; p.mu held.
func (p *Processor) edge(trace traceentry.TraceID, client, server *side, now time.Time) {
	h := xxhash.New()
	_, _ = h.WriteString("graph\xff" + client.service + "\xff" + server.service)
	if client.messaging || server.messaging {
		_, _ = h.WriteString("\xffm")
	}
	key := h.Sum64()
	s := p.series[key]
	if s == nil {
		if len(p.series) >= p.opts.MaxSeries {
			p.dropped++
			return
		}
		pairs := []string{LabelClient, client.service, LabelServer, server.service}
		if client.messaging || server.messaging {
			pairs = append(pairs, LabelConn, "messaging_system")
		}
		s = &series{kind: graphSeries, base: labels.FromStrings(pairs...),
			hist: []*histogram{newHistogram(len(p.opts.GraphBuckets)), newHistogram(len(p.opts.GraphBuckets))}}
		p.series[key] = s
	}
	s.calls++
	if client.failed || server.failed {
		s.failed++
	}
	ex := traceExemplar(trace, server.seconds, server.end)
	s.exCalls = ex
	s.hist[0].observe(p.opts.GraphBuckets, server.seconds, ex)
	s.hist[1].observe(p.opts.GraphBuckets, client.seconds, traceExemplar(trace, client.seconds, client.end))
	s.last = now
}
