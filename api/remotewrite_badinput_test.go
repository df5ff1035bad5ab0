package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestRemoteWriteBadInput drives the receiver over weft's storage with every
// kind of bad input: each gets a 4xx that names the reason, the valid series
// of the same batch are stored (checked through a Querier), and the handler
// keeps serving afterwards.
func TestRemoteWriteBadInput(t *testing.T) {
	db := rwOpenWeft(t)
	h := NewRemoteWriteHandler(db, DefaultRemoteWriteOptions())
	now := time.Now()
	t0 := now.UnixMilli()

	// Seed a series so that a far-past sample of it is out of window (and
	// one of a new series is older than the retention).
	st := writev2.NewSymbolTable()
	seed := rwMarshal(t, &writev2.Request{Timeseries: []writev2.TimeSeries{
		rwV2Series(&st, labels.FromStrings("__name__", "seeded", "job", "a"), writev2.Sample{Value: 1, Timestamp: t0}),
	}, Symbols: st.Symbols()})
	if rec := rwPost(t, h, rwCTV2, seed); rec.Code != http.StatusNoContent {
		t.Fatalf("seed: %d %q", rec.Code, rec.Body.String())
	}

	st = writev2.NewSymbolTable()
	ref := func(s ...string) []uint32 {
		out := make([]uint32, len(s))
		for i, x := range s {
			out[i] = st.Symbolize(x)
		}
		return out
	}
	sample := []writev2.Sample{{Value: 1, Timestamp: t0}}
	wide := ref("__name__", "wide")
	for i := range 10_000 {
		wide = append(wide, ref(fmt.Sprintf("label_%05d", i), "v")...)
	}
	farFuture := now.Add(365 * 24 * time.Hour).UnixMilli()
	series := []writev2.TimeSeries{
		{LabelsRefs: ref("__name__", "good_a", "gpu", "0"), Samples: sample},
		{LabelsRefs: ref("__name__", "bad_utf8", "pod", "\xc3\x28"), Samples: sample},
		{LabelsRefs: ref("__name__", "dup_names", "pod", "a", "pod", "b"), Samples: sample},
		{LabelsRefs: nil, Samples: sample},
		{LabelsRefs: wide, Samples: sample},
		{LabelsRefs: ref("__name__", "future"), Samples: []writev2.Sample{{Value: 1, Timestamp: farFuture}}},
		{LabelsRefs: ref("__name__", "seeded", "job", "a"), Samples: []writev2.Sample{{Value: 2, Timestamp: 1000}}},
		{LabelsRefs: ref("__name__", "new_far_past"), Samples: []writev2.Sample{{Value: 2, Timestamp: 1000}}},
		{LabelsRefs: ref("job", "x", "__name__", "good_b"), Samples: []writev2.Sample{{Value: 1, Timestamp: t0}, {Value: 2, Timestamp: t0 + 1000}}},
	}
	rec := rwPost(t, h, rwCTV2, rwMarshal(t, &writev2.Request{Symbols: st.Symbols(), Timeseries: series}))
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("bad batch: %d %q", rec.Code, rec.Body.String())
	}
	body := rec.Body.String()
	for _, want := range []string{
		`invalid labels: value of label "pod" is not valid UTF-8 in series {__name__="bad_utf8", pod="\xc3("}`,
		`invalid labels: duplicate label name "pod" in series {__name__="dup_names", pod="a", pod="b"}`,
		"invalid labels: empty label set",
		`too many labels: series {__name__="wide", ...} has 10001 labels, more than the limit of 1000`,
		fmt.Sprintf(`too far in the future: series {__name__="future"} timestamp %d`, farFuture),
		`out of window: series {__name__="seeded", job="a"} timestamp 1000`,
		`out of window: series {__name__="new_far_past"} timestamp 1000`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if len(body) > 8192 {
		t.Errorf("error body is %d bytes", len(body))
	}
	if got := rec.Header().Get(rwSamplesWrittenHeader); got != "3" {
		t.Errorf("samples written header %q, want 3", got)
	}

	// Corrupt bodies: nothing written, clear reasons.
	for name, tc := range map[string]struct {
		raw  []byte
		code int
		want string
	}{
		"corrupt snappy":     {[]byte("\x10\xff\xff garbage"), http.StatusBadRequest, "corrupt snappy body"},
		"snappy bomb":        {[]byte("\xff\xff\xff\x7f garbage"), http.StatusRequestEntityTooLarge, "decompressed body of 268435455 bytes exceeds the limit"},
		"truncated protobuf": {s2.EncodeSnappy(nil, rwMarshal(t, &writev2.Request{Symbols: st.Symbols(), Timeseries: series})[:100]), http.StatusBadRequest, "malformed remote write request"},
	} {
		rec := rwPostRaw(t, h, rwCTV2, "snappy", tc.raw)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %q", name, rec.Code, rec.Body.String())
		}
	}

	// RW 1.0: an out-of-window sample is a 400, the rest is stored.
	v1 := rwMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		rwV1Series(labels.FromStrings("__name__", "seeded", "job", "a"), prompb.Sample{Value: 3, Timestamp: 2000}),
		rwV1Series(labels.FromStrings("__name__", "good_v1"), prompb.Sample{Value: 1, Timestamp: t0}),
	}})
	if rec := rwPost(t, h, rwCTV1, v1); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "out of window") {
		t.Errorf("rw1 out of window: %d %q", rec.Code, rec.Body.String())
	}

	// The handler keeps serving.
	if rec := rwPost(t, h, rwCTV1, rwValidV1(t)); rec.Code != http.StatusNoContent {
		t.Fatalf("after bad input: %d %q", rec.Code, rec.Body.String())
	}

	got := rwStored(t, db)
	want := map[string]int{
		`{__name__="seeded", job="a"}`: 1,
		`{__name__="good_a", gpu="0"}`: 1,
		`{__name__="good_b", job="x"}`: 2,
		`{__name__="good_v1"}`:         1,
		`{__name__="up", job="a"}`:     1,
		`{__name__="up", job="b"}`:     2,
	}
	if strings.Join(rwKeys(got), "\n") != strings.Join(rwKeys(want), "\n") {
		t.Fatalf("stored series:\n%s\nwant:\n%s", strings.Join(rwKeys(got), "\n"), strings.Join(rwKeys(want), "\n"))
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s has %d samples, want %d", k, got[k], n)
		}
	}
}

