package ingest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
)

// testNow is the injected clock of all ingest tests.
var testNow = time.Unix(1_700_000_000, 0)

// appended is one call recorded by recAppender, in a comparable form.
type appended struct {
	kind string // "sample", "histogram", "exemplars"
	ls   labels.Labels
	st   int64
	t    int64
	v    float64
	h    *histogram.Histogram
	fh   *histogram.FloatHistogram
	meta metadata.Metadata
	exs  []exemplar.Exemplar
}

// String renders a call canonically: NaN equals NaN, nil equals empty.
func (a appended) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s st=%d t=%d v=%x meta=%+v", a.kind, a.ls.String(), a.st, a.t, math.Float64bits(a.v), a.meta)
	if a.h != nil {
		h := *a.h
		fmt.Fprintf(&sb, " h={hint=%d schema=%d zt=%v zc=%d c=%d sum=%v ps=%v pb=%v ns=%v nb=%v cv=%v}", h.CounterResetHint, h.Schema,
			h.ZeroThreshold, h.ZeroCount, h.Count, h.Sum, spansStr(h.PositiveSpans), h.PositiveBuckets, spansStr(h.NegativeSpans), h.NegativeBuckets, h.CustomValues)
	}
	if a.fh != nil {
		h := *a.fh
		fmt.Fprintf(&sb, " fh={hint=%d schema=%d zt=%v zc=%v c=%v sum=%v ps=%v pb=%v ns=%v nb=%v cv=%v}", h.CounterResetHint, h.Schema,
			h.ZeroThreshold, h.ZeroCount, h.Count, h.Sum, spansStr(h.PositiveSpans), h.PositiveBuckets, spansStr(h.NegativeSpans), h.NegativeBuckets, h.CustomValues)
	}
	for _, e := range a.exs {
		fmt.Fprintf(&sb, " ex{%s v=%x t=%d hasTs=%v}", e.Labels.String(), math.Float64bits(e.Value), e.Ts, e.HasTs)
	}
	return sb.String()
}

func spansStr(s []histogram.Span) string {
	if len(s) == 0 {
		return "[]"
	}
	return fmt.Sprint(s)
}

// recAppender records appends; errFn (optional) fails chosen ones.
type recAppender struct {
	calls     []appended
	errFn     func(ls labels.Labels, t int64) error
	committed bool
}

func (r *recAppender) Append(_ storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if r.errFn != nil {
		if err := r.errFn(ls, t); err != nil {
			return 0, err
		}
	}
	kind := "sample"
	if h != nil || fh != nil {
		kind = "histogram"
	}
	r.calls = append(r.calls, appended{kind: kind, ls: ls, st: st, t: t, v: v, h: h, fh: fh, meta: opts.Metadata})
	if len(opts.Exemplars) > 0 {
		r.calls = append(r.calls, appended{kind: "exemplars", ls: ls, exs: slices.Clone(opts.Exemplars)})
	}
	return storage.SeriesRef(ls.Hash()), nil
}

func (r *recAppender) Commit() error   { r.committed = true; return nil }
func (r *recAppender) Rollback() error { return nil }

// recExAppender also implements storage.ExemplarAppenderV2.
type recExAppender struct {
	recAppender
	exErr error
}

func (r *recExAppender) AppendExemplars(ref storage.SeriesRef, ls labels.Labels, exs []exemplar.Exemplar) (storage.SeriesRef, error) {
	r.calls = append(r.calls, appended{kind: "exemplars", ls: ls, exs: slices.Clone(exs)})
	return ref, r.exErr
}

func testDecoder() *Decoder {
	o := DefaultOptions()
	o.Now = func() time.Time { return testNow }
	return NewDecoder(o)
}

// compareCalls fails when got and want differ, showing the first difference.
func compareCalls(tb testing.TB, got, want []appended) {
	tb.Helper()
	n := max(len(got), len(want))
	for i := range n {
		var g, w string
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		if g != w {
			tb.Fatalf("call %d differs (got %d calls, want %d):\n got: %s\nwant: %s", i, len(got), len(want), g, w)
		}
	}
}

// The expectV* functions compute, with Prometheus' own prompb conversions,
// what Append must write: the reference that the decoders are compared to.

func validSeriesLabels(ls labels.Labels) bool {
	if ls.Len() > DefaultMaxLabelsPerSeries {
		return false
	}
	ls = ls.WithoutEmpty()
	if ls.Len() == 0 || ls.Len() > DefaultMaxLabelsPerSeries || !ls.Has(labels.MetricName) {
		return false
	}
	ok := true
	ls.Range(func(l labels.Label) {
		if l.Name == "" || !validUTF8(l.Name) || !validUTF8(l.Value) {
			ok = false
		}
	})
	if ls.Get(labels.MetricName) == "" {
		return false
	}
	_, dup := ls.HasDuplicateLabelNames()
	return ok && !dup
}

