package record

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
	"github.com/weftdb/weft/storage/traceentry"
	"github.com/weftdb/weft/storage/tracestore"
)

func testSeries() []Series {
	h := &histogram.Histogram{Count: 5, ZeroCount: 1, Sum: 12.5, Schema: 1, ZeroThreshold: 0.001,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 0}}
	fh := &histogram.FloatHistogram{Count: 3, Sum: 1.5, Schema: 0,
		PositiveSpans: []histogram.Span{{Offset: 1, Length: 1}}, PositiveBuckets: []float64{3}}
	return []Series{
		{
			Labels:     labels.FromStrings("__name__", "gpu_util", "gpu", "0", "host", "n1"),
			FamilyName: "gpu_util",
			Metadata:   metadata.Metadata{Type: "gauge", Unit: "ratio", Help: "GPU utilisation"},
			Samples: []Sample{
				{T: 1_700_000_000_000, V: 0.5},
				{T: 1_700_000_010_000, V: math.NaN(), RejectOOO: true},
				{T: 1_699_999_990_000, ST: 1_699_000_000_000, V: -3, Exemplars: []exemplar.Exemplar{
					{Labels: labels.FromStrings("trace_id", "abc"), Value: 1, Ts: 1_699_999_990_000, HasTs: true},
				}},
			},
		},
		{Labels: labels.FromStrings("__name__", "lat", "le", "+Inf"), Samples: []Sample{{T: 5, H: h}, {T: 6, FH: fh}}},
	}
}

func testStreams() []logstore.PushStream {
	return []logstore.PushStream{
		{Labels: labels.FromStrings("job", "train", "service_name", "train"), Entries: []logentry.Entry{
			{Timestamp: 1_700_000_000_000_000_000, Line: "step 1 loss=0.5"},
			{Timestamp: 1_700_000_000_000_000_001, Line: "", Metadata: labels.FromStrings("trace_id", "00ff", "detected_level", "info")},
		}},
		{Labels: labels.FromStrings("job", "eval"), Entries: []logentry.Entry{{Timestamp: -1, Line: "ünïcode ✓"}}},
	}
}

// testResources are two resources' spans: every field the store keeps set
// on one span or another, trace 1 spread over both resources.
func testResources() []tracestore.ResourceSpans {
	res := func(svc string) *traceentry.Resource {
		return &traceentry.Resource{Attributes: traceentry.Attributes{{Key: "service.name", Value: traceentry.StringValue(svc)}}, DroppedAttributesCount: 1, SchemaURL: "https://opentelemetry.io/schemas/1.26.0"}
	}
	scope := &traceentry.InstrumentationScope{Name: "torch", Version: "2.5", Attributes: traceentry.Attributes{{Key: "k", Value: traceentry.BoolValue(true)}}, SchemaURL: "s"}
	trainer, loader := res("trainer"), res("loader")
	id1, id2 := traceentry.TraceID{15: 1}, traceentry.TraceID{0: 0xff, 15: 2}
	return []tracestore.ResourceSpans{
		{Labels: labels.FromStrings("service_name", "trainer"), Spans: []traceentry.Span{
			{TraceID: id1, SpanID: traceentry.SpanID{7: 1}, TraceState: "a=b", Flags: 1, Name: "step", Kind: traceentry.SpanKindServer,
				StatusCode: traceentry.StatusError, StatusMessage: "nan loss", StartUnixNano: 1_700_000_000_000_000_000, EndUnixNano: 1_700_000_001_000_000_000,
				Attributes: traceentry.Attributes{
					{Key: "step", Value: traceentry.IntValue(42)}, {Key: "loss", Value: traceentry.FloatValue(math.Inf(1))},
					{Key: "ranks", Value: traceentry.ArrayValue(traceentry.IntValue(0), traceentry.StringValue("1"))},
					{Key: "cfg", Value: traceentry.MapValue(traceentry.KeyValue{Key: "lr", Value: traceentry.FloatValue(0.1)})},
					{Key: "blob", Value: traceentry.BytesValue([]byte{0, 1, 2})},
				},
				Events:                 []traceentry.Event{{TimeUnixNano: 1_700_000_000_500_000_000, Name: "checkpoint", Attributes: traceentry.Attributes{{Key: "path", Value: traceentry.StringValue("/ckpt")}}, DroppedAttributesCount: 2}},
				Links:                  []traceentry.Link{{TraceID: id2, SpanID: traceentry.SpanID{7: 9}, TraceState: "x=y", Flags: 1, DroppedAttributesCount: 3}},
				DroppedAttributesCount: 4, DroppedEventsCount: 5, DroppedLinksCount: 6, Scope: scope, Resource: trainer},
			{TraceID: id2, SpanID: traceentry.SpanID{7: 2}, Name: "eval", StartUnixNano: 1_700_000_002_000_000_000, EndUnixNano: 1_700_000_002_000_000_000, Scope: scope, Resource: trainer},
		}},
		{Labels: labels.FromStrings("service_name", "loader", "run_id", "r1"), Spans: []traceentry.Span{
			{TraceID: id1, SpanID: traceentry.SpanID{7: 3}, ParentSpanID: traceentry.SpanID{7: 1}, Name: "load", Kind: traceentry.SpanKindClient,
				StartUnixNano: 1_700_000_000_100_000_000, EndUnixNano: 1_700_000_000_200_000_000, Scope: &traceentry.InstrumentationScope{}, Resource: loader},
		}},
	}
}

