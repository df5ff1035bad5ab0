package otlp

import (
	"context"
	"fmt"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"github.com/prometheus/prometheus/util/annotations"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// pointRefAttr is the one attribute a data point keeps while the converter
// runs: the index of its labels in prepared.series. It is a valid label name
// under every translation strategy and unchanged by sanitization, and no
// other label the converter adds (__name__, le, quantile) has its name.
const pointRefAttr = "weft_point_ref"

// Suffixes the converter adds to a family name for some series, longest
// first: the label value limit applies to the longest series name.
const (
	bucketSuffix = "_bucket"
	countSuffix  = "_count"
)

// prepared is what weft computed of a request before the converter runs:
// the labels of every data point's series, and the target_info series.
type prepared struct {
	series  []labels.Labels // by pointRefAttr
	targets []targetSeries  // in resource order
}

// targetSeries is one resource's target_info series and its time range.
type targetSeries struct {
	ls               labels.Labels
	earliest, latest pcommon.Timestamp
}

// prepare builds the labels of every series of md (labelBuilder), rejects
// the data points whose series break the label limits (and every point of a
// resource whose target_info does), and leaves the converter only what it
// needs for the samples: each point's attributes become pointRefAttr, the
// resource and scope attributes and names are removed, so the converter's
// label work is constant per point. The checked appender puts the labels
// back (expand) and appendTargetInfo writes target_info.
func (ing *Ingester) prepare(md pmetric.Metrics, b *labelBuilder, rej *rejections) *prepared {
	p := &prepared{}
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rattrs := rm.Resource().Attributes()
		rejectAll := func(reason, msg string) bool {
			n := 0
			sms := rm.ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					n += dataPointCount(ms.At(k))
				}
			}
			if n > 0 {
				rej.add(reason, int64(n), msg)
			}
			return true
		}
		rc, err := b.resource(rattrs)
		if err != nil {
			return rejectAll(ReasonInvalidDataPoint, "resource: "+err.Error())
		}
		ti, emit, err := b.targetInfo(rattrs, &rc, ing.targetInfo)
		if err != nil {
			return rejectAll(ReasonInvalidDataPoint, "resource: "+err.Error())
		}
		if emit {
			if msg := ing.checkLabels(ti, 0, 0); msg != "" {
				return rejectAll(ReasonLabelLimit, "resource target_info: "+msg)
			}
		}
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			sm := sms.At(j)
			s := sm.Scope()
			sc, err := b.scope(s.Name(), s.Version(), sm.SchemaUrl(), s.Attributes())
			if err != nil {
				rej.add(ReasonInvalidDataPoint, int64(scopePointCount(sm)), "scope: "+err.Error())
				sm.Metrics().RemoveIf(func(pmetric.Metric) bool { return true })
				continue
			}
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				family, err := ing.namer.Build(prw.TranslatorMetricFromOtelMetric(m))
				if err != nil { // validate removed these
					return false
				}
				extra, suffix := ing.derivedSeries(m)
				point := func(attrs pcommon.Map) bool {
					ls, err := b.series(attrs, &rc, sc, family)
					if err != nil {
						rej.add(ReasonInvalidDataPoint, 1, fmt.Sprintf("metric %q: %s", m.Name(), err))
						return true
					}
					if msg := ing.checkLabels(ls, extra, suffix); msg != "" {
						rej.add(ReasonLabelLimit, 1, fmt.Sprintf("metric %q: %s", m.Name(), msg))
						return true
					}
					attrs.Clear()
					attrs.PutStr(pointRefAttr, strconv.Itoa(len(p.series)))
					p.series = append(p.series, ls)
					return false
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					m.Gauge().DataPoints().RemoveIf(func(dp pmetric.NumberDataPoint) bool { return point(dp.Attributes()) })
				case pmetric.MetricTypeSum:
					m.Sum().DataPoints().RemoveIf(func(dp pmetric.NumberDataPoint) bool { return point(dp.Attributes()) })
				case pmetric.MetricTypeHistogram:
					m.Histogram().DataPoints().RemoveIf(func(dp pmetric.HistogramDataPoint) bool { return point(dp.Attributes()) })
				case pmetric.MetricTypeExponentialHistogram:
					m.ExponentialHistogram().DataPoints().RemoveIf(func(dp pmetric.ExponentialHistogramDataPoint) bool { return point(dp.Attributes()) })
				case pmetric.MetricTypeSummary:
					m.Summary().DataPoints().RemoveIf(func(dp pmetric.SummaryDataPoint) bool { return point(dp.Attributes()) })
				}
				return dataPointCount(m) == 0
			})
			s.Attributes().Clear()
			s.SetName("")
			s.SetVersion("")
			sm.SetSchemaUrl("")
		}
		if emit {
			if lo, hi, ok := timeRange(rm); ok {
				p.targets = append(p.targets, targetSeries{ls: ti, earliest: lo, latest: hi})
			}
		}
		rattrs.Clear()
		return false
	})
	return p
}

// derivedSeries returns how many labels the converter adds to a point's
// series for some of its samples (le, quantile) and the longest suffix it
// adds to the family name.
func (ing *Ingester) derivedSeries(m pmetric.Metric) (extraLabels, suffix int) {
	switch m.Type() {
	case pmetric.MetricTypeHistogram:
		if !ing.settings.ConvertHistogramsToNHCB {
			return 1, len(bucketSuffix)
		}
	case pmetric.MetricTypeSummary:
		return 1, len(countSuffix)
	}
	return 0, 0
}

