package ingest

import (
	"github.com/prometheus/prometheus/model/histogram"
	"google.golang.org/protobuf/encoding/protowire"
)

// histScratch receives one wire Histogram message (the same field numbers in
// RW 1.0 and 2.0; start_timestamp only exists in 2.0). Its slices are reused
// across histograms; build copies them into a fresh histogram because storage
// may keep the pointer it is given (Prometheus' head keeps the last value).
type histScratch struct {
	countSet, countFloat bool // which member of the count oneof was seen last
	countI               uint64
	countF               float64
	zeroSet, zeroFloat   bool
	zeroI                uint64
	zeroF                float64
	sum, zeroThreshold   float64
	schema               int32
	resetHint            int32
	t, st                int64
	negSpans, posSpans   []histogram.Span
	negDeltas, posDeltas []int64
	negCounts, posCounts []float64
	custom               []float64
}

func (s *histScratch) reset() {
	*s = histScratch{
		negSpans: s.negSpans[:0], posSpans: s.posSpans[:0],
		negDeltas: s.negDeltas[:0], posDeltas: s.posDeltas[:0],
		negCounts: s.negCounts[:0], posCounts: s.posCounts[:0],
		custom: s.custom[:0],
	}
}

const histMsg = "histogram"

// decode parses one Histogram message. v2 enables start_timestamp (field 17).
func (s *histScratch) decode(b []byte, v2 bool) error {
	s.reset()
	for len(b) > 0 {
		num, typ, n, err := consumeTag(histMsg+" tag", b)
		if err != nil {
			return err
		}
		b = b[n:]
		var v uint64
		switch num {
		case 1: // count_int
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.countSet, s.countFloat, s.countI = true, false, v
		case 2: // count_float
			s.countF, n, err = consumeDouble(histMsg, typ, num, b)
			s.countSet, s.countFloat = true, true
		case 3:
			s.sum, n, err = consumeDouble(histMsg, typ, num, b)
		case 4: // sint32
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.schema = int32(protowire.DecodeZigZag(v & 0xffffffff))
		case 5:
			s.zeroThreshold, n, err = consumeDouble(histMsg, typ, num, b)
		case 6:
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.zeroSet, s.zeroFloat, s.zeroI = true, false, v
		case 7:
			s.zeroF, n, err = consumeDouble(histMsg, typ, num, b)
			s.zeroSet, s.zeroFloat = true, true
		case 8:
			s.negSpans, n, err = appendSpan(s.negSpans, typ, num, b)
		case 9:
			s.negDeltas, n, err = appendSint64s(s.negDeltas, histMsg, typ, num, b)
		case 10:
			s.negCounts, n, err = appendDoubles(s.negCounts, histMsg, typ, num, b)
		case 11:
			s.posSpans, n, err = appendSpan(s.posSpans, typ, num, b)
		case 12:
			s.posDeltas, n, err = appendSint64s(s.posDeltas, histMsg, typ, num, b)
		case 13:
			s.posCounts, n, err = appendDoubles(s.posCounts, histMsg, typ, num, b)
		case 14:
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.resetHint = int32(v)
		case 15:
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.t = int64(v)
		case 16:
			s.custom, n, err = appendDoubles(s.custom, histMsg, typ, num, b)
		case 17:
			if !v2 {
				n, err = skipField(histMsg, num, typ, b)
				break
			}
			v, n, err = consumeVarint(histMsg, typ, num, b)
			s.st = int64(v)
		default:
			n, err = skipField(histMsg, num, typ, b)
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

const spanMsg = "histogram bucket span"

func appendSpan(dst []histogram.Span, typ protowire.Type, num protowire.Number, b []byte) ([]histogram.Span, int, error) {
	p, n, err := consumeBytes(histMsg, typ, num, b)
	if err != nil {
		return dst, 0, err
	}
	var sp histogram.Span
	for len(p) > 0 {
		fnum, ftyp, m, err := consumeTag(spanMsg+" tag", p)
		if err != nil {
			return dst, 0, err
		}
		p = p[m:]
		var v uint64
		switch fnum {
		case 1: // sint32 offset
			v, m, err = consumeVarint(spanMsg, ftyp, fnum, p)
			sp.Offset = int32(protowire.DecodeZigZag(v & 0xffffffff))
		case 2: // uint32 length
			v, m, err = consumeVarint(spanMsg, ftyp, fnum, p)
			sp.Length = uint32(v)
		default:
			m, err = skipField(spanMsg, fnum, ftyp, p)
		}
		if err != nil {
			return dst, 0, err
		}
		p = p[m:]
	}
	return append(dst, sp), n, nil
}

// build returns a freshly allocated histogram with the semantics of
// Prometheus' writev2.Histogram.ToIntHistogram / ToFloatHistogram: the count
// oneof decides the kind; a zero count of the other kind reads as 0.
func (s *histScratch) build() (*histogram.Histogram, *histogram.FloatHistogram) {
	hint := histogram.CounterResetHint(s.resetHint)
	if s.countSet && s.countFloat {
		fh := &histogram.FloatHistogram{
			CounterResetHint: hint,
			Schema:           s.schema,
			ZeroThreshold:    s.zeroThreshold,
			Count:            s.countF,
			Sum:              s.sum,
			PositiveSpans:    cloneSlice(s.posSpans),
			PositiveBuckets:  cloneSlice(s.posCounts),
			NegativeSpans:    cloneSlice(s.negSpans),
			NegativeBuckets:  cloneSlice(s.negCounts),
			CustomValues:     cloneSlice(s.custom),
		}
		if s.zeroSet && s.zeroFloat {
			fh.ZeroCount = s.zeroF
		}
		return nil, fh
	}
	h := &histogram.Histogram{
		CounterResetHint: hint,
		Schema:           s.schema,
		ZeroThreshold:    s.zeroThreshold,
		Count:            s.countI,
		Sum:              s.sum,
		PositiveSpans:    cloneSlice(s.posSpans),
		PositiveBuckets:  cloneSlice(s.posDeltas),
		NegativeSpans:    cloneSlice(s.negSpans),
		NegativeBuckets:  cloneSlice(s.negDeltas),
		CustomValues:     cloneSlice(s.custom),
	}
	if s.zeroSet && !s.zeroFloat {
		h.ZeroCount = s.zeroI
	}
	return h, nil
}

// cloneSlice copies s into an exactly sized new slice; nil when empty so that
// "no custom values" stays nil (histogram.Validate distinguishes nil).
func cloneSlice[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
