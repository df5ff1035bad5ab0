package otlp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// mixedPayload has one valid gauge point and five invalid points.
func mixedPayload() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()

	g := ms.AppendEmpty()
	g.SetName("ok")
	gp := g.SetEmptyGauge().DataPoints()
	p := gp.AppendEmpty()
	p.SetTimestamp(ts(0))
	p.SetDoubleValue(1)
	bad := gp.AppendEmpty() // empty attribute key
	bad.SetTimestamp(ts(0))
	bad.Attributes().PutStr("", "x")

	s := ms.AppendEmpty()
	s.SetName("nosemantics")
	s.SetEmptySum() // temporality unspecified
	s.Sum().DataPoints().AppendEmpty().SetTimestamp(ts(0))
	s.Sum().DataPoints().AppendEmpty().SetTimestamp(ts(1))

	e := ms.AppendEmpty()
	e.SetName("hugescale")
	e.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := e.ExponentialHistogram().DataPoints().AppendEmpty()
	ep.SetTimestamp(ts(0))
	ep.SetScale(30)

	h := ms.AppendEmpty()
	h.SetName("badbuckets")
	h.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	hp := h.Histogram().DataPoints().AppendEmpty()
	hp.SetTimestamp(ts(0))
	hp.ExplicitBounds().FromRaw([]float64{1, 2})
	hp.BucketCounts().FromRaw([]uint64{1})
	return md
}

func TestInvalidPointsRejectedOneByOne(t *testing.T) {
	ing, db := newTestIngester(t, DefaultOptions())
	res, err := ing.Ingest(context.Background(), mixedPayload())
	if err != nil {
		t.Fatal(err)
	}
	if res.DataPoints != 6 || res.Rejected != 5 {
		t.Fatalf("result %+v, want 6 points, 5 rejected", res)
	}
	for _, want := range []string{"rejected 5 data points", "invalid label name", "temporality unspecified", "scale 30"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	// Validation mirrors the translator, so it finds all five.
	if len(res.ByReason) != 1 || res.ByReason[ReasonInvalidDataPoint] != 5 {
		t.Errorf("by reason %v, want 5 %s", res.ByReason, ReasonInvalidDataPoint)
	}
	got := dumpSeries(t, db)
	// Only the valid point; no target_info, the resource has no attributes
	// besides the identifying service.name.
	if len(got) != 1 || len(filterName(got, "ok")) != 1 {
		t.Fatalf("stored %v", got)
	}
}

func TestStorageRejectionsCountPerDataPoint(t *testing.T) {
	ing, _ := newTestIngester(t, DefaultOptions())
	ctx := context.Background()
	md := loadJSON(t, "rich.json")
	if _, err := ing.Ingest(ctx, md); err != nil {
		t.Fatal(err)
	}
	// The same payload again with every value changed: each point is a
	// duplicate timestamp with a new value. The classic histogram's five
	// series, the summary's four and the stale marker count as one point each.
	md = loadJSON(t, "rich.json")
	bump(md)
	res, err := ing.Ingest(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != res.DataPoints || res.DataPoints != 9 {
		t.Fatalf("result %+v, want all 9 rejected", res)
	}
	if !strings.Contains(res.Message, "storage rejected sample") {
		t.Fatalf("message %q", res.Message)
	}
	// Changed values at the same timestamps: the storage refuses each
	// point, as a duplicate or (some series) as out of order.
	if res.ByReason[ReasonDuplicate]+res.ByReason[ReasonOutOfOrder] != 9 || res.ByReason[ReasonDuplicate] == 0 {
		t.Fatalf("by reason %v, want 9 duplicate or out-of-order", res.ByReason)
	}
}

// bump changes every value in md so re-sent points conflict.
func bump(md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					for x := range m.Gauge().DataPoints().Len() {
						p := m.Gauge().DataPoints().At(x)
						p.SetFlags(0)
						p.SetDoubleValue(p.DoubleValue() + 100)
					}
				case pmetric.MetricTypeSum:
					for x := range m.Sum().DataPoints().Len() {
						p := m.Sum().DataPoints().At(x)
						p.SetIntValue(p.IntValue() + 100)
					}
				case pmetric.MetricTypeHistogram:
					for x := range m.Histogram().DataPoints().Len() {
						p := m.Histogram().DataPoints().At(x)
						p.SetSum(p.Sum() + 100)
						p.BucketCounts().SetAt(0, p.BucketCounts().At(0)+1)
						p.SetCount(p.Count() + 1)
					}
				case pmetric.MetricTypeExponentialHistogram:
					for x := range m.ExponentialHistogram().DataPoints().Len() {
						p := m.ExponentialHistogram().DataPoints().At(x)
						p.SetZeroCount(p.ZeroCount() + 1)
						p.SetCount(p.Count() + 1)
					}
				case pmetric.MetricTypeSummary:
					for x := range m.Summary().DataPoints().Len() {
						p := m.Summary().DataPoints().At(x)
						p.SetSum(p.Sum() + 100)
						p.SetCount(p.Count() + 1)
						for q := range p.QuantileValues().Len() {
							p.QuantileValues().At(q).SetValue(p.QuantileValues().At(q).Value() + 1)
						}
					}
				}
			}
		}
	}
}

