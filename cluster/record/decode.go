package record

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/ingest/otlptraces"
	"github.com/weftdb/weft/storage/chunkenc"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/tracestore"
)

// decoder reads one record. Every count is checked against the bytes left
// (each counted item takes at least one byte), so no allocation exceeds the
// input's size.
type decoder struct {
	b    []byte
	syms []string
	sb   labels.ScratchBuilder
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least min bytes each.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("%s %d exceeds the %d bytes left", what, n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("short %s", what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) f64(what string) float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("short %s", what)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *decoder) sym(what string) string {
	r := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if r >= uint64(len(d.syms)) {
		d.fail("%s refers to symbol %d of %d", what, r, len(d.syms))
		return ""
	}
	return d.syms[r]
}

func (d *decoder) labels(what string) labels.Labels {
	n := d.count(what+" count", 2)
	d.sb.Reset()
	for range n {
		name := d.sym(what + " name")
		value := d.sym(what + " value")
		if d.err != nil {
			return labels.EmptyLabels()
		}
		d.sb.Add(name, value)
	}
	if d.err != nil {
		return labels.EmptyLabels()
	}
	d.sb.Sort()
	return d.sb.Labels()
}

// Decode decodes one record. Its strings are copies: the record does not
// refer to b.
func Decode(b []byte) (Record, error) {
	var rec Record
	if len(b) < 3 || b[0] != magic {
		return rec, fmt.Errorf("%w: no record header", ErrCorrupt)
	}
	if b[1] != version {
		return rec, fmt.Errorf("%w: version %d, this weft reads %d", ErrCorrupt, b[1], version)
	}
	rec.Kind = Kind(b[2])
	d := &decoder{b: b[3:], sb: labels.NewScratchBuilder(16)}
	nsyms := d.count("symbol count", 1)
	d.syms = make([]string, 0, nsyms)
	for range nsyms {
		n := d.uvarint("symbol length")
		if d.err == nil && n > uint64(len(d.b)) {
			d.fail("symbol of %d bytes exceeds the %d bytes left", n, len(d.b))
		}
		if d.err != nil {
			return Record{}, d.err
		}
		d.syms = append(d.syms, string(d.b[:n]))
		d.b = d.b[n:]
	}
	switch rec.Kind {
	case KindMetrics:
		rec.Series = d.metrics()
	case KindLogs:
		rec.Streams = d.logs()
	case KindTraces:
		rec.Resources = d.traces()
	default:
		d.fail("unknown kind %d", rec.Kind)
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the body", len(d.b))
	}
	if d.err != nil {
		return Record{}, d.err
	}
	return rec, nil
}

func (d *decoder) metrics() []Series {
	n := d.count("series count", 6)
	out := make([]Series, 0, n)
	for range n {
		var s Series
		s.Labels = d.labels("series labels")
		s.FamilyName = d.sym("family name")
		s.Metadata = metadata.Metadata{Type: model.MetricType(d.sym("metadata type")), Unit: d.sym("metadata unit"), Help: d.sym("metadata help")}
		ns := d.count("sample count", 2)
		if d.err != nil {
			return nil
		}
		s.Samples = make([]Sample, 0, ns)
		prevT := int64(0)
		for range ns {
			smp := d.sample(prevT)
			if d.err != nil {
				return nil
			}
			prevT = smp.T
			s.Samples = append(s.Samples, smp)
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) sample(prevT int64) Sample {
	var smp Sample
	flags := d.byte1("sample flags")
	if flags&^flagsKnown != 0 || flags&3 == 3 {
		d.fail("unknown sample flags %#x", flags)
		return smp
	}
	smp.T = prevT + d.varint("sample timestamp")
	if flags&flagST != 0 {
		smp.ST = smp.T - d.varint("start timestamp")
	}
	smp.RejectOOO = flags&flagRejectOOO != 0
	switch flags & 3 {
	case valueFloat:
		smp.V = d.f64("sample value")
	case valueHistogram:
		if d.err != nil {
			return smp
		}
		hs, tail, err := chunkenc.DecodeHistograms(nil, d.b)
		if err != nil || len(hs) != 1 {
			d.fail("bad histogram: %v", err)
			return smp
		}
		smp.H, d.b = hs[0], tail
	case valueFHistogram:
		if d.err != nil {
			return smp
		}
		hs, tail, err := chunkenc.DecodeFloatHistograms(nil, d.b)
		if err != nil || len(hs) != 1 {
			d.fail("bad float histogram: %v", err)
			return smp
		}
		smp.FH, d.b = hs[0], tail
	}
	if flags&flagExemplars != 0 {
		n := d.count("exemplar count", 11)
		smp.Exemplars = make([]exemplar.Exemplar, 0, n)
		for range n {
			ex := exemplar.Exemplar{Labels: d.labels("exemplar labels")}
			ex.Ts = d.varint("exemplar timestamp")
			ex.Value = d.f64("exemplar value")
			switch d.byte1("exemplar has_ts") {
			case 0:
			case 1:
				ex.HasTs = true
			default:
				d.fail("bad exemplar has_ts")
			}
			if d.err != nil {
				return smp
			}
			smp.Exemplars = append(smp.Exemplars, ex)
		}
	}
	return smp
}

func (d *decoder) logs() []logstore.PushStream {
	n := d.count("stream count", 2)
	out := make([]logstore.PushStream, 0, n)
	for range n {
		ps := logstore.PushStream{Labels: d.labels("stream labels")}
		ne := d.count("entry count", 3)
		if d.err != nil {
			return nil
		}
		ps.Entries = make([]logentry.Entry, 0, ne)
		prevT := int64(0)
		for range ne {
			t := prevT + d.varint("entry timestamp")
			prevT = t
			l := d.uvarint("line length")
			if d.err == nil && l > uint64(len(d.b)) {
				d.fail("line of %d bytes exceeds the %d bytes left", l, len(d.b))
			}
			if d.err != nil {
				return nil
			}
			line := string(d.b[:l])
			d.b = d.b[l:]
			md := d.labels("structured metadata")
			if d.err != nil {
				return nil
			}
			ps.Entries = append(ps.Entries, logentry.Entry{Timestamp: t, Line: line, Metadata: md})
		}
		out = append(out, ps)
	}
	return out
}

func (d *decoder) traces() []tracestore.ResourceSpans {
	n := d.count("resource count", 2)
	out := make([]tracestore.ResourceSpans, 0, n)
	for range n {
		r := tracestore.ResourceSpans{Labels: d.labels("resource labels")}
		l := d.uvarint("spans length")
		if d.err == nil && l > uint64(len(d.b)) {
			d.fail("spans of %d bytes exceed the %d bytes left", l, len(d.b))
		}
		if d.err != nil {
			return nil
		}
		spans, err := otlptraces.UnmarshalSpans(d.b[:l])
		if err != nil {
			d.fail("resource %s: %v", r.Labels, err)
			return nil
		}
		d.b = d.b[l:]
		if len(spans) == 0 {
			d.fail("resource %s without spans", r.Labels)
			return nil
		}
		r.Spans = spans
		out = append(out, r)
	}
	return out
}
