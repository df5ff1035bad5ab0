// Package record encodes and decodes the payloads of weft's WAL records
// (docs/format/wal.md). Encoders append to dst; decoders never panic on input
// and return an error for anything malformed.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/index/tenant"
)

// Type is the first byte of every record.
type Type uint8

// Record types.
const (
	TypeSeries          Type = 1
	TypeSamples         Type = 2
	TypeHistograms      Type = 3
	TypeFloatHistograms Type = 4
	TypeExemplars       Type = 5
	TypeMetadata        Type = 6
	TypeTombstones      Type = 7
	// TypeSamplesCompact is the float-samples record commits write (see
	// SampleEncoder); TypeSamples is still written by checkpoints and read
	// from WALs of earlier versions.
	TypeSamplesCompact Type = 8
)

// ErrCorrupt is wrapped by every decode error.
var ErrCorrupt = errors.New("corrupt record")

// Series is a new-series record entry.
type Series struct {
	Kind   uint8
	ID     uint64
	Labels labels.Labels
	// Tenant, when not "", is encoded as one more label of Labels,
	// tenant.LabelName, at its place in label order (the record is the
	// whole label set without it being built): the decoder returns it among
	// Labels. Labels must not have tenant.LabelName then.
	Tenant string
}

// Sample is a float sample entry.
type Sample struct {
	ID    uint64
	ST, T int64
	V     float64
}

// Histogram is an integer or float histogram entry (exactly one of H, FH set).
type Histogram struct {
	ID    uint64
	ST, T int64
	H     *histogram.Histogram
	FH    *histogram.FloatHistogram
}

// Exemplar is an exemplar entry.
type Exemplar struct {
	ID     uint64
	T      int64
	V      float64
	HasTs  bool
	Labels labels.Labels
}

// Metadata is a metadata entry for one metric family name.
type Metadata struct {
	Metric string
	Meta   metadata.Metadata
}

// Tombstone deletes [Mint, Maxt] of series ID.
type Tombstone struct {
	ID         uint64
	Mint, Maxt int64
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendLabels(b []byte, ls labels.Labels) []byte {
	b = binary.AppendUvarint(b, uint64(ls.Len()))
	ls.Range(func(l labels.Label) {
		b = appendString(b, l.Name)
		b = appendString(b, l.Value)
	})
	return b
}

func appendF64(b []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(v))
}

// AppendSeries encodes a series record.
func AppendSeries(b []byte, ss []Series) []byte {
	b = append(b, byte(TypeSeries))
	for _, s := range ss {
		b = append(b, s.Kind)
		b = binary.AppendUvarint(b, s.ID)
		if s.Tenant == "" {
			b = appendLabels(b, s.Labels)
			continue
		}
		b = binary.AppendUvarint(b, uint64(s.Labels.Len()+1))
		added := false
		s.Labels.Range(func(l labels.Label) {
			if !added && tenant.SortsAfter(l.Name) {
				b = appendString(appendString(b, tenant.LabelName), s.Tenant)
				added = true
			}
			b = appendString(appendString(b, l.Name), l.Value)
		})
		if !added {
			b = appendString(appendString(b, tenant.LabelName), s.Tenant)
		}
	}
	return b
}

// AppendSamples encodes a float samples record. Timestamps are stored as
// deltas from the first sample's (a scrape or push batch shares one
// timestamp, so each costs one byte).
func AppendSamples(b []byte, ss []Sample) []byte {
	b = append(b, byte(TypeSamples))
	if len(ss) == 0 {
		return b
	}
	base := ss[0].T
	b = binary.AppendVarint(b, base)
	for _, s := range ss {
		b = binary.AppendUvarint(b, s.ID)
		b = binary.AppendVarint(b, s.ST)
		b = binary.AppendVarint(b, s.T-base)
		b = appendF64(b, s.V)
	}
	return b
}

// AppendHistograms encodes integer histograms (TypeHistograms) or float
// histograms (TypeFloatHistograms) depending on float.
func AppendHistograms(b []byte, hs []Histogram, float bool) []byte {
	if float {
		b = append(b, byte(TypeFloatHistograms))
	} else {
		b = append(b, byte(TypeHistograms))
	}
	for _, h := range hs {
		b = binary.AppendUvarint(b, h.ID)
		b = binary.AppendVarint(b, h.ST)
		b = binary.AppendVarint(b, h.T)
		if float {
			b = AppendFloatHistogram(b, h.FH)
		} else {
			b = AppendIntHistogram(b, h.H)
		}
	}
	return b
}