// failingAppendable fails every append while fail is set, as a storage
// whose WAL cannot be written would.
type failingAppendable struct {
	storage.AppendableV2
	fail bool
}

var errDiskFull = errors.New("disk full")

func (f *failingAppendable) AppenderV2(ctx context.Context) storage.AppenderV2 {
	return &failingAppender{AppenderV2: f.AppendableV2.AppenderV2(ctx), fail: f.fail}
}

type failingAppender struct {
	storage.AppenderV2
	fail bool
}

func (f *failingAppender) Append(ref storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	if f.fail {
		return 0, errDiskFull
	}
	return f.AppenderV2.Append(ref, ls, st, t, v, h, fh, opts)
}

func TestRetryableFailureStoresNothingAndUndoesDelta(t *testing.T) {
	_, db := newTestIngester(t, DefaultOptions())
	fa := &failingAppendable{AppendableV2: db, fail: true}
	ing, err := New(fa, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = ing.Ingest(ctx, deltaSum("a", 0, 5))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want ErrUnavailable wrapping disk full", err)
	}
	if got := dumpSeries(t, db); len(got) != 0 {
		t.Fatalf("stored after failure: %v", got)
	}
	// The client retries the same request; the total must count it once.
	fa.fail = false
	if res, err := ing.Ingest(ctx, deltaSum("a", 0, 5)); err != nil || res.Rejected != 0 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	got := filterName(dumpSeries(t, db), "requests_total")
	if len(got) != 1 || !strings.HasSuffix(got[0], " 5") {
		t.Fatalf("after retry: %v", got)
	}
}

func TestTimeSpanBounded(t *testing.T) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	rm.Resource().Attributes().PutStr("cloud.region", "r") // makes target_info
	dps := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	dps.SetName("g")
	ps := dps.SetEmptyGauge().DataPoints()
	ps.AppendEmpty().SetTimestamp(1)       // 1970: 53 years before the next
	ps.AppendEmpty().SetTimestamp(ts(0))   // newest
	ps.AppendEmpty().SetTimestamp(ts(-60)) // a minute earlier: fine
	ing, db := newTestIngester(t, DefaultOptions())
	res, err := ing.Ingest(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 1 || !strings.Contains(res.Message, "more than 24h0m0s before the newest point") {
		t.Fatalf("result %+v", res)
	}
	// target_info covers one minute: a sample every 2m30s → start and end.
	if got := filterName(dumpSeries(t, db), "target_info"); len(got) != 2 {
		t.Fatalf("target_info samples %v", got)
	}
}