// checkLabels applies the label limits to a series' labels ls, to which the
// converter adds at most extra labels and a family-name suffix of suffix
// bytes. It returns why ls breaks a limit, naming it, or "".
func (ing *Ingester) checkLabels(ls labels.Labels, extra, suffix int) string {
	o := &ing.opts
	if n := ls.Len() + extra; n > o.MaxLabelsPerSeries {
		return fmt.Sprintf("series has %d labels, more than the limit of %d (%s)", n, o.MaxLabelsPerSeries, ConfigMaxLabelsPerSeries)
	}
	msg := ""
	ls.Range(func(l labels.Label) {
		if msg != "" {
			return
		}
		if len(l.Name) > o.MaxLabelNameLength {
			msg = fmt.Sprintf("label name %q is %d bytes, longer than the limit of %d (%s)", truncateName(l.Name), len(l.Name), o.MaxLabelNameLength, ConfigMaxLabelNameLength)
			return
		}
		n := len(l.Value)
		if l.Name == labels.MetricName {
			n += suffix
		}
		if n > o.MaxLabelValueLength {
			msg = fmt.Sprintf("label %q value is %d bytes, longer than the limit of %d (%s)", truncateName(l.Name), n, o.MaxLabelValueLength, ConfigMaxLabelValueLength)
		}
	})
	return msg
}

// truncateName shortens a name quoted in an error message.
func truncateName(s string) string {
	const maxQuoted = 64
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}

func scopePointCount(sm pmetric.ScopeMetrics) int {
	n := 0
	for k := range sm.Metrics().Len() {
		n += dataPointCount(sm.Metrics().At(k))
	}
	return n
}

// timeRange returns the earliest and latest data point timestamps of rm, as
// the converter finds them for target_info; false without points.
func timeRange(rm pmetric.ResourceMetrics) (lo, hi pcommon.Timestamp, ok bool) {
	lo = pcommon.Timestamp(^uint64(0))
	see := func(t pcommon.Timestamp) { lo, hi, ok = min(lo, t), max(hi, t), true }
	sms := rm.ScopeMetrics()
	for j := range sms.Len() {
		ms := sms.At(j).Metrics()
		for k := range ms.Len() {
			m := ms.At(k)
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				for x := range m.Gauge().DataPoints().Len() {
					see(m.Gauge().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeSum:
				for x := range m.Sum().DataPoints().Len() {
					see(m.Sum().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeHistogram:
				for x := range m.Histogram().DataPoints().Len() {
					see(m.Histogram().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeExponentialHistogram:
				for x := range m.ExponentialHistogram().DataPoints().Len() {
					see(m.ExponentialHistogram().DataPoints().At(x).Timestamp())
				}
			case pmetric.MetricTypeSummary:
				for x := range m.Summary().DataPoints().Len() {
					see(m.Summary().DataPoints().At(x).Timestamp())
				}
			}
		}
	}
	return lo, hi, ok
}

// appendTargetInfo writes the target_info samples of p as the converter
// does: one every LookbackDelta/2 from a resource's earliest point, and one
// at its latest, skipping a series and timestamp already written in this
// request.
func (ing *Ingester) appendTargetInfo(app storage.AppenderV2, p *prepared) error {
	opts := storage.AOptions{
		Metadata:         metadata.Metadata{Type: model.MetricTypeGauge, Help: "Target metadata"},
		MetricFamilyName: ing.targetInfo,
	}
	type key struct {
		hash uint64
		t    int64
	}
	seen := map[key]struct{}{}
	write := func(ls labels.Labels, h uint64, t int64) error {
		k := key{h, t}
		if _, ok := seen[k]; ok {
			return nil
		}
		seen[k] = struct{}{}
		_, err := app.Append(0, ls, 0, t, 1, nil, nil, opts)
		return err
	}
	interval := ing.opts.LookbackDelta / 2
	for _, ts := range p.targets {
		h := ts.ls.Hash()
		latest := ts.latest.AsTime()
		for t := ts.earliest.AsTime(); t.Before(latest); t = t.Add(interval) {
			if err := write(ts.ls, h, t.UnixMilli()); err != nil {
				return err
			}
		}
		if err := write(ts.ls, h, latest.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// convert turns the validated md into samples appended to app: weft builds
// the labels (prepare), Prometheus' converter the samples, and weft the
// target_info series.
func (ing *Ingester) convert(ctx context.Context, md pmetric.Metrics, app *checkedAppender, rej *rejections) (annotations.Annotations, error) {
	b := ing.builders.Get().(*labelBuilder)
	defer func() {
		b.reset()
		ing.builders.Put(b)
	}()
	p := ing.prepare(md, b, rej)
	app.series = p.series
	conv := ing.converters.Get().(*prw.PrometheusConverter)
	conv.Reset(app)
	annots, err := conv.FromMetrics(ctx, md, ing.settings)
	conv.Reset(nil)
	ing.converters.Put(conv)
	if ctx.Err() != nil || app.fatal != nil {
		return annots, err
	}
	if tiErr := ing.appendTargetInfo(app, p); tiErr != nil && app.fatal == nil {
		app.fatal = tiErr
	}
	return annots, err
}

// newLabelBuilder returns a labelBuilder with the ingester's settings.
func (ing *Ingester) newLabelBuilder(promoteAll bool, promote []string) *labelBuilder {
	set := make(map[string]struct{}, len(promote))
	for _, a := range promote {
		set[a] = struct{}{}
	}
	return &labelBuilder{
		namer:           ing.labelNamer,
		utf8:            ing.settings.AllowUTF8,
		promoteAll:      promoteAll,
		promote:         set,
		keepIdentifying: ing.opts.KeepIdentifyingResourceAttributes,
		scopeMetadata:   ing.opts.PromoteScopeMetadata,
	}
}
