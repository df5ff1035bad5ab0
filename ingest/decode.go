package ingest

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
)

// Protocol is the remote write message carried by a request body.
type Protocol uint8

// Protocols.
const (
	// ProtoV1 is prometheus.WriteRequest (remote write 1.0).
	ProtoV1 Protocol = 1
	// ProtoV2 is io.prometheus.write.v2.Request (remote write 2.0).
	ProtoV2 Protocol = 2
)

// String returns the protobuf message name.
func (p Protocol) String() string {
	switch p {
	case ProtoV1:
		return "prometheus.WriteRequest"
	case ProtoV2:
		return "io.prometheus.write.v2.Request"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// span is a half-open range [lo, hi) into one of a Batch's arenas.
type span struct{ lo, hi uint32 }

func (s span) len() int { return int(s.hi - s.lo) }

// strRef locates a string in the request buffer. Arenas hold offsets rather
// than strings so that they contain no pointers: filling them costs no GC
// write barriers and the collector never scans them.
type strRef struct{ off, n uint32 }

// pair is a RW 1.0 label.
type pair struct{ name, value strRef }

type sample struct {
	v     float64
	t, st int64
}

type histEntry struct {
	t, st int64
	h     *histogram.Histogram
	fh    *histogram.FloatHistogram
}

type exemplarEntry struct {
	labels span // into exRefs (v2) or exPairs (v1)
	v      float64
	t      int64
}

type metaRefs struct {
	typ        int32
	help, unit uint32
}

// seriesEntry indexes one TimeSeries message inside the arenas.
type seriesEntry struct {
	labels    span // into refs (v2) or pairs (v1)
	samples   span
	hists     span
	exemplars span
	meta      metaRefs
}

// decodeV2 parses io.prometheus.write.v2.Request into b's arenas.
func (b *Batch) decodeV2(buf []byte) error {
	const msg = "request"
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		switch num {
		case 4: // symbols
			var p []byte
			p, n, err = consumeBytes(msg+" symbols", typ, num, buf)
			if err == nil {
				b.symbols = append(b.symbols, b.ref(p))
			}
		case 5: // timeseries
			var p []byte
			p, n, err = consumeBytes(msg+" timeseries", typ, num, buf)
			if err == nil {
				err = b.decodeSeriesV2(p)
			}
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

func (b *Batch) decodeSeriesV2(buf []byte) error {
	const msg = "timeseries"
	s := seriesEntry{
		labels:    span{uint32(len(b.refs)), 0},
		samples:   span{uint32(len(b.samples)), 0},
		hists:     span{uint32(len(b.hists)), 0},
		exemplars: span{uint32(len(b.exemplars)), 0},
	}
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var p []byte
		switch num {
		case 1:
			b.refs, n, err = appendUint32s(b.refs, msg+" labels_refs", typ, num, buf)
		case 2:
			if p, n, err = consumeBytes(msg+" sample", typ, num, buf); err == nil {
				err = b.decodeSample(p)
			}
		case 3:
			if p, n, err = consumeBytes(msg+" histogram", typ, num, buf); err == nil {
				err = b.decodeHist(p, true)
			}
		case 4:
			if p, n, err = consumeBytes(msg+" exemplar", typ, num, buf); err == nil {
				err = b.decodeExemplarV2(p)
			}
		case 5:
			if p, n, err = consumeBytes(msg+" metadata", typ, num, buf); err == nil {
				err = decodeMetadataV2(&s.meta, p)
			}
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	s.labels.hi = uint32(len(b.refs))
	s.samples.hi = uint32(len(b.samples))
	s.hists.hi = uint32(len(b.hists))
	s.exemplars.hi = uint32(len(b.exemplars))
	b.series = append(b.series, s)
	return nil
}

// decodeSample parses Sample; the RW 1.0 message is the same without field 3.
func (b *Batch) decodeSample(buf []byte) error {
	const msg = "sample"
	var s sample
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var v uint64
		switch num {
		case 1:
			s.v, n, err = consumeDouble(msg, typ, num, buf)
		case 2:
			v, n, err = consumeVarint(msg, typ, num, buf)
			s.t = int64(v)
		case 3:
			if b.proto != ProtoV2 {
				n, err = skipField(msg, num, typ, buf)
				break
			}
			v, n, err = consumeVarint(msg, typ, num, buf)
			s.st = int64(v)
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	b.samples = append(b.samples, s)
	return nil
}

func (b *Batch) decodeHist(buf []byte, v2 bool) error {
	if err := b.hs.decode(buf, v2); err != nil {
		return err
	}
	h, fh := b.hs.build()
	b.hists = append(b.hists, histEntry{t: b.hs.t, st: b.hs.st, h: h, fh: fh})
	return nil
}

func (b *Batch) decodeExemplarV2(buf []byte) error {
	const msg = "exemplar"
	e := exemplarEntry{labels: span{lo: uint32(len(b.exRefs))}}
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var v uint64
		switch num {
		case 1:
			b.exRefs, n, err = appendUint32s(b.exRefs, msg+" labels_refs", typ, num, buf)
		case 2:
			e.v, n, err = consumeDouble(msg, typ, num, buf)
		case 3:
			v, n, err = consumeVarint(msg, typ, num, buf)
			e.t = int64(v)
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	e.labels.hi = uint32(len(b.exRefs))
	b.exemplars = append(b.exemplars, e)
	return nil
}

// decodeMetadataV2 merges a Metadata message into m (a repeated occurrence of
// a singular message field merges, as protobuf specifies).
func decodeMetadataV2(m *metaRefs, buf []byte) error {
	const msg = "metadata"
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var v uint64
		switch num {
		case 1:
			v, n, err = consumeVarint(msg, typ, num, buf)
			m.typ = int32(v) // enum: low 32 bits, as protobuf
		case 3:
			v, n, err = consumeVarint(msg, typ, num, buf)
			m.help = uint32(v)
		case 4:
			v, n, err = consumeVarint(msg, typ, num, buf)
			m.unit = uint32(v)
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// decodeV1 parses prometheus.WriteRequest. Its metadata field (3) is skipped:
// Prometheus' 1.0 receiver ignores it too, and RW 1.0 senders send metadata
// in requests of their own, without samples to attach it to.
func (b *Batch) decodeV1(buf []byte) error {
	const msg = "write request"
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		switch num {
		case 1:
			var p []byte
			if p, n, err = consumeBytes(msg+" timeseries", typ, num, buf); err == nil {
				err = b.decodeSeriesV1(p)
			}
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

func (b *Batch) decodeSeriesV1(buf []byte) error {
	const msg = "timeseries"
	s := seriesEntry{
		labels:    span{uint32(len(b.pairs)), 0},
		samples:   span{uint32(len(b.samples)), 0},
		hists:     span{uint32(len(b.hists)), 0},
		exemplars: span{uint32(len(b.exemplars)), 0},
	}
	// pairs is stored back once: one slice-header store per series rather
	// than one per label (each a GC write barrier while marking).
	pairs := b.pairs
	defer func() { b.pairs = pairs }()
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var p []byte
		switch num {
		case 1:
			if p, n, err = consumeBytes(msg+" label", typ, num, buf); err == nil {
				pairs, err = b.appendLabelV1(pairs, p)
			}
		case 2:
			if p, n, err = consumeBytes(msg+" sample", typ, num, buf); err == nil {
				err = b.decodeSample(p)
			}
		case 3:
			if p, n, err = consumeBytes(msg+" exemplar", typ, num, buf); err == nil {
				err = b.decodeExemplarV1(p)
			}
		case 4:
			if p, n, err = consumeBytes(msg+" histogram", typ, num, buf); err == nil {
				err = b.decodeHist(p, false)
			}
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	s.labels.hi = uint32(len(pairs))
	s.samples.hi = uint32(len(b.samples))
	s.hists.hi = uint32(len(b.hists))
	s.exemplars.hi = uint32(len(b.exemplars))
	b.series = append(b.series, s)
	return nil
}

func (b *Batch) appendLabelV1(dst []pair, buf []byte) ([]pair, error) {
	const msg = "label"
	// What every client sends: name (field 1) then value (field 2), each
	// under 128 bytes, nothing else. Decoded exactly as the loop below
	// would.
	if len(buf) >= 4 && buf[0] == 0x0a && buf[1] < 0x80 {
		nl := int(buf[1])
		if v := 2 + nl; v+2 <= len(buf) && buf[v] == 0x12 && buf[v+1] < 0x80 && v+2+int(buf[v+1]) == len(buf) {
			return append(dst, pair{name: b.ref(buf[2:v]), value: b.ref(buf[v+2:])}), nil
		}
	}
	var l pair
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return dst, err
		}
		buf = buf[n:]
		var p []byte
		switch num {
		case 1:
			if p, n, err = consumeBytes(msg+" name", typ, num, buf); err == nil {
				l.name = b.ref(p)
			}
		case 2:
			if p, n, err = consumeBytes(msg+" value", typ, num, buf); err == nil {
				l.value = b.ref(p)
			}
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return dst, err
		}
		buf = buf[n:]
	}
	return append(dst, l), nil
}

func (b *Batch) decodeExemplarV1(buf []byte) error {
	const msg = "exemplar"
	e := exemplarEntry{labels: span{lo: uint32(len(b.exPairs))}}
	for len(buf) > 0 {
		num, typ, n, err := consumeTag(msg+" tag", buf)
		if err != nil {
			return err
		}
		buf = buf[n:]
		var v uint64
		var p []byte
		switch num {
		case 1:
			if p, n, err = consumeBytes(msg+" label", typ, num, buf); err == nil {
				b.exPairs, err = b.appendLabelV1(b.exPairs, p)
			}
		case 2:
			e.v, n, err = consumeDouble(msg, typ, num, buf)
		case 3:
			v, n, err = consumeVarint(msg, typ, num, buf)
			e.t = int64(v)
		default:
			n, err = skipField(msg, num, typ, buf)
		}
		if err != nil {
			return err
		}
		buf = buf[n:]
	}
	e.labels.hi = uint32(len(b.exPairs))
	b.exemplars = append(b.exemplars, e)
	return nil
}
