package otlp

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/otlptranslator"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	prw "github.com/prometheus/prometheus/storage/remote/otlptranslator/prometheusremotewrite"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// captureAppender records every append as one line.
type captureAppender struct{ lines []string }

func (c *captureAppender) Append(_ storage.SeriesRef, ls labels.Labels, st, t int64, v float64, h *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) (storage.SeriesRef, error) {
	line := fmt.Sprintf("%s st=%d t=%d v=%v family=%s type=%s", ls, st, t, v, opts.MetricFamilyName, opts.Metadata.Type)
	if h != nil {
		line += " h=" + h.String()
	}
	if fh != nil {
		line += " fh=" + fh.String()
	}
	for _, e := range opts.Exemplars {
		line += fmt.Sprintf(" ex=%s@%d:%v", e.Labels, e.Ts, e.Value)
	}
	c.lines = append(c.lines, line)
	return 1, nil
}

func (c *captureAppender) Commit() error   { return nil }
func (c *captureAppender) Rollback() error { return nil }

// chooser is where the generator's choices come from: a PRNG, or the bytes
// of a fuzz input.
type chooser interface {
	intn(n int) int
	key() string // an attribute key, from a list or made up
}

type randChooser struct{ r *rand.Rand }

// testKeys collide after sanitization, shadow the converter's own labels,
// and include context aliases and identifying attributes.
var testKeys = []string{
	"a", "b", "a.b", "a_b", "a-b", "a/b", "A", "0x", "_x", "__x", "x__y", "ü", "ü.x",
	"k8s.pod.name", "k8s.namespace.name", "service.name", "service.namespace", "service.instance.id",
	"__name__", "le", "quantile", "job", "instance", "otel_scope_name", "otel_scope_a",
	"model", "run_id", "gpu_uuid", "gpu.uuid", "host.name", "x y", "weft.point",
}

var testValues = []string{"", "v", "w", "1", "a;b", "ü"}

func (c randChooser) intn(n int) int { return c.r.IntN(n) }
func (c randChooser) key() string {
	if c.r.IntN(8) == 0 {
		return fmt.Sprintf("k%d.%d", c.r.IntN(5), c.r.IntN(3))
	}
	return testKeys[c.r.IntN(len(testKeys))]
}

// byteChooser takes its choices from b; 0 once b is spent.
type byteChooser struct{ b []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.b) == 0 || n <= 1 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

func (c *byteChooser) key() string {
	if c.intn(4) != 0 {
		return testKeys[c.intn(len(testKeys))]
	}
	n := c.intn(8) + 1
	if n > len(c.b) {
		n = len(c.b)
	}
	k := string(c.b[:n])
	c.b = c.b[n:]
	return k
}

// genOptions draws translation options.
func genOptions(c chooser) Options {
	o := DefaultOptions()
	strategies := []otlptranslator.TranslationStrategyOption{
		otlptranslator.UnderscoreEscapingWithSuffixes, otlptranslator.UnderscoreEscapingWithoutSuffixes,
		otlptranslator.NoUTF8EscapingWithSuffixes, otlptranslator.NoTranslation,
	}
	o.TranslationStrategy = strategies[c.intn(len(strategies))]
	if c.intn(2) == 0 {
		o.PromoteAllResourceAttributes = true
		for range c.intn(3) {
			o.IgnoreResourceAttributes = append(o.IgnoreResourceAttributes, c.key())
		}
	} else {
		for range c.intn(4) {
			o.PromoteResourceAttributes = append(o.PromoteResourceAttributes, c.key())
		}
	}
	o.KeepIdentifyingResourceAttributes = c.intn(2) == 0
	o.PromoteScopeMetadata = c.intn(2) == 0
	o.ConvertHistogramsToNHCB = c.intn(3) == 0
	return o
}

// genAttrs fills m with up to max attributes whose keys the validation
// keeps (valid label names, valid UTF-8).
func genAttrs(c chooser, m pcommon.Map, maxN int, namer otlptranslator.LabelNamer) {
	for range c.intn(maxN + 1) {
		k := c.key()
		if !utf8.ValidString(k) {
			continue
		}
		if _, err := namer.Build(k); err != nil {
			continue
		}
		m.PutStr(k, testValues[c.intn(len(testValues))])
	}
}

// genMetrics draws a request of every metric type.
func genMetrics(c chooser, namer otlptranslator.LabelNamer) pmetric.Metrics {
	md := pmetric.NewMetrics()
	names := []string{"m", "m.x", "cpu.usage", "a_total", "req", "ü"}
	units := []string{"", "s", "By", "1"}
	for range c.intn(3) + 1 {
		rm := md.ResourceMetrics().AppendEmpty()
		genAttrs(c, rm.Resource().Attributes(), 8, namer)
		for range c.intn(2) + 1 {
			sm := rm.ScopeMetrics().AppendEmpty()
			if c.intn(2) == 0 {
				sm.Scope().SetName("lib")
				sm.Scope().SetVersion([]string{"", "1.0"}[c.intn(2)])
				sm.SetSchemaUrl([]string{"", "https://s"}[c.intn(2)])
				genAttrs(c, sm.Scope().Attributes(), 3, namer)
			}
			for range c.intn(4) + 1 {
				m := sm.Metrics().AppendEmpty()
				m.SetName(names[c.intn(len(names))])
				m.SetUnit(units[c.intn(len(units))])
				genPoints(c, m, namer)
			}
		}
	}
	return md
}

