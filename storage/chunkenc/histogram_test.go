package chunkenc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
)

// sameNil reports whether a and b are both nil or both non-nil.
func sameNil[T any](a, b []T) bool { return (a == nil) == (b == nil) }

func bitsEqual(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// histDiff describes the first difference between a and b, "" if none. It
// compares floats bit for bit and tells nil from empty slices.
func histDiff(a, b *histogram.Histogram) string {
	switch {
	case a.CounterResetHint != b.CounterResetHint:
		return "CounterResetHint"
	case a.Schema != b.Schema:
		return "Schema"
	case !bitsEqual(a.ZeroThreshold, b.ZeroThreshold):
		return "ZeroThreshold"
	case a.ZeroCount != b.ZeroCount:
		return "ZeroCount"
	case a.Count != b.Count:
		return "Count"
	case !bitsEqual(a.Sum, b.Sum):
		return "Sum"
	case !sameNil(a.PositiveSpans, b.PositiveSpans) || !slices.Equal(a.PositiveSpans, b.PositiveSpans):
		return "PositiveSpans"
	case !sameNil(a.NegativeSpans, b.NegativeSpans) || !slices.Equal(a.NegativeSpans, b.NegativeSpans):
		return "NegativeSpans"
	case !sameNil(a.PositiveBuckets, b.PositiveBuckets) || !slices.Equal(a.PositiveBuckets, b.PositiveBuckets):
		return "PositiveBuckets"
	case !sameNil(a.NegativeBuckets, b.NegativeBuckets) || !slices.Equal(a.NegativeBuckets, b.NegativeBuckets):
		return "NegativeBuckets"
	case !sameNil(a.CustomValues, b.CustomValues) || !slices.EqualFunc(a.CustomValues, b.CustomValues, bitsEqual):
		return "CustomValues"
	}
	return ""
}

func floatHistDiff(a, b *histogram.FloatHistogram) string {
	switch {
	case a.CounterResetHint != b.CounterResetHint:
		return "CounterResetHint"
	case a.Schema != b.Schema:
		return "Schema"
	case !bitsEqual(a.ZeroThreshold, b.ZeroThreshold):
		return "ZeroThreshold"
	case !bitsEqual(a.ZeroCount, b.ZeroCount):
		return "ZeroCount"
	case !bitsEqual(a.Count, b.Count):
		return "Count"
	case !bitsEqual(a.Sum, b.Sum):
		return "Sum"
	case !sameNil(a.PositiveSpans, b.PositiveSpans) || !slices.Equal(a.PositiveSpans, b.PositiveSpans):
		return "PositiveSpans"
	case !sameNil(a.NegativeSpans, b.NegativeSpans) || !slices.Equal(a.NegativeSpans, b.NegativeSpans):
		return "NegativeSpans"
	case !sameNil(a.PositiveBuckets, b.PositiveBuckets) || !slices.EqualFunc(a.PositiveBuckets, b.PositiveBuckets, bitsEqual):
		return "PositiveBuckets"
	case !sameNil(a.NegativeBuckets, b.NegativeBuckets) || !slices.EqualFunc(a.NegativeBuckets, b.NegativeBuckets, bitsEqual):
		return "NegativeBuckets"
	case !sameNil(a.CustomValues, b.CustomValues) || !slices.EqualFunc(a.CustomValues, b.CustomValues, bitsEqual):
		return "CustomValues"
	}
	return ""
}

func roundTripHistograms(t testing.TB, hs []*histogram.Histogram) []byte {
	t.Helper()
	enc := AppendHistograms([]byte{0xAB}, hs)
	enc = append(enc, 0xCD)
	got, tail, err := DecodeHistograms(nil, enc[1:])
	if err != nil {
		t.Fatalf("decode %d histograms: %v", len(hs), err)
	}
	if !slices.Equal(tail, []byte{0xCD}) {
		t.Fatalf("tail = %x, want cd", tail)
	}
	if len(got) != len(hs) {
		t.Fatalf("decoded %d histograms, want %d", len(got), len(hs))
	}
	for i := range hs {
		if d := histDiff(got[i], hs[i]); d != "" {
			t.Fatalf("histogram %d differs in %s:\n got %+v\nwant %+v", i, d, got[i], hs[i])
		}
	}
	return enc[1 : len(enc)-1]
}

func roundTripFloatHistograms(t testing.TB, hs []*histogram.FloatHistogram) []byte {
	t.Helper()
	enc := AppendFloatHistograms([]byte{0xAB}, hs)
	enc = append(enc, 0xCD)
	got, tail, err := DecodeFloatHistograms(nil, enc[1:])
	if err != nil {
		t.Fatalf("decode %d float histograms: %v", len(hs), err)
	}
	if !slices.Equal(tail, []byte{0xCD}) {
		t.Fatalf("tail = %x, want cd", tail)
	}
	if len(got) != len(hs) {
		t.Fatalf("decoded %d histograms, want %d", len(got), len(hs))
	}
	for i := range hs {
		if d := floatHistDiff(got[i], hs[i]); d != "" {
			t.Fatalf("histogram %d differs in %s:\n got %+v\nwant %+v", i, d, got[i], hs[i])
		}
	}
	return enc[1 : len(enc)-1]
}

// latencyHistograms returns n scrapes of a growing exponential histogram, a
// bucket appearing half way through (a layout change).
func latencyHistograms(n int) []*histogram.Histogram {
	hs := make([]*histogram.Histogram, n)
	for i := range hs {
		h := &histogram.Histogram{
			CounterResetHint: histogram.NotCounterReset,
			Schema:           3,
			ZeroThreshold:    1e-128,
			ZeroCount:        uint64(i / 3),
			Count:            uint64(10 * (i + 1)),
			Sum:              float64(i) * 1.25,
			PositiveSpans:    []histogram.Span{{Offset: -2, Length: 3}, {Offset: 4, Length: 2}},
			PositiveBuckets:  []int64{int64(i), 2, -1, int64(i / 2), 1},
			NegativeSpans:    []histogram.Span{{Offset: 0, Length: 1}},
			NegativeBuckets:  []int64{int64(i % 4)},
		}
		if i == 0 {
			h.CounterResetHint = histogram.UnknownCounterReset
		}
		if i >= n/2 {
			h.PositiveSpans = []histogram.Span{{Offset: -2, Length: 3}, {Offset: 4, Length: 3}}
			h.PositiveBuckets = append(h.PositiveBuckets, 7)
		}
		hs[i] = h
	}
	return hs
}

func TestHistogramsRoundTrip(t *testing.T) {
	custom := []float64{0.005, 0.01, 0.1, 1, 10}
	nhcb := make([]*histogram.Histogram, 30)
	for i := range nhcb {
		nhcb[i] = &histogram.Histogram{
			Schema:          histogram.CustomBucketsSchema,
			Count:           uint64(6 * i),
			Sum:             float64(i) * 0.75,
			PositiveSpans:   []histogram.Span{{Offset: 0, Length: 6}},
			PositiveBuckets: []int64{int64(i), 0, 0, 0, 0, 0},
			CustomValues:    custom,
		}
	}
	cases := []struct {
		name string
		hs   []*histogram.Histogram
	}{
		{name: "empty", hs: nil},
		{name: "zero value", hs: []*histogram.Histogram{{}}},
		{name: "empty non-nil slices", hs: []*histogram.Histogram{{PositiveSpans: []histogram.Span{}, PositiveBuckets: []int64{}, NegativeSpans: []histogram.Span{}, NegativeBuckets: []int64{}, CustomValues: []float64{}}}},
		{name: "one", hs: latencyHistograms(1)},
		{name: "series with layout change", hs: latencyHistograms(120)},
		{name: "custom buckets", hs: nhcb},
		{name: "stale and reset", hs: []*histogram.Histogram{
			{Schema: 0, Count: 5, Sum: 2, PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{5}},
			{Schema: 0, Sum: math.Float64frombits(staleNaN)},
			{CounterResetHint: histogram.CounterReset, Schema: 0, Count: 1, Sum: math.Inf(1), PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []int64{1}},
			{CounterResetHint: histogram.GaugeType, Schema: -4, Count: math.MaxUint64, ZeroCount: math.MaxUint64, Sum: math.Copysign(0, -1), ZeroThreshold: math.NaN()},
		}},
		{name: "extreme spans", hs: []*histogram.Histogram{{
			Schema:          8,
			PositiveSpans:   []histogram.Span{{Offset: math.MinInt32, Length: math.MaxUint32}, {Offset: math.MaxInt32, Length: 0}},
			PositiveBuckets: []int64{math.MinInt64, math.MaxInt64, -1},
			NegativeSpans:   []histogram.Span{{Offset: 1, Length: 2}},
		}}},
		{name: "schema extremes", hs: []*histogram.Histogram{{Schema: math.MinInt32}, {Schema: math.MaxInt32}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { roundTripHistograms(t, tc.hs) })
	}
}

func TestHistogramsCompress(t *testing.T) {
	hs := latencyHistograms(120)
	enc := roundTripHistograms(t, hs)
	// Two layouts, slowly changing counts: a few bytes per histogram, where
	// a row-wise varint encoding of the same fields needs more than 25.
	if perHist := float64(len(enc)) / float64(len(hs)); perHist > 8 {
		t.Errorf("%.1f bytes per histogram, want <= 8", perHist)
	}
}

func TestFloatHistogramsRoundTrip(t *testing.T) {
	toFloat := func(hs []*histogram.Histogram) []*histogram.FloatHistogram {
		fhs := make([]*histogram.FloatHistogram, len(hs))
		for i, h := range hs {
			fhs[i] = h.ToFloat(nil)
		}
		return fhs
	}
	cases := []struct {
		name string
		hs   []*histogram.FloatHistogram
	}{
		{name: "empty", hs: nil},
		{name: "zero value", hs: []*histogram.FloatHistogram{{}}},
		{name: "empty non-nil slices", hs: []*histogram.FloatHistogram{{PositiveSpans: []histogram.Span{}, PositiveBuckets: []float64{}, NegativeSpans: []histogram.Span{}, NegativeBuckets: []float64{}, CustomValues: []float64{}}}},
		{name: "from integer series", hs: toFloat(latencyHistograms(120))},
		{name: "fractional and special counts", hs: []*histogram.FloatHistogram{
			{Schema: 1, Count: 2.5, ZeroCount: 0.25, Sum: math.NaN(), PositiveSpans: []histogram.Span{{Offset: 3, Length: 2}}, PositiveBuckets: []float64{1.125, math.Pi}},
			{Schema: 1, Count: math.Inf(1), ZeroCount: math.Copysign(0, -1), Sum: math.Float64frombits(staleNaN), PositiveSpans: []histogram.Span{{Offset: 3, Length: 2}}, PositiveBuckets: []float64{math.NaN(), -1}},
		}},
		{name: "custom buckets", hs: []*histogram.FloatHistogram{
			{Schema: histogram.CustomBucketsSchema, Count: 3, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{1, 1, 1}, CustomValues: []float64{0.5, 1}},
			{CounterResetHint: histogram.GaugeType, Schema: histogram.CustomBucketsSchema, Count: 3, Sum: 1, PositiveSpans: []histogram.Span{{Offset: 0, Length: 3}}, PositiveBuckets: []float64{0, 2, 1}, CustomValues: []float64{0.5, 1}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { roundTripFloatHistograms(t, tc.hs) })
	}
}

func TestDecodeHistogramsCorrupt(t *testing.T) {
	valid := AppendHistograms(nil, latencyHistograms(10))
	validF := AppendFloatHistograms(nil, []*histogram.FloatHistogram{latencyHistograms(1)[0].ToFloat(nil)})
	for cut := 0; cut < len(valid); cut++ {
		t.Run(fmt.Sprintf("int truncated at %d", cut), func(t *testing.T) {
			got, tail, err := DecodeHistograms(nil, valid[:cut])
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want a corruption error", err)
			}
			if len(got) != 0 || len(tail) != cut {
				t.Fatalf("on error dst and src must come back unchanged")
			}
		})
	}
	for cut := 0; cut < len(validF); cut++ {
		t.Run(fmt.Sprintf("float truncated at %d", cut), func(t *testing.T) {
			if _, _, err := DecodeFloatHistograms(nil, validF[:cut]); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want a corruption error", err)
			}
		})
	}
	t.Run("bad layout flags", func(t *testing.T) {
		// One zero-value histogram, then corrupt the layout flag byte.
		enc := AppendHistograms(nil, []*histogram.Histogram{{}})
		i := len(enc) - 6 // flags byte, 2 span counts, 2 bucket counts, bucket total 0 (empty column)
		if enc[i] != layoutNilMask {
			t.Fatalf("test layout assumption broken: byte %d is %#x in %x", i, enc[i], enc)
		}
		enc[i] = 0x40
		if _, _, err := DecodeHistograms(nil, enc); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
	})
}
