package otlp

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/weftdb/weft/ingest/workload"
)

const sec = int64(time.Second)

func ts(s int64) pcommon.Timestamp { return pcommon.Timestamp(1_700_000_000*sec + s*sec) }

// deltaSum builds one delta monotonic sum point per value, 10 s apart,
// starting at start seconds, for a stream identified by pod.
func deltaSum(pod string, start int64, vals ...int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	rm.Resource().Attributes().PutStr("k8s.pod.name", pod)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("requests")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	for i, v := range vals {
		p := s.DataPoints().AppendEmpty()
		p.SetStartTimestamp(ts(start + int64(i)*10))
		p.SetTimestamp(ts(start + int64(i+1)*10))
		p.SetIntValue(v)
	}
	return md
}

func TestDeltaSumToCumulative(t *testing.T) {
	opts := DefaultOptions()
	opts.Workload = workload.Options{}
	ing, db := newTestIngester(t, opts)
	ctx := context.Background()
	for i, md := range []pmetric.Metrics{deltaSum("a", 0, 5, 3), deltaSum("a", 20, 2), deltaSum("b", 0, 1)} {
		res, err := ing.Ingest(ctx, md)
		if err != nil {
			t.Fatal(err)
		}
		// Pods a and b are distinct delta streams but, without workload
		// labels, the same Prometheus series: b's point at t=10 is out of
		// order there and rejected by storage.
		wantRejected := int64(0)
		if i == 2 {
			wantRejected = 1
		}
		if res.Rejected != wantRejected {
			t.Fatalf("request %d: %+v", i, res)
		}
	}
	got := dumpSeries(t, db)
	want := []string{
		`{__name__="requests_total", job="svc"} 1700000010000 5`,
		`{__name__="requests_total", job="svc"} 1700000020000 8`,
		`{__name__="requests_total", job="svc"} 1700000030000 10`,
	}
	if strings.Join(filterName(got, "requests_total"), "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func filterName(lines []string, name string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{__name__="`+name+`"`) {
			out = append(out, l)
		}
	}
	return out
}

func TestDeltaOutOfOrderRejected(t *testing.T) {
	ing, _ := newTestIngester(t, DefaultOptions())
	ctx := context.Background()
	if _, err := ing.Ingest(ctx, deltaSum("a", 0, 5, 3)); err != nil {
		t.Fatal(err)
	}
	res, err := ing.Ingest(ctx, deltaSum("a", 0, 1)) // ends at t=10, before t=20
	if err != nil {
		t.Fatal(err)
	}
	if res.Rejected != 1 || !strings.Contains(res.Message, "delta point out of order") {
		t.Fatalf("result %+v", res)
	}
}

func TestDeltaStateBounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	opts := DefaultOptions()
	opts.Delta = DeltaOptions{MaxStreams: 2, MaxIdle: time.Minute, Now: func() time.Time { return now }}
	ing, db := newTestIngester(t, opts)
	ctx := context.Background()
	ingest := func(md pmetric.Metrics) {
		t.Helper()
		if res, err := ing.Ingest(ctx, md); err != nil || res.Rejected != 0 {
			t.Fatalf("ingest: %+v %v", res, err)
		}
	}
	ingest(deltaSum("a", 0, 1))
	ingest(deltaSum("b", 0, 1))
	ingest(deltaSum("c", 0, 1)) // evicts a, the least recently updated
	if n := ing.delta.Len(); n != 2 {
		t.Fatalf("streams %d, want 2", n)
	}
	ingest(deltaSum("a", 10, 4)) // a restarts from zero
	now = now.Add(2 * time.Minute)
	ingest(deltaSum("b", 10, 4)) // a, c expired; b restarts too
	if n := ing.delta.Len(); n != 1 {
		t.Fatalf("streams %d after expiry, want 1", n)
	}
	got := filterName(dumpSeries(t, db), "requests_total")
	want := []string{
		`{__name__="requests_total", job="svc", pod="a"} 1700000010000 1`,
		`{__name__="requests_total", job="svc", pod="a"} 1700000020000 4`,
		`{__name__="requests_total", job="svc", pod="b"} 1700000010000 1`,
		`{__name__="requests_total", job="svc", pod="b"} 1700000020000 4`,
		`{__name__="requests_total", job="svc", pod="c"} 1700000010000 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDeltaHistograms(t *testing.T) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "svc")
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	h := ms.AppendEmpty()
	h.SetName("lat")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	e := ms.AppendEmpty()
	e.SetName("elat")
	eh := e.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	for i := range 2 {
		p := hh.DataPoints().AppendEmpty()
		p.SetStartTimestamp(ts(int64(i) * 10))
		p.SetTimestamp(ts(int64(i+1) * 10))
		p.ExplicitBounds().FromRaw([]float64{1, 2})
		p.BucketCounts().FromRaw([]uint64{1, 2, uint64(i)})
		p.SetCount(3 + uint64(i))
		p.SetSum(4)
		q := eh.DataPoints().AppendEmpty()
		q.SetStartTimestamp(ts(int64(i) * 10))
		q.SetTimestamp(ts(int64(i+1) * 10))
		// first point at scale 2, second at scale 1: merged at scale 1.
		q.SetScale(int32(2 - i))
		q.Positive().SetOffset(int32(1 - i))
		q.Positive().BucketCounts().FromRaw([]uint64{1, 1})
		q.SetZeroCount(1)
		q.SetCount(3)
		q.SetSum(5)
	}
	ing, db := newTestIngester(t, DefaultOptions())
	if res, err := ing.Ingest(context.Background(), md); err != nil || res.Rejected != 0 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	got := dumpSeries(t, db)
	for _, w := range []string{
		`{__name__="lat_bucket", job="svc", le="2"} 1700000020000 6`,
		`{__name__="lat_bucket", job="svc", le="+Inf"} 1700000020000 7`,
		`{__name__="lat_count", job="svc"} 1700000020000 7`,
		`{__name__="lat_sum", job="svc"} 1700000020000 8`,
		// scale 2 buckets 1,2 → scale 1 buckets 0,1; plus scale-1 buckets 0,1.
		`{__name__="elat", job="svc"} 1700000020000 {count:6, sum:10, [-1e-128,1e-128]:2, (1,1.414213562373095]:2, (1.414213562373095,2]:2}`,
	} {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("missing %s in\n%s", w, strings.Join(got, "\n"))
		}
	}
}