func genPoints(c chooser, m pmetric.Metric, namer otlptranslator.LabelNamer) {
	n := c.intn(3) + 1
	t := func() pcommon.Timestamp { return ts(int64(c.intn(1200))) }
	switch c.intn(5) {
	case 0:
		ps := m.SetEmptyGauge().DataPoints()
		for range n {
			p := ps.AppendEmpty()
			p.SetTimestamp(t())
			p.SetDoubleValue(float64(c.intn(100)))
			genAttrs(c, p.Attributes(), 12, namer)
		}
	case 1:
		s := m.SetEmptySum()
		s.SetIsMonotonic(c.intn(2) == 0)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for range n {
			p := s.DataPoints().AppendEmpty()
			p.SetTimestamp(t())
			p.SetIntValue(int64(c.intn(100)))
			genAttrs(c, p.Attributes(), 12, namer)
			if c.intn(3) == 0 {
				e := p.Exemplars().AppendEmpty()
				e.SetTimestamp(p.Timestamp())
				e.SetDoubleValue(1)
				e.FilteredAttributes().PutStr("user", "u")
			}
		}
	case 2:
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for range n {
			p := h.DataPoints().AppendEmpty()
			p.SetTimestamp(t())
			p.ExplicitBounds().FromRaw([]float64{1, 2})
			p.BucketCounts().FromRaw([]uint64{1, 2, 3})
			p.SetCount(6)
			p.SetSum(7)
			genAttrs(c, p.Attributes(), 12, namer)
		}
	case 3:
		h := m.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		for range n {
			p := h.DataPoints().AppendEmpty()
			p.SetTimestamp(t())
			p.SetScale(1)
			p.Positive().BucketCounts().FromRaw([]uint64{1, 2})
			p.SetCount(3)
			p.SetSum(4)
			genAttrs(c, p.Attributes(), 12, namer)
		}
	default:
		s := m.SetEmptySummary()
		for range n {
			p := s.DataPoints().AppendEmpty()
			p.SetTimestamp(t())
			p.SetCount(2)
			p.SetSum(3)
			q := p.QuantileValues().AppendEmpty()
			q.SetQuantile(0.5)
			q.SetValue(1)
			genAttrs(c, p.Attributes(), 12, namer)
		}
	}
}

// convertBoth converts md with Prometheus' converter alone and with weft's
// path (labels built by weft, samples by the converter), returning both
// outputs sorted.
func convertBoth(tb testing.TB, ing *Ingester, md pmetric.Metrics) (old, weft []string) {
	tb.Helper()
	var vrej rejections
	ing.validate(md, &vrej) // what the converter would refuse, as in Ingest
	md2 := pmetric.NewMetrics()
	md.CopyTo(md2)

	var oldApp captureAppender
	settings := ing.settings
	settings.DisableTargetInfo = false
	if _, err := prw.NewPrometheusConverter(&oldApp).FromMetrics(context.Background(), md, settings); err != nil {
		tb.Fatalf("converter: %v", err)
	}
	var newApp captureAppender
	var rej rejections
	app := newCheckedAppender(&newApp, ing.isRejection, ing.targetInfo)
	if _, err := ing.convert(context.Background(), md2, app, &rej); err != nil {
		tb.Fatalf("weft: %v", err)
	}
	if app.fatal != nil || rej.n != 0 {
		tb.Fatalf("weft: fatal %v, %d rejected: %s", app.fatal, rej.n, rej.message())
	}
	slices.Sort(oldApp.lines)
	slices.Sort(newApp.lines)
	return oldApp.lines, newApp.lines
}

// quietConverter silences the converter's log.Println about overwritten
// reserved labels (a promoted __name__ attribute) for the test.
func quietConverter(tb testing.TB) {
	w := log.Writer()
	log.SetOutput(io.Discard)
	tb.Cleanup(func() { log.SetOutput(w) })
}

func diffLines(old, weft []string) string {
	var b strings.Builder
	for _, l := range old {
		if !slices.Contains(weft, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range weft {
		if !slices.Contains(old, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// TestLabelsMatchConverter holds weft's label building to Prometheus'
// converter: over generated requests of every metric type, with colliding,
// shadowing and empty attributes under every translation strategy and
// promotion setting, both write the same samples to the same series.
func TestLabelsMatchConverter(t *testing.T) {
	quietConverter(t)
	const requests = 3000
	r := rand.New(rand.NewPCG(14, 4))
	for i := range requests {
		c := randChooser{r}
		opts := genOptions(c)
		ing, err := New(nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		md := genMetrics(c, ing.labelNamer)
		old, weft := convertBoth(t, ing, md)
		if !slices.Equal(old, weft) {
			t.Fatalf("request %d (options %+v): weft differs from the converter:\n%s", i, opts, diffLines(old, weft))
		}
	}
}

// FuzzLabelsMatchConverter is TestLabelsMatchConverter with the choices,
// and made-up attribute keys, taken from the fuzz input.
func FuzzLabelsMatchConverter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("a.b\x00a_b\x01\x02\x03\x04\x05"))
	f.Add([]byte{1, 0, 1, 1, 0, 3, 7, 0, 2, 9, 9, 9, 4, 0, 5, 1, 2, 3})
	f.Add([]byte("\x00\x00\x01\x01\x00\x00\x08__x__\x03\x02\x01\x00\x04\x03"))
	quietConverter(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &byteChooser{b: b}
		opts := genOptions(c)
		ing, err := New(nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		md := genMetrics(c, ing.labelNamer)
		old, weft := convertBoth(t, ing, md)
		if !slices.Equal(old, weft) {
			t.Fatalf("options %+v: weft differs from the converter:\n%s", opts, diffLines(old, weft))
		}
	})
}