// AppendExemplars encodes an exemplars record.
func AppendExemplars(b []byte, es []Exemplar) []byte {
	b = append(b, byte(TypeExemplars))
	for _, e := range es {
		b = binary.AppendUvarint(b, e.ID)
		b = binary.AppendVarint(b, e.T)
		b = appendF64(b, e.V)
		if e.HasTs {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = appendLabels(b, e.Labels)
	}
	return b
}

// AppendMetadata encodes a metadata record.
func AppendMetadata(b []byte, ms []Metadata) []byte {
	b = append(b, byte(TypeMetadata))
	for _, m := range ms {
		b = appendString(b, m.Metric)
		b = appendString(b, string(m.Meta.Type))
		b = appendString(b, m.Meta.Unit)
		b = appendString(b, m.Meta.Help)
	}
	return b
}

// AppendTombstones encodes a tombstones record.
func AppendTombstones(b []byte, ts []Tombstone) []byte {
	b = append(b, byte(TypeTombstones))
	for _, t := range ts {
		b = binary.AppendUvarint(b, t.ID)
		b = binary.AppendVarint(b, t.Mint)
		b = binary.AppendVarint(b, t.Maxt)
	}
	return b
}

func appendSpans(b []byte, sp []histogram.Span) []byte {
	b = binary.AppendUvarint(b, uint64(len(sp)))
	for _, s := range sp {
		b = binary.AppendVarint(b, int64(s.Offset))
		b = binary.AppendUvarint(b, uint64(s.Length))
	}
	return b
}

// AppendIntHistogram encodes one integer histogram.
func AppendIntHistogram(b []byte, h *histogram.Histogram) []byte {
	b = append(b, byte(h.CounterResetHint))
	b = binary.AppendVarint(b, int64(h.Schema))
	b = appendF64(b, h.ZeroThreshold)
	b = binary.AppendUvarint(b, h.ZeroCount)
	b = binary.AppendUvarint(b, h.Count)
	b = appendF64(b, h.Sum)
	b = appendSpans(b, h.PositiveSpans)
	b = appendSpans(b, h.NegativeSpans)
	b = binary.AppendUvarint(b, uint64(len(h.PositiveBuckets)))
	for _, v := range h.PositiveBuckets {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(h.NegativeBuckets)))
	for _, v := range h.NegativeBuckets {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(h.CustomValues)))
	for _, v := range h.CustomValues {
		b = appendF64(b, v)
	}
	return b
}

// AppendFloatHistogram encodes one float histogram.
func AppendFloatHistogram(b []byte, h *histogram.FloatHistogram) []byte {
	b = append(b, byte(h.CounterResetHint))
	b = binary.AppendVarint(b, int64(h.Schema))
	b = appendF64(b, h.ZeroThreshold)
	b = appendF64(b, h.ZeroCount)
	b = appendF64(b, h.Count)
	b = appendF64(b, h.Sum)
	b = appendSpans(b, h.PositiveSpans)
	b = appendSpans(b, h.NegativeSpans)
	b = binary.AppendUvarint(b, uint64(len(h.PositiveBuckets)))
	for _, v := range h.PositiveBuckets {
		b = appendF64(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(h.NegativeBuckets)))
	for _, v := range h.NegativeBuckets {
		b = appendF64(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(h.CustomValues)))
	for _, v := range h.CustomValues {
		b = appendF64(b, v)
	}
	return b
}

// Decoder reads one record. Zero value is ready; buffers are reused between
// records, so decoded slices are valid until the next Decode call.
type Decoder struct {
	b   []byte
	err error
	lb  labels.ScratchBuilder
}

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
}

func (d *Decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Decoder) f64() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("float")
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *Decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *Decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string length")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a length prefix and checks that at least min bytes per element remain.
func (d *Decoder) count(min int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/min)+1 {
		d.fail("count")
		return 0
	}
	return int(n)
}

func (d *Decoder) labels() labels.Labels {
	n := d.count(2)
	d.lb.Reset()
	for i := 0; i < n && d.err == nil; i++ {
		name := d.str()
		value := d.str()
		d.lb.Add(name, value)
	}
	d.lb.Sort()
	return d.lb.Labels()
}

func (d *Decoder) spans() []histogram.Span {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	sp := make([]histogram.Span, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		off := d.varint()
		l := d.uvarint()
		if off < math.MinInt32 || off > math.MaxInt32 || l > math.MaxUint32 {
			d.fail("span")
		}
		sp = append(sp, histogram.Span{Offset: int32(off), Length: uint32(l)})
	}
	return sp
}

