package chunkenc

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// fuzzReader hands out values derived from fuzz input; past the end it
// returns zeros, so every input maps to some column.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *fuzzReader) uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], r.b)
	r.b = r.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

func (r *fuzzReader) done() bool { return len(r.b) == 0 }

// fuzzInts derives an int64 column: raw values, small steps (grids, jitter,
// counters) or repeats, chosen per value so that every int mode is reached.
func fuzzInts(data []byte, maxLen int) []int64 {
	r := fuzzReader{b: data}
	var vs []int64
	var prev, step int64
	for !r.done() && len(vs) < maxLen {
		switch op := r.byte(); op % 5 {
		case 0:
			prev = int64(r.uint64())
		case 1:
			step = int64(int8(r.byte())) * 1000
			prev += step
		case 2:
			prev += step + int64(int8(r.byte()))
		case 3:
			// repeat prev
		case 4:
			prev += int64(r.byte()) << (r.byte() % 64)
		}
		vs = append(vs, prev)
	}
	return vs
}

// fuzzFloats derives a float64 column from raw bit patterns, decimals with
// up to 22 digits after the point, special values and repeats.
func fuzzFloats(data []byte, maxLen int) []float64 {
	r := fuzzReader{b: data}
	var vs []float64
	prev := 0.0
	for !r.done() && len(vs) < maxLen {
		switch op := r.byte(); op % 6 {
		case 0:
			prev = math.Float64frombits(r.uint64())
		case 1:
			m := int64(int16(binary.LittleEndian.Uint16([]byte{r.byte(), r.byte()})))
			prev = float64(m) / pow10[int(r.byte())%(maxDecimalExp+1)]
		case 2:
			specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
				math.Float64frombits(staleNaN), math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 53}
			prev = specials[int(r.byte())%len(specials)]
		case 3:
			// repeat prev
		case 4:
			prev += float64(r.byte())
		case 5:
			prev = math.Float64frombits(math.Float64bits(prev) ^ uint64(r.byte())<<(r.byte()%64))
		}
		vs = append(vs, prev)
	}
	return vs
}

func FuzzTimestamps(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 15, 1, 15, 1, 15})
	f.Add([]byte{2, 3, 2, 250, 2, 1, 2, 4, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0x80})
	f.Add(AppendTimestamps(nil, []int64{1, 2, 3}))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTripTimestamps(t, fuzzInts(data, 4096))
		// Arbitrary bytes as an encoding: an error or values, never a panic.
		_, _, _ = DecodeTimestamps(nil, data)
	})
}

func FuzzFloats(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0x39, 0x30, 2, 4, 4, 4, 3, 3, 2, 5})
	f.Add([]byte{0, 2, 0, 0, 0, 0, 0, 0xf0, 0x7f, 5, 1, 63})
	f.Add(AppendFloats(nil, []float64{1.5, 2.25, math.NaN()}))
	// A zstd-wrapped column, which random bytes almost never form.
	periodic := make([]float64, 600)
	for i := range periodic {
		periodic[i] = []float64{0.5, 97.25, 13, 1e6, 0.001, 42}[i%6]
	}
	f.Add(AppendFloats(nil, periodic))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTripFloats(t, fuzzFloats(data, 4096))
		_, _, _ = DecodeFloats(nil, data)
	})
}

// fuzzHistograms derives histograms: a few shared layouts (spans, custom
// bounds, nil or empty slices) and counts from the input.
func fuzzHistograms(data []byte, maxLen int) []*histogram.Histogram {
	r := fuzzReader{b: data}
	var hs []*histogram.Histogram
	var spans []histogram.Span
	var custom []float64
	nb := 0
	for !r.done() && len(hs) < maxLen {
		op := r.byte()
		if op&1 != 0 || len(hs) == 0 { // new layout
			spans, nb = nil, 0
			if op&2 != 0 {
				spans = []histogram.Span{}
			}
			for k := int(r.byte() % 4); k > 0; k-- {
				s := histogram.Span{Offset: int32(int8(r.byte())), Length: uint32(r.byte() % 5)}
				spans = append(spans, s)
				nb += int(s.Length)
			}
			custom = nil
			if op&4 != 0 {
				custom = fuzzFloats(r.b[:min(len(r.b), 8)], int(r.byte()%4))
			}
		}
		h := &histogram.Histogram{
			CounterResetHint: histogram.CounterResetHint(r.byte() % 4),
			Schema:           int32(int8(r.byte())),
			ZeroThreshold:    fuzzFloats([]byte{r.byte(), r.byte(), r.byte()}, 1)[0],
			ZeroCount:        uint64(r.byte()),
			Count:            r.uint64() >> (r.byte() % 64),
			Sum:              math.Float64frombits(r.uint64()),
			PositiveSpans:    spans,
			CustomValues:     custom,
		}
		if op&8 != 0 {
			h.NegativeSpans = spans
			h.NegativeBuckets = make([]int64, nb)
			for j := range h.NegativeBuckets {
				h.NegativeBuckets[j] = int64(int8(r.byte()))
			}
		}
		if spans != nil {
			h.PositiveBuckets = make([]int64, nb)
			for j := range h.PositiveBuckets {
				h.PositiveBuckets[j] = int64(int8(r.byte())) << (r.byte() % 60)
			}
		}
		hs = append(hs, h)
	}
	return hs
}

func FuzzHistograms(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 0, 3, 1, 1, 2, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte{15, 3, 1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 0, 0, 0, 1, 2, 3})
	f.Add(AppendHistograms(nil, latencyHistograms(3)))
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTripHistograms(t, fuzzHistograms(data, 256))
		_, _, _ = DecodeHistograms(nil, data)
	})
}

func FuzzFloatHistograms(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 0, 3, 1, 1, 2, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(AppendFloatHistograms(nil, []*histogram.FloatHistogram{latencyHistograms(1)[0].ToFloat(nil)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		hs := fuzzHistograms(data, 256)
		fhs := make([]*histogram.FloatHistogram, len(hs))
		for i, h := range hs {
			fh := h.ToFloat(nil)
			// ToFloat turns nil slices into empty ones in places; restore the
			// source's nil-ness so the round trip checks it, and give float
			// histograms float-only values (NaN counts, fractions).
			fh.PositiveSpans, fh.NegativeSpans, fh.CustomValues = h.PositiveSpans, h.NegativeSpans, h.CustomValues
			if h.PositiveBuckets == nil {
				fh.PositiveBuckets = nil
			}
			if h.NegativeBuckets == nil {
				fh.NegativeBuckets = nil
			}
			fh.Count = math.Float64frombits(math.Float64bits(fh.Count) ^ uint64(i))
			fhs[i] = fh
		}
		roundTripFloatHistograms(t, fhs)
		_, _, _ = DecodeFloatHistograms(nil, data)
	})
}
