package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	weftstorage "github.com/weftdb/weft/storage"
)

// v2Batch builds a RW2 request from one "good" series plus bad, where bad
// gets the symbol table to add its own symbols.
func v2Batch(tb testing.TB, bad func(st *writev2.SymbolsTable) writev2.TimeSeries) []byte {
	tb.Helper()
	st := writev2.NewSymbolTable()
	t0 := testNow.UnixMilli()
	good := writev2.TimeSeries{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "good", "job", "a"), nil),
		Samples:    []writev2.Sample{{Value: 1, Timestamp: t0}},
	}
	b := bad(&st)
	return marshal(tb, &writev2.Request{Symbols: st.Symbols(), Timeseries: []writev2.TimeSeries{good, b}})
}

func refs(st *writev2.SymbolsTable, kv ...string) []uint32 {
	out := make([]uint32, len(kv))
	for i, s := range kv {
		out[i] = st.Symbolize(s)
	}
	return out
}

func oneSample() []writev2.Sample {
	return []writev2.Sample{{Value: 2, Timestamp: testNow.UnixMilli()}}
}

func TestAppendRejectsInvalidSeries(t *testing.T) {
	manyLabels := func(st *writev2.SymbolsTable) writev2.TimeSeries {
		r := refs(st, "__name__", "wide")
		for i := range 10_000 {
			r = append(r, refs(st, fmt.Sprintf("l%05d", i), "v")...)
		}
		return writev2.TimeSeries{LabelsRefs: r, Samples: oneSample()}
	}
	for _, tc := range []struct {
		name     string
		bad      func(st *writev2.SymbolsTable) writev2.TimeSeries
		reason   Reason
		rejected int
		msg      string
	}{
		{"invalid utf-8 value", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x", "pod", "\xff\xfe"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, `value of label "pod" is not valid UTF-8`},
		{"invalid utf-8 name", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x", "p\xffd", "1"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "is not valid UTF-8"},
		{"empty label name", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x", "", "1"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "empty label name"},
		{"duplicate label names", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x", "pod", "a", "pod", "b"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, `duplicate label name "pod"`},
		{"empty label set", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "empty label set"},
		{"only empty values", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "", "a", ""), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "empty label set"},
		{"missing metric name", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "job", "x"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, `missing metric name (__name__) in series {job="x"}`},
		{"odd label references", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x", "job"), Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "odd number of label references (3)"},
		{"reference outside symbols", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: []uint32{st.Symbolize("__name__"), 9999}, Samples: oneSample()}
		}, ReasonInvalidLabels, 1, "outside of symbols table"},
		{"10,000 labels", manyLabels, ReasonTooManyLabels, 1, `series {__name__="wide", ...} has 10001 labels, more than the limit of 1000`},
		{"no samples", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x")}
		}, ReasonEmptySeries, 0, `series {__name__="x"} has no samples or histograms`},
		{"metadata outside symbols", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x"), Samples: oneSample(), Metadata: writev2.Metadata{HelpRef: 5000}}
		}, ReasonInvalidMetadata, 1, "help_ref 5000 outside of symbols table"},
		{"far in the future", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x"), Samples: []writev2.Sample{{Value: 1, Timestamp: testNow.UnixMilli() + 86_400_000}}}
		}, ReasonTooFarInFuture, 1, fmt.Sprintf(`too far in the future: series {__name__="x"} timestamp %d`, testNow.UnixMilli()+86_400_000)},
		{"invalid histogram", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			h := tsdbutil.GenerateTestHistogram(1)
			h.Count = 1 // fewer than the buckets hold
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x"), Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, testNow.UnixMilli(), h)}}
		}, ReasonInvalidHistogram, 1, "invalid histogram: series {__name__=\"x\"} timestamp"},
		{"unknown histogram schema", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			h := tsdbutil.GenerateTestHistogram(1)
			h.Schema = 60
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x"), Histograms: []writev2.Histogram{writev2.FromIntHistogram(0, testNow.UnixMilli(), h)}}
		}, ReasonInvalidHistogram, 1, "schema"},
		{"exemplar with invalid utf-8", func(st *writev2.SymbolsTable) writev2.TimeSeries {
			return writev2.TimeSeries{LabelsRefs: refs(st, "__name__", "x"), Samples: oneSample(),
				Exemplars: []writev2.Exemplar{{LabelsRefs: refs(st, "trace_id", "\xff"), Timestamp: testNow.UnixMilli()}}}
		}, ReasonInvalidExemplar, 1, "invalid exemplar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testDecoder()
			b, err := d.Decode(ProtoV2, v2Batch(t, tc.bad))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			defer b.Release()
			app := &recExAppender{}
			res, err := b.Append(t.Context(), app)
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("err = %v, want ErrRejected", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not contain %q", err.Error(), tc.msg)
			}
			if res.Rejected[tc.reason] != tc.rejected {
				t.Errorf("rejected[%s] = %d, want %d (all: %v)", tc.reason, res.Rejected[tc.reason], tc.rejected, res.Rejected)
			}
			// The valid series of the same batch is written.
			if res.Samples < 1 || app.calls[0].ls.Get("__name__") != "good" {
				t.Errorf("valid series not written: %+v %v", res, app.calls)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error message is %d bytes; must stay short", len(err.Error()))
			}
		})
	}
}

