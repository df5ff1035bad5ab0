package otlp

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// maxExponentialScale is the largest scale the OTLP data model defines.
const maxExponentialScale = 20

// validate removes from md what the converter would fail on or what would
// make it do unbounded work, counting
// rejected data points in rej. It mirrors the converter's error paths
// (metric name, temporality, attribute names, exponential scale, exemplar
// value type) so that one bad point costs only itself; the converter would
// drop the rest of the metric, or the whole resource. It also rejects points
// more than MaxTimeSpan older than their resource's newest point: the
// converter writes a target_info sample every LookbackDelta/2 over a
// resource's time range, so one point from 1970 would cost millions.
func (ing *Ingester) validate(md pmetric.Metrics, rej *rejections) {
	names := make(map[string]bool) // attribute key → valid label name
	validKey := func(k string) bool {
		ok, seen := names[k]
		if !seen {
			_, err := ing.labelNamer.Build(k)
			ok = err == nil
			names[k] = ok
		}
		return ok
	}
	badAttrs := func(attrs pcommon.Map) (key string, bad bool) {
		attrs.Range(func(k string, _ pcommon.Value) bool {
			if !validKey(k) {
				key, bad = k, true
				return false
			}
			return true
		})
		return key, bad
	}

	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		rattrs := rm.Resource().Attributes()
		rattrs.RemoveIf(func(k string, _ pcommon.Value) bool {
			if validKey(k) {
				return false
			}
			rej.warn(fmt.Sprintf("resource attribute %q: invalid label name", k))
			return true
		})
		sms := rm.ScopeMetrics()
		oldest := pcommon.Timestamp(0)
		if newest := newestTimestamp(rm); uint64(newest) > uint64(ing.opts.MaxTimeSpan) {
			oldest = newest - pcommon.Timestamp(ing.opts.MaxTimeSpan)
		}
		for j := range sms.Len() {
			sms.At(j).Metrics().RemoveIf(func(m pmetric.Metric) bool {
				reject := func(reason string) bool {
					msg := fmt.Sprintf("metric %q: %s", m.Name(), reason)
					if n := dataPointCount(m); n > 0 {
						rej.add(ReasonInvalidDataPoint, int64(n), msg)
					} else {
						rej.warn(msg)
					}
					return true
				}
				if m.Type() == pmetric.MetricTypeEmpty {
					return reject("no data type")
				}
				if _, err := ing.namer.Build(prw.TranslatorMetricFromOtelMetric(m)); err != nil {
					return reject(err.Error())
				}
				if temporality(m) == pmetric.AggregationTemporalityUnspecified {
					return reject("aggregation temporality unspecified")
				}
				pointErr := func(t pcommon.Timestamp, attrs pcommon.Map, exs pmetric.ExemplarSlice) string {
					if t < oldest {
						return fmt.Sprintf("timestamp %s more than %s before the newest point of its resource", t, ing.opts.MaxTimeSpan)
					}
					if k, bad := badAttrs(attrs); bad {
						return fmt.Sprintf("attribute %q: invalid label name", k)
					}
					exs.RemoveIf(func(e pmetric.Exemplar) bool {
						if e.ValueType() == pmetric.ExemplarValueTypeEmpty {
							rej.warn(fmt.Sprintf("metric %q: exemplar without value", m.Name()))
							return true
						}
						return false
					})
					return ""
				}
				check := func(msg string) bool {
					if msg == "" {
						return false
					}
					rej.add(ReasonInvalidDataPoint, 1, fmt.Sprintf("metric %q: %s", m.Name(), msg))
					return true
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					m.Gauge().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
						return check(pointErr(p.Timestamp(), p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeSum:
					m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
						return check(pointErr(p.Timestamp(), p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeHistogram:
					m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool {
						if n, b := p.BucketCounts().Len(), p.ExplicitBounds().Len(); n != 0 && n != b+1 {
							return check(fmt.Sprintf("%d bucket counts for %d explicit bounds, want %d", n, b, b+1))
						}
						return check(pointErr(p.Timestamp(), p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeExponentialHistogram:
					m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool {
						if s := p.Scale(); s < histogram.ExponentialSchemaMin || s > maxExponentialScale {
							return check(fmt.Sprintf("exponential histogram scale %d outside [%d, %d]", s, histogram.ExponentialSchemaMin, maxExponentialScale))
						}
						return check(pointErr(p.Timestamp(), p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeSummary:
					m.Summary().DataPoints().RemoveIf(func(p pmetric.SummaryDataPoint) bool {
						return check(pointErr(p.Timestamp(), p.Attributes(), pmetric.NewExemplarSlice()))
					})
				}
				return dataPointCount(m) == 0
			})
		}
	}
}

// newestTimestamp returns the largest data point timestamp of rm.
func newestTimestamp(rm pmetric.ResourceMetrics) pcommon.Timestamp {
	var newest pcommon.Timestamp
	sms := rm.ScopeMetrics()
	for j := range sms.Len() {
		ms := sms.At(j).Metrics()
		for k := range ms.Len() {
			m := ms.At(k)
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				newest = max(newest, newestNumber(m.Gauge().DataPoints()))
			case pmetric.MetricTypeSum:
				newest = max(newest, newestNumber(m.Sum().DataPoints()))
			case pmetric.MetricTypeHistogram:
				for x := range m.Histogram().DataPoints().Len() {
					newest = max(newest, m.Histogram().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeExponentialHistogram:
				for x := range m.ExponentialHistogram().DataPoints().Len() {
					newest = max(newest, m.ExponentialHistogram().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeSummary:
				for x := range m.Summary().DataPoints().Len() {
					newest = max(newest, m.Summary().DataPoints().At(x).Timestamp())
				}
			}
		}
	}
	return newest
}

func newestNumber(ps pmetric.NumberDataPointSlice) pcommon.Timestamp {
	var newest pcommon.Timestamp
	for x := range ps.Len() {
		newest = max(newest, ps.At(x).Timestamp())
	}
	return newest
}

// temporality returns m's aggregation temporality; types without one
// (gauge, summary) report cumulative.
func temporality(m pmetric.Metric) pmetric.AggregationTemporality {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		return m.Sum().AggregationTemporality()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().AggregationTemporality()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().AggregationTemporality()
	}
	return pmetric.AggregationTemporalityCumulative
}

func dataPointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}