func validExemplarLabels(ls labels.Labels) bool {
	if ls.Len() > DefaultMaxLabelsPerSeries {
		return false
	}
	ls = ls.WithoutEmpty()
	ok := true
	ls.Range(func(l labels.Label) {
		if l.Name == "" || !validUTF8(l.Name) || !validUTF8(l.Value) {
			ok = false
		}
	})
	_, dup := ls.HasDuplicateLabelNames()
	return ok && !dup
}

func validUTF8(s string) bool { return utf8.ValidString(s) }

func maxTestT() int64 { return testNow.Add(DefaultMaxFutureSkew).UnixMilli() }

func expectExemplars(calls []appended, ls labels.Labels, exs []exemplar.Exemplar, anyAppended bool) []appended {
	if len(exs) == 0 || !anyAppended {
		return calls
	}
	slices.SortFunc(exs, exemplar.Compare)
	return append(calls, appended{kind: "exemplars", ls: ls, exs: exs})
}

func expectHist(calls []appended, ls labels.Labels, meta metadata.Metadata, st, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) ([]appended, bool) {
	if t > maxTestT() || prepareHistogram(h, fh) != nil {
		return calls, false
	}
	return append(calls, appended{kind: "histogram", ls: ls, st: st, t: t, h: h, fh: fh, meta: meta}), true
}

func expectV2(req *writev2.Request) []appended {
	var calls []appended
	sb := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&sb, req.Symbols)
		if err != nil || !validSeriesLabels(ls) || len(ts.Samples)+len(ts.Histograms) == 0 {
			continue
		}
		ls = ls.WithoutEmpty()
		meta, err := ts.ToMetadata(req.Symbols)
		if err != nil {
			continue
		}
		any := false
		for _, s := range ts.Samples {
			if s.Timestamp > maxTestT() {
				continue
			}
			calls = append(calls, appended{kind: "sample", ls: ls, st: s.StartTimestamp, t: s.Timestamp, v: s.Value, meta: meta})
			any = true
		}
		for _, hp := range ts.Histograms {
			var ok bool
			if hp.IsFloatHistogram() {
				calls, ok = expectHist(calls, ls, meta, hp.StartTimestamp, hp.Timestamp, nil, hp.ToFloatHistogram())
			} else {
				calls, ok = expectHist(calls, ls, meta, hp.StartTimestamp, hp.Timestamp, hp.ToIntHistogram(), nil)
			}
			any = any || ok
		}
		var exs []exemplar.Exemplar
		for _, ep := range ts.Exemplars {
			e, err := ep.ToExemplar(&sb, req.Symbols)
			if err != nil || !validExemplarLabels(e.Labels) || e.Ts > maxTestT() {
				continue
			}
			e.Labels = e.Labels.WithoutEmpty()
			exs = append(exs, e)
		}
		calls = expectExemplars(calls, ls, exs, any)
	}
	return calls
}

func expectV1(req *prompb.WriteRequest) []appended {
	var calls []appended
	sb := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		ls := ts.ToLabels(&sb, nil)
		if len(ts.Labels) > DefaultMaxLabelsPerSeries || !validSeriesLabels(ls) {
			continue
		}
		ls = ls.WithoutEmpty()
		any := false
		for _, s := range ts.Samples {
			if s.Timestamp > maxTestT() {
				continue
			}
			calls = append(calls, appended{kind: "sample", ls: ls, t: s.Timestamp, v: s.Value})
			any = true
		}
		for _, hp := range ts.Histograms {
			var ok bool
			if hp.IsFloatHistogram() {
				calls, ok = expectHist(calls, ls, metadata.Metadata{}, 0, hp.Timestamp, nil, hp.ToFloatHistogram())
			} else {
				calls, ok = expectHist(calls, ls, metadata.Metadata{}, 0, hp.Timestamp, hp.ToIntHistogram(), nil)
			}
			any = any || ok
		}
		var exs []exemplar.Exemplar
		for _, ep := range ts.Exemplars {
			e := ep.ToExemplar(&sb, nil)
			if len(ep.Labels) > DefaultMaxLabelsPerSeries || !validExemplarLabels(e.Labels) || e.Ts > maxTestT() {
				continue
			}
			e.Labels = e.Labels.WithoutEmpty()
			exs = append(exs, e)
		}
		calls = expectExemplars(calls, ls, exs, any)
	}
	return calls
}

func isRejectErr(err error) bool {
	_, ok := err.(*RejectError)
	return ok
}
