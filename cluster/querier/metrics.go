package querier

import "github.com/prometheus/client_golang/prometheus"

// metrics are the querier's own. Safe for concurrent use.
type metrics struct {
	fanoutDuration prometheus.Histogram
	fanoutErrors   *prometheus.CounterVec
	partial        prometheus.Counter
	blockReads     prometheus.Counter
	ready          prometheus.GaugeFunc
}

func newMetrics(r prometheus.Registerer, q *Querier) *metrics {
	m := &metrics{
		fanoutDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "weft_querier_fanout_duration_seconds",
			Help:    "Duration of one request to one ingester.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		fanoutErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_querier_fanout_errors_total",
			Help: "Requests to an ingester that failed (its partitions were retried on a replica), by ingester.",
		}, []string{"ingester"}),
		partial: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_querier_partial_responses_total",
			Help: "Reads some partition could not answer (partial, or refused with -deny-partial-response).",
		}),
		blockReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "weft_querier_block_reads_total",
			Help: "Reads (selects and label queries) answered from the bucket's blocks.",
		}),
		ready: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "weft_querier_partitions_ready",
			Help: "1 when every partition has a ready ingester.",
		}, func() float64 {
			if q.Ready() {
				return 1
			}
			return 0
		}),
	}
	if r != nil {
		r.MustRegister(m.fanoutDuration, m.fanoutErrors, m.partial, m.blockReads, m.ready)
	}
	return m
}
