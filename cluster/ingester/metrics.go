package ingester

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/cluster/record"
)

// metrics are the ingester's own: what it applied and how far behind the
// log it is. Safe for concurrent use.
type metrics struct {
	samples, histograms, exemplars, entries, spans prometheus.Counter
	rejected                                       *prometheus.CounterVec
	corrupt, applyFailures                         prometheus.Counter
	lag                                            *lagCollector
}

func newMetrics(r prometheus.Registerer, in *Ingester) *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		samples:       c("weft_ingester_samples_applied_total", "Float samples applied from the ingest log."),
		histograms:    c("weft_ingester_histograms_applied_total", "Histogram samples applied from the ingest log."),
		exemplars:     c("weft_ingester_exemplars_applied_total", "Exemplars applied from the ingest log."),
		entries:       c("weft_ingester_log_entries_applied_total", "Log entries applied from the ingest log."),
		spans:         c("weft_ingester_spans_applied_total", "Trace spans applied from the ingest log."),
		corrupt:       c("weft_ingester_records_corrupt_total", "Records of the ingest log that did not decode and were skipped."),
		applyFailures: c("weft_ingester_apply_failures_total", "Batches the store failed to take (retried)."),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_ingester_rejected_total",
			Help: "Samples, log entries and spans the store refused as data errors (acknowledged by the distributor, dropped here), by reason.",
		}, []string{"reason"}),
		lag: &lagCollector{in: in,
			lag:     prometheus.NewDesc("weft_ingester_consumer_lag_records", "Records produced to the partition and not applied yet.", []string{"partition"}, nil),
			applied: prometheus.NewDesc("weft_ingester_applied_offset", "Offset of the next record to apply, per partition.", []string{"partition"}, nil),
			ready:   prometheus.NewDesc("weft_ingester_ready", "1 when the ingester is caught up within its lag bound.", nil, nil),
		},
	}
	if r != nil {
		r.MustRegister(m.samples, m.histograms, m.exemplars, m.entries, m.spans, m.corrupt, m.applyFailures, m.rejected, m.lag)
	}
	return m
}

func (m *metrics) observe(a record.Applied) {
	m.samples.Add(float64(a.Samples))
	m.histograms.Add(float64(a.Histograms))
	m.exemplars.Add(float64(a.Exemplars))
	m.entries.Add(float64(a.Entries))
	m.spans.Add(float64(a.Spans))
	for reason, n := range a.Rejected {
		m.rejected.WithLabelValues(reason).Add(float64(n))
	}
}

// lagCollector reports lag and offsets at scrape time.
type lagCollector struct {
	in                  *Ingester
	lag, applied, ready *prometheus.Desc
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.applied
	ch <- c.ready
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.in.Status()
	for _, p := range st.Partitions {
		lp := strconv.Itoa(int(p))
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(max(st.HighWatermark[p]-st.Applied[p], 0)), lp)
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(st.Applied[p]), lp)
	}
	ready := 0.0
	if st.Ready {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, ready)
}
