package e2e_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/labels"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/workload"
)

// richPayload is ingest/otlp's golden payload (every metric type,
// exemplars, a no-recorded-value point, workload context attributes) moved
// so that its newest point is at newest.
func richPayload(tb testing.TB, newest time.Time) pmetric.Metrics {
	tb.Helper()
	b, err := os.ReadFile("../ingest/otlp/testdata/rich.json")
	if err != nil {
		tb.Fatal(err)
	}
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
	if err != nil {
		tb.Fatal(err)
	}
	const goldenNewest = 1_700_000_030 * int64(time.Second)
	shiftTimestamps(md, newest.UnixNano()-goldenNewest)
	return md
}

// shiftTimestamps adds d nanoseconds to every timestamp in md.
func shiftTimestamps(md pmetric.Metrics, d int64) {
	sh := func(t pcommon.Timestamp) pcommon.Timestamp {
		if t == 0 {
			return 0
		}
		return pcommon.Timestamp(int64(t) + d)
	}
	exs := func(es pmetric.ExemplarSlice) {
		for i := range es.Len() {
			es.At(i).SetTimestamp(sh(es.At(i).Timestamp()))
		}
	}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					shiftNumbers(m.Gauge().DataPoints(), sh, exs)
				case pmetric.MetricTypeSum:
					shiftNumbers(m.Sum().DataPoints(), sh, exs)
				case pmetric.MetricTypeHistogram:
					for x := range m.Histogram().DataPoints().Len() {
						p := m.Histogram().DataPoints().At(x)
						p.SetTimestamp(sh(p.Timestamp()))
						p.SetStartTimestamp(sh(p.StartTimestamp()))
						exs(p.Exemplars())
					}
				case pmetric.MetricTypeExponentialHistogram:
					for x := range m.ExponentialHistogram().DataPoints().Len() {
						p := m.ExponentialHistogram().DataPoints().At(x)
						p.SetTimestamp(sh(p.Timestamp()))
						p.SetStartTimestamp(sh(p.StartTimestamp()))
						exs(p.Exemplars())
					}
				case pmetric.MetricTypeSummary:
					for x := range m.Summary().DataPoints().Len() {
						p := m.Summary().DataPoints().At(x)
						p.SetTimestamp(sh(p.Timestamp()))
						p.SetStartTimestamp(sh(p.StartTimestamp()))
					}
				}
			}
		}
	}
}

func shiftNumbers(ps pmetric.NumberDataPointSlice, sh func(pcommon.Timestamp) pcommon.Timestamp, exs func(pmetric.ExemplarSlice)) {
	for x := range ps.Len() {
		p := ps.At(x)
		p.SetTimestamp(sh(p.Timestamp()))
		p.SetStartTimestamp(sh(p.StartTimestamp()))
		exs(p.Exemplars())
	}
}

// deltaPayloads are three consecutive delta requests (10 s apart, ending at
// end) of a monotonic sum, an up-down sum, a classic histogram, and an
// exponential histogram whose scale drops from 3 to 1 and back up to 2.
func deltaPayloads(end time.Time) []pmetric.Metrics {
	var out []pmetric.Metrics
	for i := range 3 {
		t := pcommon.NewTimestampFromTime(end.Add(time.Duration(i-2) * 10 * time.Second))
		st := pcommon.NewTimestampFromTime(end.Add(time.Duration(i-3) * 10 * time.Second))
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "delta-svc")
		rm.Resource().Attributes().PutStr("service.instance.id", "i-1")
		rm.Resource().Attributes().PutStr("k8s.pod.name", "p-1")
		ms := rm.ScopeMetrics().AppendEmpty().Metrics()

		c := ms.AppendEmpty()
		c.SetName("jobs.completed")
		cs := c.SetEmptySum()
		cs.SetIsMonotonic(true)
		cs.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		for _, q := range []string{"a", "b"} {
			p := cs.DataPoints().AppendEmpty()
			p.Attributes().PutStr("queue", q)
			p.SetStartTimestamp(st)
			p.SetTimestamp(t)
			p.SetIntValue(int64(3*i + len(q)))
		}

		u := ms.AppendEmpty()
		u.SetName("queue.depth.change")
		us := u.SetEmptySum()
		us.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		up := us.DataPoints().AppendEmpty()
		up.SetStartTimestamp(st)
		up.SetTimestamp(t)
		up.SetDoubleValue([]float64{2.5, -1, 0.25}[i])

		h := ms.AppendEmpty()
		h.SetName("batch.size")
		h.SetUnit("By")
		hh := h.SetEmptyHistogram()
		hh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		hp := hh.DataPoints().AppendEmpty()
		hp.SetStartTimestamp(st)
		hp.SetTimestamp(t)
		hp.ExplicitBounds().FromRaw([]float64{1024, 4096})
		hp.BucketCounts().FromRaw([]uint64{uint64(i), 2, 1})
		hp.SetCount(uint64(i) + 3)
		hp.SetSum(float64(1000 * (i + 1)))

		e := ms.AppendEmpty()
		e.SetName("token.latency")
		e.SetUnit("s")
		eh := e.SetEmptyExponentialHistogram()
		eh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
		ep := eh.DataPoints().AppendEmpty()
		ep.SetStartTimestamp(st)
		ep.SetTimestamp(t)
		ep.SetScale([]int32{3, 1, 2}[i])
		ep.Positive().SetOffset([]int32{-4, 1, 0}[i])
		ep.Positive().BucketCounts().FromRaw([]uint64{1, 0, 2, 1})
		ep.Negative().SetOffset(2)
		ep.Negative().BucketCounts().FromRaw([]uint64{uint64(i)})
		ep.SetZeroCount(1)
		ep.SetCount(5 + uint64(i))
		ep.SetSum(1.5)
		out = append(out, md)
	}
	return out
}