// canonical re-encodes a decoded record; two records are equal when their
// canonical encodings are (NaN values compare bit for bit).
func canonical(t testing.TB, rec Record) []byte {
	t.Helper()
	e := NewEncoder()
	switch rec.Kind {
	case KindMetrics:
		return e.AppendMetrics(nil, rec.Series)
	case KindLogs:
		return e.AppendLogs(nil, rec.Streams)
	case KindTraces:
		b, err := e.AppendTraces(nil, rec.Resources)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("kind %v", rec.Kind)
	return nil
}

func TestRoundTrip(t *testing.T) {
	e := NewEncoder()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"metrics", e.AppendMetrics([]byte("prefix"), testSeries())[len("prefix"):]},
		{"logs", e.AppendLogs(nil, testStreams())},
		{"empty metrics", e.AppendMetrics(nil, nil)},
		{"traces", mustTraces(t, e, testResources())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(tc.b)
			rec, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := canonical(t, rec); !bytes.Equal(got, tc.b) {
				t.Fatalf("re-encoded differs:\n got %x\nwant %x", got, tc.b)
			}
		})
	}
	rec, err := Decode(e.AppendMetrics(nil, testSeries()))
	if err != nil {
		t.Fatal(err)
	}
	want := testSeries()
	if len(rec.Series) != len(want) {
		t.Fatalf("got %d series", len(rec.Series))
	}
	s := rec.Series[0]
	if !labels.Equal(s.Labels, want[0].Labels) || s.Metadata != want[0].Metadata || s.FamilyName != "gpu_util" {
		t.Fatalf("series 0: %v %v %q", s.Labels, s.Metadata, s.FamilyName)
	}
	if s.Samples[0].V != 0.5 || !math.IsNaN(s.Samples[1].V) || !s.Samples[1].RejectOOO || s.Samples[2].ST != 1_699_000_000_000 || s.Samples[2].T != 1_699_999_990_000 {
		t.Fatalf("samples: %+v", s.Samples)
	}
	if ex := s.Samples[2].Exemplars; len(ex) != 1 || !ex[0].Equals(want[0].Samples[2].Exemplars[0]) {
		t.Fatalf("exemplars: %+v", ex)
	}
	h := rec.Series[1].Samples
	if !h[0].H.Equals(want[1].Samples[0].H) || !h[1].FH.Equals(want[1].Samples[1].FH) {
		t.Fatalf("histograms: %v %v", h[0].H, h[1].FH)
	}
	lr, err := Decode(e.AppendLogs(nil, testStreams()))
	if err != nil {
		t.Fatal(err)
	}
	ws := testStreams()
	for i := range ws {
		if !labels.Equal(lr.Streams[i].Labels, ws[i].Labels) || len(lr.Streams[i].Entries) != len(ws[i].Entries) {
			t.Fatalf("stream %d: %v", i, lr.Streams[i])
		}
		for j, en := range ws[i].Entries {
			got := lr.Streams[i].Entries[j]
			if got.Timestamp != en.Timestamp || got.Line != en.Line || !labels.Equal(got.Metadata, en.Metadata) {
				t.Fatalf("entry %d/%d: %+v want %+v", i, j, got, en)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good := NewEncoder().AppendLogs(nil, testStreams())
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad magic", []byte{'x', 1, 1, 0}},
		{"future version", []byte{magic, 9, 1, 0}},
		{"unknown kind", []byte{magic, version, 7, 0}},
		{"truncated", good[:len(good)-3]},
		{"trailing bytes", append(bytes.Clone(good), 0)},
		{"huge count", []byte{magic, version, byte(KindLogs), 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"symbol out of range", []byte{magic, version, byte(KindLogs), 0, 1, 1, 5, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(tc.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestPartition(t *testing.T) {
	a := labels.FromStrings("__name__", "up", "job", "a")
	b := labels.FromStrings("__name__", "up", "job", "b")
	if Hash(a) != Hash(labels.FromStrings("job", "a", "__name__", "up")) {
		t.Fatal("hash depends on construction order")
	}
	if Hash(a) == Hash(b) {
		t.Fatal("different label sets hash alike")
	}
	// Name/value boundaries matter: {ab="c"} and {a="bc"} differ.
	if Hash(labels.FromStrings("ab", "c")) == Hash(labels.FromStrings("a", "bc")) {
		t.Fatal("label boundary ignored")
	}
	// The hash is part of the format (XXH64, seed 0, of
	// "__name__\xffup\xffjob\xffa\xff"): a fixed label set keeps its value.
	if got := Hash(a); got != 0x55f2b049ce4a394f {
		t.Fatalf("Hash = %#x", got)
	}
	counts := make([]int, 4)
	for i := range 4000 {
		counts[PartitionOf(labels.FromStrings("__name__", "m", "i", string(rune('a'+i%26))+string(rune(i))), 4)]++
	}
	for p, n := range counts {
		if n < 700 || n > 1300 {
			t.Fatalf("partition %d got %d of 4000 series: %v", p, n, counts)
		}
	}
}

func mustTraces(t testing.TB, e *Encoder, rs []tracestore.ResourceSpans) []byte {
	t.Helper()
	b, err := e.AppendTraces(nil, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTracesRoundTrip: every span field comes back as it went.
func TestTracesRoundTrip(t *testing.T) {
	want := testResources()
	rec, err := Decode(mustTraces(t, NewEncoder(), want))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != KindTraces || len(rec.Resources) != len(want) {
		t.Fatalf("decoded %v with %d resources", rec.Kind, len(rec.Resources))
	}
	for i := range want {
		if !labels.Equal(rec.Resources[i].Labels, want[i].Labels) {
			t.Errorf("resource %d labels %v, want %v", i, rec.Resources[i].Labels, want[i].Labels)
		}
		if !reflect.DeepEqual(rec.Resources[i].Spans, want[i].Spans) {
			t.Errorf("resource %d spans:\n got %+v\nwant %+v", i, rec.Resources[i].Spans, want[i].Spans)
		}
	}
	bad := testResources()
	bad[0].Spans[1].SpanID = traceentry.SpanID{}
	if _, err := Decode(mustTraces(t, NewEncoder(), bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a span with a zero ID decoded: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	e := NewEncoder()
	f.Add(mustTraces(f, e, testResources()))
	f.Add(e.AppendMetrics(nil, testSeries()))
	f.Add(e.AppendLogs(nil, testStreams()))
	f.Add(e.AppendMetrics(nil, nil))
	f.Add([]byte{magic, version, byte(KindMetrics), 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		once := canonical(t, rec)
		rec2, err := Decode(once)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if twice := canonical(t, rec2); !bytes.Equal(once, twice) {
			t.Fatalf("encoding not stable:\n%x\n%x", once, twice)
		}
	})
}
