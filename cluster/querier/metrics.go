package querier

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the querier's own. Safe for concurrent use.
type metrics struct {
	fanoutDuration prometheus.Histogram
	fanoutErrors   *prometheus.CounterVec
	partial        prometheus.Counter
	blockReads     prometheus.Counter
	ready          prometheus.GaugeFunc
	tailStreams    atomic.Int64
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
	tails := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "weft_querier_tail_streams",
		Help: "Open tail streams to ingesters (one per ingester of each Loki tail connection).",
	}, func() float64 { return float64(m.tailStreams.Load()) })
	if r != nil {
		r.MustRegister(m.fanoutDuration, m.fanoutErrors, m.partial, m.blockReads, m.ready, tails)
	}
	return m
}
