package otlp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// gaugeWithAttrs is one resource with a good gauge point and a gauge point
// named bad with n attributes of the given key and value lengths.
func gaugeWithAttrs(n, keyLen, valueLen int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	good := ms.AppendEmpty()
	good.SetName("good")
	p := good.SetEmptyGauge().DataPoints().AppendEmpty()
	p.SetTimestamp(ts(0))
	p.SetDoubleValue(1)
	p.Attributes().PutStr("a", "b")

	bad := ms.AppendEmpty()
	bad.SetName("bad")
	bp := bad.SetEmptyGauge().DataPoints().AppendEmpty()
	bp.SetTimestamp(ts(0))
	bp.SetDoubleValue(2)
	// FromRaw, not PutStr: PutStr looks for the key first, quadratic.
	raw := make(map[string]any, n)
	pad := strings.Repeat("k", max(0, keyLen-8))
	for i := range n {
		raw[fmt.Sprintf("%s%08d", pad, i)] = strings.Repeat("v", valueLen)
	}
	if err := bp.Attributes().FromRaw(raw); err != nil {
		panic(err)
	}
	return md
}

func TestLabelLimits(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxLabelsPerSeries = 10
	opts.MaxLabelNameLength = 20
	opts.MaxLabelValueLength = 30
	for _, tc := range []struct {
		name                  string
		attrs, keyLen, valLen int
		wantRejected          int64
		wantMsg               string
	}{
		// 8 attributes + __name__ + job = 10 labels.
		{"at the count limit", 8, 8, 1, 0, ""},
		{"over the count limit", 9, 8, 1, 1, "series has 11 labels, more than the limit of 10 (limits.remote_write.max_labels_per_series)"},
		{"name at the limit", 1, 20, 1, 0, ""},
		{"name too long", 1, 21, 1, 1, "is 21 bytes, longer than the limit of 20 (limits.otlp.max_label_name_length)"},
		{"value at the limit", 1, 8, 30, 0, ""},
		{"value too long", 1, 8, 31, 1, "value is 31 bytes, longer than the limit of 30 (limits.otlp.max_label_value_length)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing, db := newTestIngester(t, opts)
			res, err := ing.Ingest(context.Background(), gaugeWithAttrs(tc.attrs, tc.keyLen, tc.valLen))
			if err != nil {
				t.Fatal(err)
			}
			if res.DataPoints != 2 || res.Rejected != tc.wantRejected {
				t.Fatalf("result %+v, want 2 points, %d rejected", res, tc.wantRejected)
			}
			if tc.wantRejected > 0 {
				if !strings.Contains(res.Message, tc.wantMsg) || !strings.Contains(res.Message, `metric "bad"`) {
					t.Errorf("message %q lacks %q", res.Message, tc.wantMsg)
				}
				if res.ByReason[ReasonLabelLimit] != 1 {
					t.Errorf("by reason %v", res.ByReason)
				}
			}
			// The good point is stored whatever became of the bad one.
			got := dumpSeries(t, db)
			if len(filterName(got, "good")) != 1 || len(filterName(got, "bad")) != int(1-tc.wantRejected) {
				t.Errorf("stored %v", got)
			}
		})
	}
}

// TestLabelLimitsDerivedSeries: the le of _bucket series and the _bucket
// suffix count against the limits, and a resource whose target_info is too
// large loses its points.
func TestLabelLimitsDerivedSeries(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxLabelsPerSeries = 3
	opts.MaxLabelValueLength = len("lat_bucket") - 1
	ing, _ := newTestIngester(t, opts)
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	h := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	h.SetName("lat")
	h.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := h.Histogram().DataPoints().AppendEmpty()
	hp.SetTimestamp(ts(0))
	hp.ExplicitBounds().FromRaw([]float64{1})
	hp.BucketCounts().FromRaw([]uint64{1, 1})
	res, err := ing.Ingest(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 1 || !strings.Contains(res.Message, `label "__name__" value is 10 bytes`) {
		t.Fatalf("result %+v", res)
	}

	opts = DefaultOptions()
	opts.MaxLabelsPerSeries = 4
	ing, db := newTestIngester(t, opts)
	md = gaugeWithAttrs(0, 0, 0)
	attrs := md.ResourceMetrics().At(0).Resource().Attributes()
	for _, k := range []string{"a", "b", "c", "d"} {
		attrs.PutStr(k, "x")
	}
	res, err = ing.Ingest(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 2 || res.ByReason[ReasonLabelLimit] != 2 || !strings.Contains(res.Message, "resource target_info: series has 6 labels") {
		t.Fatalf("result %+v", res)
	}
	if got := dumpSeries(t, db); len(got) != 0 {
		t.Errorf("stored %v", got)
	}
}

// TestHundredThousandAttributesRefused: the request of the issue (one
// point, 100,000 attributes; it cost the converter minutes) is refused
// before conversion with the limit's name.
func TestHundredThousandAttributesRefused(t *testing.T) {
	ing, db := newTestIngester(t, DefaultOptions())
	md := gaugeWithAttrs(100_000, 10, 10)
	md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() == "good" })
	res, err := ing.Ingest(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	if res.DataPoints != 1 || res.Rejected != 1 || !strings.Contains(res.Message, "series has 100002 labels, more than the limit of 1000 (limits.remote_write.max_labels_per_series)") {
		t.Fatalf("result %+v", res)
	}
	if got := dumpSeries(t, db); len(got) != 0 {
		t.Errorf("stored %v", got)
	}
}

// BenchmarkLabels converts one gauge point with n attributes: old is
// Prometheus' converter alone (its label building is quadratic), new is
// weft's path (labels built by weft, samples by the converter).
func BenchmarkLabels(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		md := gaugeWithAttrs(n, 12, 8)
		md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() == "good" })
		opts := DefaultOptions()
		opts.MaxLabelsPerSeries = n + 10
		ing, err := New(nil, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("old/attrs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			settings := ing.settings
			settings.DisableTargetInfo = false
			conv := prw.NewPrometheusConverter(nil)
			for b.Loop() {
				in := pmetric.NewMetrics()
				md.CopyTo(in)
				conv.Reset(&captureAppender{})
				if _, err := conv.FromMetrics(context.Background(), in, settings); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("new/attrs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in := pmetric.NewMetrics()
				md.CopyTo(in)
				var rej rejections
				app := newCheckedAppender(&captureAppender{}, ing.isRejection, ing.targetInfo)
				if _, err := ing.convert(context.Background(), in, app, &rej); err != nil || rej.n != 0 {
					b.Fatal(err, rej.message())
				}
			}
		})
	}
}