func TestAppendV1RejectsInvalidSeries(t *testing.T) {
	t0 := testNow.UnixMilli()
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "good"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "dup"}, {Name: "a", Value: "1"}, {Name: "a", Value: "2"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
		{Labels: nil, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "bad\xff"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}, {Value: 2, Timestamp: t0 + 1}}},
		{Labels: []prompb.Label{{Name: "z", Value: "1"}, {Name: "__name__", Value: "sorted_later"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
	}}
	calls, res, err := decodeAppend(t, testDecoder(), ProtoV1, marshal(t, req), false)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v", err)
	}
	if res.Samples != 2 || res.Rejected[ReasonInvalidLabels] != 4 {
		t.Fatalf("result %+v", res)
	}
	if got := calls[1].ls.String(); got != `{__name__="sorted_later", z="1"}` {
		t.Errorf("unsorted labels stored as %s", got)
	}
	var re *RejectError
	if !errors.As(err, &re) || re.Total != 3 || len(re.Messages) != 3 {
		t.Fatalf("reject error %+v", re)
	}
}

func TestAppendStorageErrors(t *testing.T) {
	t0 := testNow.UnixMilli()
	mk := func(names ...string) []byte {
		req := &prompb.WriteRequest{}
		for _, n := range names {
			req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
				Labels: []prompb.Label{{Name: "__name__", Value: n}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}},
			})
		}
		return marshal(t, req)
	}
	for _, tc := range []struct {
		name      string
		err       error
		reason    Reason
		retryable bool
		msg       string
	}{
		{"out of order", storage.ErrOutOfOrderSample, ReasonOutOfOrder, false, fmt.Sprintf(`out of order: series {__name__="bad"} timestamp %d: wrapped: out of order sample`, t0)},
		{"too old", storage.ErrTooOldSample, ReasonOutOfWindow, false, "out of window: series"},
		{"weft out of window", weftstorage.ErrOutOfWindow, ReasonOutOfWindow, false, "out of window: series"},
		{"out of bounds", storage.ErrOutOfBounds, ReasonOutOfWindow, false, "out of window"},
		{"duplicate", storage.NewDuplicateFloatErr(t0, 1, 2), ReasonDuplicate, false, "duplicate sample: series"},
		{"weft duplicate", weftstorage.ErrDuplicateSample, ReasonDuplicate, false, "duplicate sample"},
		{"weft invalid labels", weftstorage.ErrInvalidLabels, ReasonInvalidLabels, false, "invalid labels"},
		{"histogram error", histogram.ErrHistogramCountMismatch, ReasonInvalidHistogram, false, "invalid histogram"},
		{"disk full", errors.New("disk full"), 0, true, "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := testDecoder().Decode(ProtoV1, mk("a", "bad", "c"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Release()
			app := &recAppender{errFn: func(ls labels.Labels, _ int64) error {
				if ls.Get("__name__") == "bad" {
					return fmt.Errorf("wrapped: %w", tc.err)
				}
				return nil
			}}
			res, err := b.Append(t.Context(), app)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.msg)
			}
			if !errors.Is(err, tc.err) && !errors.Is(tc.err, histogram.ErrHistogramCountMismatch) {
				t.Errorf("errors.Is(err, %v) = false", tc.err)
			}
			if tc.retryable {
				if errors.Is(err, ErrRejected) {
					t.Fatal("retryable storage error reported as a rejection")
				}
				return
			}
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("client error not reported as a rejection: %v", err)
			}
			if res.Samples != 2 || res.Rejected[tc.reason] != 1 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestAppendErrorMessagesCapped(t *testing.T) {
	req := &prompb.WriteRequest{}
	for range 50 {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{{Name: "job", Value: "x"}}, Samples: []prompb.Sample{{Value: 1}}})
	}
	_, res, err := decodeAppend(t, testDecoder(), ProtoV1, marshal(t, req), false)
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	if len(re.Messages) != DefaultMaxErrorMessages || re.Total != 50 || res.Rejected[ReasonInvalidLabels] != 50 {
		t.Fatalf("messages %d total %d rejected %d", len(re.Messages), re.Total, res.Rejected[ReasonInvalidLabels])
	}
	if !strings.HasSuffix(err.Error(), "(and 40 more rejections)") {
		t.Errorf("message tail: %q", err.Error()[len(err.Error())-60:])
	}
}

