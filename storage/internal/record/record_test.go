package record

import (
	"errors"
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/index/tenant"
)

func TestRoundTrip(t *testing.T) {
	h := &histogram.Histogram{CounterResetHint: histogram.NotCounterReset, Schema: -2, ZeroThreshold: 0.5, ZeroCount: 3, Count: 10, Sum: -4.5,
		PositiveSpans: []histogram.Span{{Offset: -1, Length: 2}}, PositiveBuckets: []int64{1, 2},
		NegativeSpans: []histogram.Span{{Offset: 3, Length: 1}}, NegativeBuckets: []int64{4}}
	fh := &histogram.FloatHistogram{Schema: histogram.CustomBucketsSchema, Count: 2.5, Sum: 9,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []float64{1, 1.5}, CustomValues: []float64{0.1, 1}}
	ls := labels.FromStrings("__name__", "x", "a", "ü")
	var d Decoder
	var out Decoded
	cases := []struct {
		name  string
		rec   []byte
		check func(Decoded) bool
	}{
		{"series", AppendSeries(nil, []Series{{Kind: 1, ID: 7, Labels: ls}}), func(o Decoded) bool {
			return o.Type == TypeSeries && o.Series[0].ID == 7 && labels.Equal(o.Series[0].Labels, ls)
		}},
		{"samples", AppendSamples(nil, []Sample{{ID: 1, ST: -5, T: 10, V: math.Inf(-1)}, {ID: 2, T: -3, V: 1.5}}), func(o Decoded) bool {
			return len(o.Samples) == 2 && o.Samples[0].ST == -5 && math.IsInf(o.Samples[0].V, -1) && o.Samples[1].T == -3
		}},
		{"histograms", AppendHistograms(nil, []Histogram{{ID: 3, T: 4, H: h}}, false), func(o Decoded) bool {
			return o.Type == TypeHistograms && o.Histograms[0].H.Equals(h) && o.Histograms[0].H.CounterResetHint == h.CounterResetHint
		}},
		{"float histograms", AppendHistograms(nil, []Histogram{{ID: 3, T: 4, FH: fh}}, true), func(o Decoded) bool {
			return o.Type == TypeFloatHistograms && o.Histograms[0].FH.Equals(fh)
		}},
		{"exemplars", AppendExemplars(nil, []Exemplar{{ID: 9, T: 1, V: 2, HasTs: true, Labels: labels.FromStrings("trace_id", "t")}}), func(o Decoded) bool {
			return o.Exemplars[0].HasTs && o.Exemplars[0].Labels.Get("trace_id") == "t"
		}},
		{"metadata", AppendMetadata(nil, []Metadata{{Metric: "m", Meta: metadata.Metadata{Type: model.MetricTypeGauge, Unit: "bytes", Help: "h"}}}), func(o Decoded) bool {
			return o.Metadata[0].Meta.Type == model.MetricTypeGauge && o.Metadata[0].Meta.Help == "h"
		}},
		{"tombstones", AppendTombstones(nil, []Tombstone{{ID: 1, Mint: math.MinInt64, Maxt: 5}}), func(o Decoded) bool {
			return o.Tombstones[0].Mint == math.MinInt64 && o.Tombstones[0].Maxt == 5
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := d.Decode(tc.rec, &out); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tc.check(out) {
				t.Fatalf("decoded %+v", out)
			}
			for i := 1; i < len(tc.rec); i++ {
				if err := d.Decode(tc.rec[:i], &out); err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated at %d: unexpected error type %v", i, err)
				}
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendSamples(nil, []Sample{{ID: 1, T: 2, V: 3}}))
	f.Add(AppendCompactSamples(nil, []Sample{{ID: 1, T: 2, V: 3}, {ID: 2, ST: 1, T: 2, V: 4}}))
	f.Add(AppendSeries(nil, []Series{{Kind: 1, ID: 7, Labels: labels.FromStrings("a", "b")}}))
	f.Add(AppendHistograms(nil, []Histogram{{ID: 3, T: 4, H: &histogram.Histogram{Count: 1, PositiveSpans: []histogram.Span{{Length: 1}}, PositiveBuckets: []int64{1}}}}, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		var out Decoded
		_ = d.Decode(b, &out)
	})
}

// TestSeriesTenant: a series record with a Tenant is byte for byte the record
// of its whole label set, whatever the tenant label's place among the others.
func TestSeriesTenant(t *testing.T) {
	for _, ls := range []labels.Labels{
		labels.FromStrings("job", "x"),                           // the tenant's label first
		labels.FromStrings("__name__", "up", "job", "x"),         // between
		labels.FromStrings("A", "b", "__name__", "up"),           // last
		labels.FromStrings("__a__", "1", "__z__", "2", "b", "3"), // between two reserved-looking names
	} {
		got := AppendSeries(nil, []Series{{Kind: 1, ID: 3, Labels: ls, Tenant: "team-a"}, {Kind: 1, ID: 4, Labels: ls}})
		want := AppendSeries(nil, []Series{{Kind: 1, ID: 3, Labels: tenant.Add(ls, "team-a")}, {Kind: 1, ID: 4, Labels: ls}})
		if string(got) != string(want) {
			t.Errorf("%s: record %x, want %x", ls, got, want)
		}
		var out Decoded
		if err := new(Decoder).Decode(got, &out); err != nil || tenant.Of(out.Series[0].Labels) != "team-a" {
			t.Errorf("%s: decoded %v, %v", ls, out.Series, err)
		}
	}
}