// TestOTLPMatchesPrometheus sends the same OTLP payloads to weft and to the
// pinned Prometheus (--web.enable-otlp-receiver, otlp-deltatocumulative)
// and requires identical stored samples: names, labels, timestamps, float
// values and native histograms, under each translation strategy. weft runs
// with workload-context labels off
// for the comparison; a second weft with the default mapping must store
// Prometheus' samples plus exactly the context labels.
func TestOTLPMatchesPrometheus(t *testing.T) {
	for _, strategy := range []otlptranslator.TranslationStrategyOption{
		otlptranslator.UnderscoreEscapingWithSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes,
		otlptranslator.NoTranslation,
	} {
		t.Run(string(strategy), func(t *testing.T) { testOTLPMatchesPrometheus(t, strategy) })
	}
}

func testOTLPMatchesPrometheus(t *testing.T, strategy otlptranslator.TranslationStrategyOption) {
	prom := startOTLPPrometheus(t, string(strategy))
	plainOpts := api.DefaultOTLPOptions()
	plainOpts.Ingest.TranslationStrategy = strategy
	plainOpts.Ingest.Workload = workload.Options{}
	plain := startWeftOTLP(t, plainOpts)
	ctxOpts := api.DefaultOTLPOptions()
	ctxOpts.Ingest.TranslationStrategy = strategy
	withCtx := startWeftOTLP(t, ctxOpts)

	now := time.Now().Truncate(time.Second)
	payloads := func() []pmetric.Metrics {
		return append([]pmetric.Metrics{richPayload(t, now.Add(-2*time.Minute))}, deltaPayloads(now.Add(-time.Minute))...)
	}
	targets := []struct {
		name, url string
		mds       []pmetric.Metrics
	}{
		{"prometheus", prom.url + "/api/v1/otlp/v1/metrics", payloads()},
		{"weft", plain.httpURL + "/v1/metrics", payloads()},
		{"weft with context", withCtx.httpURL + "/v1/metrics", payloads()},
	}
	for _, tg := range targets {
		for i, md := range tg.mds {
			if code, body := postOTLPProto(t, tg.url, md); code != http.StatusOK {
				t.Fatalf("%s payload %d: status %d: %s", tg.name, i, code, body)
			}
		}
	}

	want := queryOTLPPeer(t, prom, `{__name__=~".+"}[1h]`, now)
	if len(want) < 30 {
		t.Fatalf("prometheus stored only %d samples: %v", len(want), want)
	}
	t.Logf("prometheus stored %d samples", len(want))
	all := labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")
	mint, maxt := now.Add(-time.Hour).UnixMilli()+1, now.UnixMilli()

	t.Run("same query answer as prometheus", func(t *testing.T) {
		got := queryWeftOTLP(t, plain.db, `{__name__=~".+"}[1h]`, now)
		if d := diffOTLPSamples(got, want); d != "" {
			t.Fatalf("weft differs from prometheus (%d vs %d samples):\n%s", len(got), len(want), d)
		}
	})

	t.Run("same exemplars as prometheus", func(t *testing.T) {
		wantEx := queryOTLPPeerExemplars(t, prom, `{__name__=~".+"}`, now.Add(-time.Hour), now)
		if len(wantEx) == 0 {
			t.Fatal("prometheus stored no exemplars")
		}
		gotEx := weftOTLPExemplars(t, plain.db, mint, maxt, all)
		if strings.Join(gotEx, "\n") != strings.Join(wantEx, "\n") {
			t.Fatalf("exemplars differ:\nweft:\n%s\nprometheus:\n%s", strings.Join(gotEx, "\n"), strings.Join(wantEx, "\n"))
		}
	})

	t.Run("plus workload context labels", func(t *testing.T) {
		m := workload.MustDefault()
		ctxOf := map[string][]workload.Label{ // by job label
			"ml/trainer": m.AppendLabels(nil, otlpAttrLookup(richPayload(t, now).ResourceMetrics().At(0).Resource().Attributes())),
			"delta-svc":  m.AppendLabels(nil, otlpAttrLookup(deltaPayloads(now)[0].ResourceMetrics().At(0).Resource().Attributes())),
		}
		var wantCtx []otlpSample
		for _, s := range want {
			ls, err := parseOTLPLabels(s.Labels)
			if err != nil {
				t.Fatal(err)
			}
			b := labels.NewBuilder(ls)
			for _, l := range ctxOf[ls.Get("job")] {
				b.Set(l.Name, l.Value)
			}
			wantCtx = append(wantCtx, otlpSample{Labels: b.Labels().String(), T: s.T, V: s.V})
		}
		sortOTLPSamples(wantCtx)
		got := queryWeftOTLP(t, withCtx.db, `{__name__=~".+"}[1h]`, now)
		if d := diffOTLPSamples(got, wantCtx); d != "" {
			t.Fatalf("weft with context differs from prometheus + context labels:\n%s", d)
		}
	})
}

func otlpAttrLookup(m pcommon.Map) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m.Get(k)
		if !ok {
			return "", false
		}
		return v.AsString(), true
	}
}
