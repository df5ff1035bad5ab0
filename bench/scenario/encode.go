package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// EncodeOptions size the requests. Zero fields take DefaultEncodeOptions'.
type EncodeOptions struct {
	// Lanes is the number of ordered send lanes per signal: a series or
	// stream always goes through the same lane, in time order.
	Lanes int
	// Block is the time window a round of requests covers: every lane sends
	// its series' samples (streams' lines) of one block before the next.
	Block time.Duration
	// SamplesPerRequest, LinesPerRequest and SpansPerRequest cap requests.
	SamplesPerRequest, LinesPerRequest, SpansPerRequest int
}

// DefaultEncodeOptions returns the defaults: 4 lanes, 10-minute blocks,
// 10,000 samples, 2,000 lines and 2,000 spans per request.
func DefaultEncodeOptions() EncodeOptions {
	return EncodeOptions{Lanes: 4, Block: 10 * time.Minute, SamplesPerRequest: 10_000, LinesPerRequest: 2_000, SpansPerRequest: 2_000}
}

func (o EncodeOptions) withDefaults() EncodeOptions {
	d := DefaultEncodeOptions()
	if o.Lanes <= 0 {
		o.Lanes = d.Lanes
	}
	if o.Block <= 0 {
		o.Block = d.Block
	}
	if o.SamplesPerRequest <= 0 {
		o.SamplesPerRequest = d.SamplesPerRequest
	}
	if o.LinesPerRequest <= 0 {
		o.LinesPerRequest = d.LinesPerRequest
	}
	if o.SpansPerRequest <= 0 {
		o.SpansPerRequest = d.SpansPerRequest
	}
	return o
}

// Request is one encoded request body.
type Request struct {
	Body []byte
	Lane int
	// Block is the time block (of EncodeOptions.Block) the request's data
	// falls in: Replay sends block by block, every lane of every signal,
	// so no lane runs ahead of another by more than a block (a receiver
	// refuses samples too far behind the newest it has).
	Block int
	// Items is what it carries: samples (staleness markers included),
	// lines or spans; Stale counts the staleness markers among samples.
	Items, Stale int
}

// Payloads are a scenario encoded for sending; the same Data and options
// give the same bytes. Immutable; safe to replay any number of times.
type Payloads struct {
	Lanes    int
	Metrics  []Request // Prometheus remote write 1.0, protobuf + snappy
	Loki     []Request // Loki push, JSON
	OTLPLogs []Request // OTLP/HTTP logs, protobuf + gzip
	Traces   []Request // OTLP/HTTP traces, protobuf + gzip
}

// Bytes is the total body size.
func (p *Payloads) Bytes() int {
	n := 0
	for _, rs := range [][]Request{p.Metrics, p.Loki, p.OTLPLogs, p.Traces} {
		for _, r := range rs {
			n += len(r.Body)
		}
	}
	return n
}

// laneOf puts a label set on a lane: the same labels, the same lane, so a
// series that ends and starts again (a restarted job) keeps its order.
func laneOf(ls []Label, lanes int) int {
	h := fnv.New32a()
	h.Write([]byte(labelKey(ls)))
	return int(h.Sum32() % uint32(lanes))
}

// Encode encodes d's metrics, logs and traces.
func (d *Data) Encode(o EncodeOptions) (*Payloads, error) {
	o = o.withDefaults()
	p := &Payloads{Lanes: o.Lanes}
	var err error
	if p.Metrics, err = d.encodeMetrics(o); err != nil {
		return nil, err
	}
	if p.Loki, p.OTLPLogs, err = d.encodeLogs(o); err != nil {
		return nil, err
	}
	if p.Traces, err = d.encodeTraces(o); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *Data) blocks(o EncodeOptions) (first, last, block int64) {
	return d.Options.Start.UnixMilli(), d.Options.Start.Add(d.Options.Duration).UnixMilli() + 2*d.Options.Interval.Milliseconds(), o.Block.Milliseconds()
}