func TestAppendStopsOnCanceledContext(t *testing.T) {
	b, err := testDecoder().Decode(ProtoV2, marshal(t, v2Request(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	app := &recAppender{}
	if _, err := b.Append(ctx, app); !errors.Is(err, context.Canceled) || errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(app.calls) != 0 {
		t.Fatalf("appended %d calls after cancel", len(app.calls))
	}
}

func TestAppendOutOfOrderExemplarIsClientError(t *testing.T) {
	b, err := testDecoder().Decode(ProtoV2, marshal(t, v2Request(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	app := &recExAppender{exErr: &storage.AppendPartialError{ExemplarErrors: []storage.ExemplarError{{Index: 0, Err: storage.ErrOutOfOrderExemplar}}}}
	res, err := b.Append(t.Context(), app)
	if !errors.Is(err, ErrRejected) || !errors.Is(err, storage.ErrOutOfOrderExemplar) {
		t.Fatalf("err = %v", err)
	}
	// Three series with two exemplars each; one of each pair failed.
	if res.Exemplars != 3 || res.Rejected[ReasonInvalidExemplar] != 3 || res.Samples != 7 {
		t.Fatalf("result %+v", res)
	}
}

func TestFamilyName(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  model.MetricType
		want string
	}{
		{"http_duration_seconds_bucket", model.MetricTypeHistogram, "http_duration_seconds"},
		{"http_duration_seconds_sum", model.MetricTypeHistogram, "http_duration_seconds"},
		{"http_duration_seconds_count", model.MetricTypeGaugeHistogram, "http_duration_seconds"},
		{"http_duration_seconds", model.MetricTypeHistogram, "http_duration_seconds"}, // native histogram
		{"rpc_latency_seconds_sum", model.MetricTypeSummary, "rpc_latency_seconds"},
		{"rpc_latency_seconds_bucket", model.MetricTypeSummary, "rpc_latency_seconds_bucket"},
		{"requests_count", model.MetricTypeCounter, "requests_count"},
		{"_count", model.MetricTypeHistogram, "_count"},
	} {
		if got := familyName(c.name, c.typ); got != c.want {
			t.Errorf("familyName(%q, %s) = %q, want %q", c.name, c.typ, got, c.want)
		}
	}
}

// A label value too long for Prometheus' label encoding (16 MiB) is a
// client error naming the label, whichever path builds the labels, and the
// other series of the request are stored.
func TestAppendRejectsOverlongLabel(t *testing.T) {
	t0 := testNow.UnixMilli()
	huge := strings.Repeat("x", maxLabelBytes+1)
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: []prompb.Label{{Name: "__name__", Value: "good"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
		{Labels: []prompb.Label{{Name: "__name__", Value: "long"}, {Name: "a", Value: huge}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
		{Labels: []prompb.Label{{Name: "b", Value: huge}, {Name: "__name__", Value: "long_unsorted"}}, Samples: []prompb.Sample{{Value: 1, Timestamp: t0}}},
	}}
	calls, res, err := decodeAppend(t, testDecoder(), ProtoV1, marshal(t, req), false)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v", err)
	}
	if res.Samples != 1 || res.Rejected[ReasonInvalidLabels] != 2 || len(calls) != 1 {
		t.Fatalf("result %+v, %d calls", res, len(calls))
	}
	if !strings.Contains(err.Error(), `value of label "a" is 16777216 bytes`) || !strings.Contains(err.Error(), `value of label "b"`) {
		t.Fatalf("error does not name the labels: %.300s", err)
	}
}