// TestRemoteWriteStoresEverything checks that floats with start timestamps,
// native histograms (integer, float, custom buckets), exemplars and metadata
// reach weft's storage.
func TestRemoteWriteStoresEverything(t *testing.T) {
	db := rwOpenWeft(t)
	h := NewRemoteWriteHandler(db, DefaultRemoteWriteOptions())
	rec := rwPost(t, h, rwCTV2, rwValidV2(t))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
	for k, want := range map[string]string{rwSamplesWrittenHeader: "1", rwHistogramsWrittenHeader: "1", rwExemplarsWrittenHeader: "1"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	got := rwStored(t, db)
	if got[`{__name__="gpu_temp_celsius", gpu="0"}`] != 1 || got[`{__name__="step_seconds"}`] != 1 {
		t.Fatalf("stored %v", got)
	}
	md, err := db.Metadata(t.Context(), "gpu_temp_celsius", -1)
	if err != nil {
		t.Fatal(err)
	}
	if m := md["gpu_temp_celsius"]; len(m) != 1 || m[0].Help != "GPU temperature." || m[0].Unit != "celsius" || string(m[0].Type) != "gauge" {
		t.Errorf("metadata %+v", md)
	}
	eq, err := db.ExemplarQuerier(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(0, 1<<62, []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_temp_celsius")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Exemplars) != 1 || res[0].Exemplars[0].Labels.Get("trace_id") != "t1" {
		t.Errorf("exemplars %+v", res)
	}
}