// encodeMetrics: per lane, block by block, the lane's series' samples of
// the block, split into requests of at most SamplesPerRequest.
func (d *Data) encodeMetrics(o EncodeOptions) ([]Request, error) {
	lanes := make([][]int, o.Lanes)
	for i, s := range d.Series {
		l := laneOf(s.Labels, o.Lanes)
		lanes[l] = append(lanes[l], i)
	}
	labels := make([][]prompb.Label, len(d.Series))
	for i, s := range d.Series {
		labels[i] = make([]prompb.Label, len(s.Labels))
		for j, l := range s.Labels {
			labels[i][j] = prompb.Label{Name: l.Name, Value: l.Value}
		}
	}
	pos := make([]int, len(d.Series))
	first, last, block := d.blocks(o)
	var out []Request
	for lane, idx := range lanes {
		for b := first; b <= last; b += block {
			var req prompb.WriteRequest
			items, stales := 0, 0
			// One backing array per request for every series' samples.
			buf := make([]prompb.Sample, 0, o.SamplesPerRequest)
			flush := func() error {
				if items == 0 {
					return nil
				}
				raw, err := req.Marshal()
				if err != nil {
					return fmt.Errorf("marshal remote write: %w", err)
				}
				out = append(out, Request{Body: s2.EncodeSnappy(nil, raw), Lane: lane, Block: int((b - first) / block), Items: items, Stale: stales})
				req, items, stales = prompb.WriteRequest{}, 0, 0
				buf = make([]prompb.Sample, 0, o.SamplesPerRequest)
				return nil
			}
			for _, i := range idx {
				s := d.Series[i]
				for pos[i] < len(s.T) && s.T[pos[i]] < b+block {
					n := 0
					for pos[i]+n < len(s.T) && s.T[pos[i]+n] < b+block && items+n < o.SamplesPerRequest {
						n++
					}
					from := len(buf)
					for k := 0; k < n; k++ {
						v := s.V[pos[i]+k]
						buf = append(buf, prompb.Sample{Timestamp: s.T[pos[i]+k], Value: v})
						if math.Float64bits(v) == staleNaN {
							stales++
						}
					}
					ts := prompb.TimeSeries{Labels: labels[i], Samples: buf[from:len(buf):len(buf)]}
					req.Timeseries = append(req.Timeseries, ts)
					items += n
					pos[i] += n
					if items >= o.SamplesPerRequest {
						if err := flush(); err != nil {
							return nil, err
						}
					}
				}
			}
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	for i, s := range d.Series {
		if pos[i] != len(s.T) {
			return nil, fmt.Errorf("BUG: series %d: %d of %d samples fall outside the window", i, len(s.T)-pos[i], len(s.T))
		}
	}
	return out, nil
}

// lokiStream is one stream of a Loki JSON push body.
type lokiStream struct {
	Stream map[string]string `json:"stream"`
	Values [][]any           `json:"values"`
}

func (d *Data) encodeLogs(o EncodeOptions) (loki, otlp []Request, err error) {
	lanes := make([][]int, o.Lanes)
	for i, s := range d.Streams {
		key := s.Labels
		if s.Via == OTLP {
			key = s.Resource
		}
		l := laneOf(key, o.Lanes)
		lanes[l] = append(lanes[l], i)
	}
	pos := make([]int, len(d.Streams))
	first, last, block := d.blocks(o)
	for lane, idx := range lanes {
		for b := first; b <= last; b += block {
			end := (b + block) * 1e6
			var push []lokiStream
			lines := 0
			ld := plog.NewLogs()
			records := 0
			flushLoki := func() error {
				if lines == 0 {
					return nil
				}
				body, err := json.Marshal(map[string]any{"streams": push})
				if err != nil {
					return fmt.Errorf("encode loki push: %w", err)
				}
				loki = append(loki, Request{Body: body, Lane: lane, Block: int((b - first) / block), Items: lines})
				push, lines = nil, 0
				return nil
			}
			flushOTLP := func() error {
				if records == 0 {
					return nil
				}
				body, err := gzipped(plogotlp.NewExportRequestFromLogs(ld).MarshalProto())
				if err != nil {
					return fmt.Errorf("encode otlp logs: %w", err)
				}
				otlp = append(otlp, Request{Body: body, Lane: lane, Block: int((b - first) / block), Items: records})
				ld, records = plog.NewLogs(), 0
				return nil
			}
			for _, i := range idx {
				s := d.Streams[i]
				for pos[i] < len(s.Entries) && s.Entries[pos[i]].T < end {
					if s.Via == Loki {
						ls := lokiStream{Stream: map[string]string{}}
						for _, l := range s.Labels {
							ls.Stream[l.Name] = l.Value
						}
						for ; pos[i] < len(s.Entries) && s.Entries[pos[i]].T < end && lines < o.LinesPerRequest; pos[i]++ {
							e := s.Entries[pos[i]]
							v := []any{strconv.FormatInt(e.T, 10), e.Line}
							if len(e.Meta) > 0 {
								md := map[string]string{}
								for _, m := range e.Meta {
									md[m.Name] = m.Value
								}
								v = append(v, md)
							}
							ls.Values = append(ls.Values, v)
							lines++
						}
						push = append(push, ls)
						if lines >= o.LinesPerRequest {
							if err := flushLoki(); err != nil {
								return nil, nil, err
							}
						}
						continue
					}
					rl := ld.ResourceLogs().AppendEmpty()
					putAttrs(rl.Resource().Attributes(), s.Resource)
					sl := rl.ScopeLogs().AppendEmpty()
					sl.Scope().SetName(s.Scope)
					for ; pos[i] < len(s.Entries) && s.Entries[pos[i]].T < end && records < o.LinesPerRequest; pos[i]++ {
						e := s.Entries[pos[i]]
						lr := sl.LogRecords().AppendEmpty()
						lr.SetTimestamp(pcommon.Timestamp(e.T))
						lr.SetObservedTimestamp(pcommon.Timestamp(e.T + 3e6))
						lr.SetSeverityText(e.Severity)
						lr.SetSeverityNumber(severity(e.Severity))
						lr.Body().SetStr(e.Line)
						putAttrs(lr.Attributes(), e.Meta)
						if e.TraceID != (TraceID{}) {
							lr.SetTraceID(pcommon.TraceID(e.TraceID))
							lr.SetSpanID(pcommon.SpanID(e.SpanID))
						}
						records++
					}
					if records >= o.LinesPerRequest {
						if err := flushOTLP(); err != nil {
							return nil, nil, err
						}
					}
				}
			}
			if err := flushLoki(); err != nil {
				return nil, nil, err
			}
			if err := flushOTLP(); err != nil {
				return nil, nil, err
			}
		}
	}
	for i, s := range d.Streams {
		if pos[i] != len(s.Entries) {
			return nil, nil, fmt.Errorf("BUG: stream %d: %d of %d lines fall outside the window", i, len(s.Entries)-pos[i], len(s.Entries))
		}
	}
	return loki, otlp, nil
}

func severity(s string) plog.SeverityNumber {
	switch s {
	case "ERROR":
		return plog.SeverityNumberError
	case "WARN", "WARNING":
		return plog.SeverityNumberWarn
	case "DEBUG":
		return plog.SeverityNumberDebug
	}
	return plog.SeverityNumberInfo
}

func putAttrs(m pcommon.Map, ls []Label) {
	m.EnsureCapacity(len(ls))
	for _, l := range ls {
		m.PutStr(l.Name, l.Value)
	}
}

// encodeTraces batches spans in end-time order, block by block, grouped by
// resource, into requests of at most SpansPerRequest, dealt round-robin
// over the lanes.
func (d *Data) encodeTraces(o EncodeOptions) ([]Request, error) {
	var out []Request
	first, _, block := d.blocks(o)
	for i := 0; i < len(d.Spans); {
		blk := (d.Spans[i].End/1e6 - first) / block
		j := i
		for j < len(d.Spans) && j-i < o.SpansPerRequest && (d.Spans[j].End/1e6-first)/block == blk {
			j++
		}
		batch := d.Spans[i:j]
		i = j
		body, err := EncodeSpans(batch, d.Resources)
		if err != nil {
			return nil, err
		}
		out = append(out, Request{Body: body, Lane: len(out) % o.Lanes, Block: int(max(blk, 0)), Items: len(batch)})
	}
	return out, nil
}

// EncodeSpans encodes spans as one OTLP/HTTP traces request, protobuf and
// gzip, one ResourceSpans per resource (resources indexes Span.Resource)
// in order of first appearance.
func EncodeSpans(spans []Span, resources [][]Label) ([]byte, error) {
	td := ptrace.NewTraces()
	byRes := map[int]ptrace.SpanSlice{}
	for _, sp := range spans {
		ss, ok := byRes[sp.Resource]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			putAttrs(rs.Resource().Attributes(), resources[sp.Resource])
			scope := rs.ScopeSpans().AppendEmpty()
			scope.Scope().SetName("weft-bench/scenario")
			ss = scope.Spans()
			byRes[sp.Resource] = ss
		}
		s := ss.AppendEmpty()
		s.SetTraceID(pcommon.TraceID(sp.Trace))
		s.SetSpanID(pcommon.SpanID(sp.ID))
		if sp.Parent != (SpanID{}) {
			s.SetParentSpanID(pcommon.SpanID(sp.Parent))
		}
		s.SetName(sp.Name)
		s.SetKind(ptrace.SpanKind(sp.Kind))
		s.SetStartTimestamp(pcommon.Timestamp(sp.Start))
		s.SetEndTimestamp(pcommon.Timestamp(sp.End))
		putAttrs(s.Attributes(), sp.Attrs)
		if sp.Error {
			s.Status().SetCode(ptrace.StatusCodeError)
			s.Status().SetMessage(sp.Message)
		}
	}
	body, err := gzipped(ptraceotlp.NewExportRequestFromTraces(td).MarshalProto())
	if err != nil {
		return nil, fmt.Errorf("encode otlp traces: %w", err)
	}
	return body, nil
}

func gzipped(raw []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
