package ingest

import (
	"errors"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// testLabels returns a 12-label series like a GPU exporter's.
func testLabels(name string, i int) labels.Labels {
	return labels.FromStrings(
		"__name__", name, "cluster", "eu-1", "container", "trainer", "gpu", "3",
		"gpu_uuid", "GPU-8f1c2a", "host", "node-17", "instance", "10.0.0.17:9400", "job", "dcgm",
		"model", "llama-70b", "namespace", "ml", "pod", "trainer-0", "run_id", string(rune('a'+i%26)),
	)
}

// v2Request builds a rich RW 2.0 request: floats with start timestamps and
// metadata, exponential, float and custom-bucket histograms, exemplars out of
// timestamp order, and a series with unsorted label references.
func v2Request(tb testing.TB) *writev2.Request {
	tb.Helper()
	st := writev2.NewSymbolTable()
	t0 := testNow.UnixMilli() - 60_000
	var series []writev2.TimeSeries
	for i := range 3 {
		ls := testLabels("gpu_power_watts", i)
		series = append(series, writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(ls, nil),
			Samples: []writev2.Sample{
				{Value: 250.5 + float64(i), Timestamp: t0, StartTimestamp: t0 - 1000},
				{Value: 251, Timestamp: t0 + 15_000},
			},
			Exemplars: []writev2.Exemplar{
				{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "abc"), nil), Value: 2, Timestamp: t0 + 10},
				{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "def", "span_id", "1"), nil), Value: 1, Timestamp: t0 + 5},
			},
			Metadata: writev2.Metadata{
				Type:    writev2.Metadata_METRIC_TYPE_GAUGE,
				HelpRef: st.Symbolize("Power draw."),
				UnitRef: st.Symbolize("watts"),
			},
		})
	}
	hls := labels.FromStrings("__name__", "step_seconds", "job", "trainer")
	series = append(series, writev2.TimeSeries{
		LabelsRefs: st.SymbolizeLabels(hls, nil),
		Histograms: []writev2.Histogram{
			writev2.FromIntHistogram(t0-5, t0, tsdbutil.GenerateTestHistogram(1)),
			writev2.FromFloatHistogram(0, t0+1, tsdbutil.GenerateTestFloatHistogram(2)),
		},
		Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_HISTOGRAM},
	})
	series = append(series, writev2.TimeSeries{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "nhcb_seconds"), nil),
		Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, t0, tsdbutil.GenerateTestCustomBucketsHistogram(3))},
	})
	// Unsorted references: "zone" before "__name__".
	series = append(series, writev2.TimeSeries{
		LabelsRefs: []uint32{st.Symbolize("zone"), st.Symbolize("b"), st.Symbolize("__name__"), st.Symbolize("unsorted"), st.Symbolize("a"), st.Symbolize("x")},
		Samples:    []writev2.Sample{{Value: -1, Timestamp: t0}},
	})
	return &writev2.Request{Symbols: st.Symbols(), Timeseries: series}
}

func v1Request(tb testing.TB) *prompb.WriteRequest {
	tb.Helper()
	t0 := testNow.UnixMilli() - 60_000
	var series []prompb.TimeSeries
	for i := range 3 {
		series = append(series, prompb.TimeSeries{
			Labels:  prompb.FromLabels(testLabels("gpu_util_ratio", i), nil),
			Samples: []prompb.Sample{{Value: 0.5, Timestamp: t0}, {Value: 0.75, Timestamp: t0 + 15_000}},
			Exemplars: []prompb.Exemplar{
				{Labels: []prompb.Label{{Name: "trace_id", Value: "x"}}, Value: 1, Timestamp: t0 + 3},
				{Labels: []prompb.Label{{Name: "trace_id", Value: "y"}}, Value: 1, Timestamp: t0 + 1},
			},
		})
	}
	series = append(series, prompb.TimeSeries{
		Labels: []prompb.Label{{Name: "__name__", Value: "lat_seconds"}},
		Histograms: []prompb.Histogram{
			prompb.FromIntHistogram(t0, tsdbutil.GenerateTestHistogram(4)),
			prompb.FromFloatHistogram(t0+1, tsdbutil.GenerateTestFloatHistogram(5)),
			prompb.FromIntHistogram(t0+2, tsdbutil.GenerateTestCustomBucketsHistogram(6)),
		},
	})
	series = append(series, prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "zone", Value: "b"}, {Name: "__name__", Value: "unsorted"}},
		Samples: []prompb.Sample{{Value: 3, Timestamp: t0}},
	})
	return &prompb.WriteRequest{
		Timeseries: series,
		Metadata:   []prompb.MetricMetadata{{Type: prompb.MetricMetadata_GAUGE, MetricFamilyName: "gpu_util_ratio", Help: "h"}},
	}
}

func marshal(tb testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	tb.Helper()
	b, err := m.Marshal()
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return b
}

// decodeAppend decodes buf and appends it to a fresh recorder.
func decodeAppend(tb testing.TB, d *Decoder, p Protocol, buf []byte, withExemplarAppender bool) ([]appended, Result, error) {
	tb.Helper()
	b, err := d.Decode(p, buf)
	if err != nil {
		return nil, Result{}, err
	}
	defer b.Release()
	if withExemplarAppender {
		app := &recExAppender{}
		res, err := b.Append(tb.Context(), app)
		return app.calls, res, err
	}
	app := &recAppender{}
	res, err := b.Append(tb.Context(), app)
	return app.calls, res, err
}

