package scenario

import (
	"math"

	"github.com/weftdb/weft/internal/gputelemetry"
)

// Label is one name/value pair.
type Label = gputelemetry.Label

// MetricType is a series' Prometheus type (its family's).
type MetricType uint8

// Metric types.
const (
	Gauge MetricType = iota
	Counter
	Histogram // a classic histogram's _bucket, _sum or _count series
)

// Series is one metric series: labels sorted by name (__name__ included)
// and samples in time order (ms). A series that ends gets a Prometheus
// staleness marker (StaleNaN) one interval after its last sample.
type Series struct {
	Labels []Label
	Type   MetricType
	T      []int64
	V      []float64
}

func (s *Series) add(t int64, v float64) {
	s.T = append(s.T, t)
	s.V = append(s.V, v)
}

// Transport is how a log stream reaches weft.
type Transport uint8

// Log transports.
const (
	Loki Transport = iota // Loki push: stream labels, line, structured metadata
	OTLP                  // OTLP/HTTP logs: resource attributes, body, attributes, trace context
)

// Stream is one log stream. Loki streams carry Labels; OTLP streams carry
// resource attributes (weft maps the workload-context ones to labels).
// Entries are in time order.
type Stream struct {
	Via      Transport
	Labels   []Label // Loki stream labels, sorted
	Resource []Label // OTLP resource attributes
	Scope    string  // OTLP instrumentation scope
	Entries  []Entry
}

// Entry is one log line. Meta is Loki structured metadata (trace_id
// included when the line belongs to a trace) or, over OTLP, the record's
// attributes; TraceID and SpanID are set on OTLP records of a trace.
type Entry struct {
	T        int64 // unix ns
	Line     string
	Severity string // OTLP severity text (INFO, WARN, ERROR); empty for Loki
	Meta     []Label
	TraceID  TraceID
	SpanID   SpanID
}

// TraceID and SpanID are W3C trace-context identifiers.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

// SpanKind is OTLP's span kind.
type SpanKind uint8

// Span kinds (OTLP's numbering).
const (
	KindInternal SpanKind = 1
	KindServer   SpanKind = 2
	KindClient   SpanKind = 3
)

// Span is one finished span. Resource indexes Data.Resources.
type Span struct {
	Trace    TraceID
	ID       SpanID
	Parent   SpanID // zero for a root
	Name     string
	Kind     SpanKind
	Start    int64 // unix ns
	End      int64
	Error    bool
	Message  string // status message of an error
	Attrs    []Label
	Resource int
}

// Data is one generated scenario: every series, log stream and span, and
// its ground truth. It is immutable once Generate returns and safe for
// concurrent reads.
type Data struct {
	Name      string
	Options   Options
	Truth     GroundTruth
	Series    []*Series
	Streams   []*Stream
	Resources [][]Label // trace resources (service.name, host.name, ...)
	Spans     []Span    // ordered by end time
}

// Counts is how much a scenario holds: what a replay must deliver.
type Counts struct {
	Series       int `json:"series"`        // distinct label sets (a restarted workload's series once)
	Samples      int `json:"samples"`       // staleness markers excluded
	StaleMarkers int `json:"stale_markers"` // sent, but never counted by a query
	Streams      int `json:"streams"`       // distinct label sets (OTLP: resources)
	Lines        int `json:"lines"`
	LokiLines    int `json:"loki_lines"`
	OTLPLines    int `json:"otlp_lines"`
	Traces       int `json:"traces"`
	Spans        int `json:"spans"`
}

// Counts totals d.
func (d *Data) Counts() Counts {
	var c Counts
	distinct := map[string]struct{}{}
	for _, s := range d.Series {
		distinct[labelKey(s.Labels)] = struct{}{}
		for _, v := range s.V {
			if math.Float64bits(v) == staleNaN {
				c.StaleMarkers++
			} else {
				c.Samples++
			}
		}
	}
	c.Series = len(distinct)
	streams := map[string]struct{}{}
	for _, s := range d.Streams {
		key := labelKey(s.Labels)
		if s.Via == OTLP {
			key = "otlp\xff" + labelKey(s.Resource)
		}
		streams[key] = struct{}{}
		c.Lines += len(s.Entries)
		if s.Via == OTLP {
			c.OTLPLines += len(s.Entries)
		} else {
			c.LokiLines += len(s.Entries)
		}
	}
	c.Streams = len(streams)
	c.Spans = len(d.Spans)
	traces := map[TraceID]struct{}{}
	for i := range d.Spans {
		traces[d.Spans[i].Trace] = struct{}{}
	}
	c.Traces = len(traces)
	return c
}

// staleNaN is Prometheus' staleness marker (model/value.StaleNaN).
const staleNaN = 0x7ff0000000000002

// SeriesNamed returns the series whose __name__ is name and whose labels
// include every pair of match, in generation order.
func (d *Data) SeriesNamed(name string, match ...Label) []*Series {
	var out []*Series
	for _, s := range d.Series {
		if get(s.Labels, "__name__") != name {
			continue
		}
		ok := true
		for _, m := range match {
			if get(s.Labels, m.Name) != m.Value {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func get(ls []Label, name string) string {
	for _, l := range ls {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

// labelKey is a label set's identity.
func labelKey(ls []Label) string {
	n := 0
	for _, l := range ls {
		n += len(l.Name) + len(l.Value) + 2
	}
	b := make([]byte, 0, n)
	for _, l := range ls {
		b = append(b, l.Name...)
		b = append(b, 0xff)
		b = append(b, l.Value...)
		b = append(b, 0xff)
	}
	return string(b)
}
