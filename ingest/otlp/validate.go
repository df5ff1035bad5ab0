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

// validate removes from md what the converter would fail on, counting
// rejected data points in rej. It mirrors the converter's error paths
// (metric name, temporality, attribute names, exponential scale, exemplar
// value type) so that one bad point costs only itself; the converter would
// drop the rest of the metric, or the whole resource.
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
		for j := range sms.Len() {
			sms.At(j).Metrics().RemoveIf(func(m pmetric.Metric) bool {
				reject := func(reason string) bool {
					msg := fmt.Sprintf("metric %q: %s", m.Name(), reason)
					if n := dataPointCount(m); n > 0 {
						rej.add(int64(n), msg)
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
				pointErr := func(attrs pcommon.Map, exs pmetric.ExemplarSlice) string {
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
					rej.add(1, fmt.Sprintf("metric %q: %s", m.Name(), msg))
					return true
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					m.Gauge().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
						return check(pointErr(p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeSum:
					m.Sum().DataPoints().RemoveIf(func(p pmetric.NumberDataPoint) bool {
						return check(pointErr(p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeHistogram:
					m.Histogram().DataPoints().RemoveIf(func(p pmetric.HistogramDataPoint) bool {
						if n, b := p.BucketCounts().Len(), p.ExplicitBounds().Len(); n != 0 && n != b+1 {
							return check(fmt.Sprintf("%d bucket counts for %d explicit bounds, want %d", n, b, b+1))
						}
						return check(pointErr(p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeExponentialHistogram:
					m.ExponentialHistogram().DataPoints().RemoveIf(func(p pmetric.ExponentialHistogramDataPoint) bool {
						if s := p.Scale(); s < histogram.ExponentialSchemaMin || s > maxExponentialScale {
							return check(fmt.Sprintf("exponential histogram scale %d outside [%d, %d]", s, histogram.ExponentialSchemaMin, maxExponentialScale))
						}
						return check(pointErr(p.Attributes(), p.Exemplars()))
					})
				case pmetric.MetricTypeSummary:
					m.Summary().DataPoints().RemoveIf(func(p pmetric.SummaryDataPoint) bool {
						return check(pointErr(p.Attributes(), pmetric.NewExemplarSlice()))
					})
				}
				return dataPointCount(m) == 0
			})
		}
	}
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