func (d *Decoder) intHistogram() *histogram.Histogram {
	h := &histogram.Histogram{}
	h.CounterResetHint = histogram.CounterResetHint(d.byte1())
	h.Schema = int32(d.varint())
	h.ZeroThreshold = d.f64()
	h.ZeroCount = d.uvarint()
	h.Count = d.uvarint()
	h.Sum = d.f64()
	h.PositiveSpans = d.spans()
	h.NegativeSpans = d.spans()
	if n := d.count(1); n > 0 {
		h.PositiveBuckets = make([]int64, n)
		for i := range h.PositiveBuckets {
			h.PositiveBuckets[i] = d.varint()
		}
	}
	if n := d.count(1); n > 0 {
		h.NegativeBuckets = make([]int64, n)
		for i := range h.NegativeBuckets {
			h.NegativeBuckets[i] = d.varint()
		}
	}
	if n := d.count(8); n > 0 {
		h.CustomValues = make([]float64, n)
		for i := range h.CustomValues {
			h.CustomValues[i] = d.f64()
		}
	}
	return h
}

func (d *Decoder) floatHistogram() *histogram.FloatHistogram {
	h := &histogram.FloatHistogram{}
	h.CounterResetHint = histogram.CounterResetHint(d.byte1())
	h.Schema = int32(d.varint())
	h.ZeroThreshold = d.f64()
	h.ZeroCount = d.f64()
	h.Count = d.f64()
	h.Sum = d.f64()
	h.PositiveSpans = d.spans()
	h.NegativeSpans = d.spans()
	for _, dst := range []*[]float64{&h.PositiveBuckets, &h.NegativeBuckets, &h.CustomValues} {
		if n := d.count(8); n > 0 {
			*dst = make([]float64, n)
			for i := range *dst {
				(*dst)[i] = d.f64()
			}
		}
	}
	return h
}

// Decoded holds the entries of one record; only the slice matching Type is set.
type Decoded struct {
	Type       Type
	Series     []Series
	Samples    []Sample
	Histograms []Histogram
	Exemplars  []Exemplar
	Metadata   []Metadata
	Tombstones []Tombstone
}

// Decode parses rec into out, reusing its slices.
func (d *Decoder) Decode(rec []byte, out *Decoded) error {
	*out = Decoded{Series: out.Series[:0], Samples: out.Samples[:0], Histograms: out.Histograms[:0],
		Exemplars: out.Exemplars[:0], Metadata: out.Metadata[:0], Tombstones: out.Tombstones[:0]}
	if len(rec) == 0 {
		return fmt.Errorf("%w: empty", ErrCorrupt)
	}
	d.b, d.err = rec[1:], nil
	out.Type = Type(rec[0])
	if out.Type == TypeSamplesCompact {
		out.Samples = d.compactSamples(out.Samples)
		return d.err
	}
	var base int64
	if out.Type == TypeSamples && len(d.b) > 0 {
		base = d.varint()
	}
	for len(d.b) > 0 && d.err == nil {
		switch out.Type {
		case TypeSeries:
			k := d.byte1()
			id := d.uvarint()
			out.Series = append(out.Series, Series{Kind: k, ID: id, Labels: d.labels()})
		case TypeSamples:
			s := Sample{ID: d.uvarint(), ST: d.varint(), T: base + d.varint()}
			s.V = d.f64()
			out.Samples = append(out.Samples, s)
		case TypeHistograms, TypeFloatHistograms:
			h := Histogram{ID: d.uvarint(), ST: d.varint(), T: d.varint()}
			if out.Type == TypeHistograms {
				h.H = d.intHistogram()
			} else {
				h.FH = d.floatHistogram()
			}
			out.Histograms = append(out.Histograms, h)
		case TypeExemplars:
			e := Exemplar{ID: d.uvarint(), T: d.varint()}
			e.V = d.f64()
			e.HasTs = d.byte1() == 1
			e.Labels = d.labels()
			out.Exemplars = append(out.Exemplars, e)
		case TypeMetadata:
			m := Metadata{Metric: d.str()}
			m.Meta.Type = model.MetricType(d.str())
			m.Meta.Unit = d.str()
			m.Meta.Help = d.str()
			out.Metadata = append(out.Metadata, m)
		case TypeTombstones:
			out.Tombstones = append(out.Tombstones, Tombstone{ID: d.uvarint(), Mint: d.varint(), Maxt: d.varint()})
		default:
			return fmt.Errorf("%w: unknown type %d", ErrCorrupt, rec[0])
		}
	}
	return d.err
}