func TestRoundTrip(t *testing.T) {
	d := testDecoder()
	for _, tc := range []struct {
		name  string
		proto Protocol
		buf   []byte
		want  []appended
		res   Result
	}{
		{"v2", ProtoV2, marshal(t, v2Request(t)), expectV2(v2Request(t)), Result{Samples: 7, Histograms: 3, Exemplars: 6}},
		{"v1", ProtoV1, marshal(t, v1Request(t)), expectV1(v1Request(t)), Result{Samples: 7, Histograms: 3, Exemplars: 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Twice through the same decoder: the second run reuses pooled arenas.
			for range 2 {
				got, res, err := decodeAppend(t, d, tc.proto, tc.buf, true)
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				compareCalls(t, got, tc.want)
				if res != tc.res {
					t.Fatalf("result %+v, want %+v", res, tc.res)
				}
			}
		})
		// An appender that copies labels gets every series' labels in one
		// reused buffer; each call must still see exactly its own.
		t.Run(tc.name+"/borrowed labels", func(t *testing.T) {
			b, err := d.Decode(tc.proto, tc.buf)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			app := &copyingAppender{}
			if res, err := b.Append(t.Context(), app); err != nil || res != tc.res {
				t.Fatalf("append: %v, result %+v", err, res)
			}
			if !b.borrow {
				t.Fatal("batch did not borrow labels for a copying appender")
			}
			compareCalls(t, app.calls, tc.want)
		})
	}
}

func TestRoundTripMetadataAndOrder(t *testing.T) {
	got, _, err := decodeAppend(t, testDecoder(), ProtoV2, marshal(t, v2Request(t)), true)
	if err != nil {
		t.Fatal(err)
	}
	first := got[0]
	if first.meta.Type != model.MetricTypeGauge || first.meta.Help != "Power draw." || first.meta.Unit != "watts" {
		t.Errorf("metadata %+v", first.meta)
	}
	if first.st != testNow.UnixMilli()-61_000 {
		t.Errorf("start timestamp %d", first.st)
	}
	ex := got[2]
	if ex.kind != "exemplars" || len(ex.exs) != 2 || ex.exs[0].Ts > ex.exs[1].Ts {
		t.Errorf("exemplars not sorted by timestamp: %v", ex)
	}
	last := got[len(got)-1]
	if want := `{__name__="unsorted", a="x", zone="b"}`; last.ls.String() != want {
		t.Errorf("labels %s, want sorted %s", last.ls.String(), want)
	}
	var sawCustom bool
	for _, c := range got {
		if c.h != nil && c.h.Schema == histogram.CustomBucketsSchema {
			sawCustom = len(c.h.CustomValues) > 0
		}
	}
	if !sawCustom {
		t.Error("custom buckets histogram lost its custom values")
	}
}

func TestInlineExemplarsWithoutExemplarAppender(t *testing.T) {
	got, res, err := decodeAppend(t, testDecoder(), ProtoV2, marshal(t, v2Request(t)), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exemplars != 6 {
		t.Fatalf("exemplars written %d, want 6", res.Exemplars)
	}
	// Inline exemplars are recorded right after the series' last sample.
	if got[1].kind != "sample" || got[2].kind != "exemplars" || len(got[2].exs) != 2 {
		t.Fatalf("calls %v %v", got[1], got[2])
	}
}

func TestMalformed(t *testing.T) {
	v2 := marshal(t, v2Request(t))
	v1 := marshal(t, v1Request(t))
	for _, tc := range []struct {
		name  string
		proto Protocol
		buf   []byte
	}{
		{"v2 truncated", ProtoV2, v2[:len(v2)-7]},
		{"v1 truncated", ProtoV1, v1[:len(v1)/2]},
		{"v2 wrong wire type for timeseries", ProtoV2, []byte{5<<3 | 0, 1}},
		{"v2 field zero", ProtoV2, []byte{0, 1}},
		{"v1 length overflows", ProtoV1, []byte{1<<3 | 2, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"v2 bad varint", ProtoV2, []byte{5<<3 | 2, 2, 1<<3 | 0, 0x80}},
		{"v2 packed doubles not multiple of 8", ProtoV2, []byte{5<<3 | 2, 6, 3<<3 | 2, 4, 10<<3 | 2, 2, 1, 2}},
		{"v1 end group without start", ProtoV1, []byte{7<<3 | 4}},
		{"unknown protocol", Protocol(9), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := testDecoder().Decode(tc.proto, tc.buf)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if b != nil {
				t.Fatal("batch returned with error")
			}
		})
	}
}

func TestUnknownFieldsSkipped(t *testing.T) {
	buf := marshal(t, v2Request(t))
	// Prepend unknown fields of every wire type, including a group.
	extra := []byte{
		9<<3 | 0, 5, // varint
		10<<3 | 1, 0, 0, 0, 0, 0, 0, 0, 0, // fixed64
		11<<3 | 2, 2, 'h', 'i', // bytes
		12<<3 | 3, 1<<3 | 0, 1, 12<<3 | 4, // group with a varint inside
		13<<3 | 5, 0, 0, 0, 0, // fixed32
	}
	got, _, err := decodeAppend(t, testDecoder(), ProtoV2, append(extra, buf...), true)
	if err != nil {
		t.Fatal(err)
	}
	compareCalls(t, got, expectV2(v2Request(t)))
}
