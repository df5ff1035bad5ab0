package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weftdb/weft/cluster/record"
	"github.com/weftdb/weft/ingest"
)

// Produced is one record to produce: its partition and value.
type Produced struct {
	Partition int32
	Kind      record.Kind
	Value     []byte
}

// Producer writes records to explicit partitions of the ingest topic and
// waits for the brokers' acknowledgement (acks=all, idempotent). Safe for
// concurrent use; Close stops it.
type Producer struct {
	cl   *kgo.Client
	opts Options

	duration *prometheus.HistogramVec
	records  *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	failures *prometheus.CounterVec

	closeOnce sync.Once
}

// NewProducer connects a producer. The brokers are contacted lazily: a
// broker that is down fails produces, not NewProducer.
func NewProducer(opts Options) (*Producer, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID(opts.ClientID),
		kgo.DefaultProduceTopic(opts.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(opts.ProduceTimeout),
		kgo.ProducerBatchMaxBytes(int32(opts.MaxRecordBytes)+(64<<10)),
		kgo.ProducerBatchCompression(kgo.Lz4Compression(), kgo.NoCompression()),
		kgo.ProducerLinger(0),
		kgo.WithLogger(slogAdapter{opts.Logger}),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	p := &Producer{
		cl:   cl,
		opts: opts,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "weft_distributor_produce_duration_seconds",
			Help:    "Time from a write's produce to the brokers' acknowledgement of all its records, by signal and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"signal", "outcome"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_distributor_records_produced_total",
			Help: "Records the brokers acknowledged, by signal.",
		}, []string{"signal"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_distributor_produced_bytes_total",
			Help: "Record bytes the brokers acknowledged, by signal.",
		}, []string{"signal"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "weft_distributor_produce_failures_total",
			Help: "Writes whose produce failed or timed out (answered 503), by signal.",
		}, []string{"signal"}),
	}
	register(opts.Registerer, p.duration, p.records, p.bytes, p.failures)
	return p, nil
}

// Produce writes recs and returns once every one is acknowledged, with their
// offsets in recs' order. An error wraps ingest.ErrUnavailable: some records
// may have been written (a retry writes them again; consumers tolerate
// that, see docs/scale-out.md).
func (p *Producer) Produce(ctx context.Context, recs []Produced) ([]int64, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	now := time.Now()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: p.opts.Topic, Partition: r.Partition, Value: r.Value, Timestamp: now}
	}
	res := p.cl.ProduceSync(ctx, krs...)
	signal := recs[0].Kind.String()
	if err := res.FirstErr(); err != nil {
		p.failures.WithLabelValues(signal).Inc()
		p.duration.WithLabelValues(signal, "error").Observe(time.Since(now).Seconds())
		return nil, fmt.Errorf("%w: produce to %s: %w", ingest.ErrUnavailable, p.opts.Topic, err)
	}
	p.duration.WithLabelValues(signal, "ok").Observe(time.Since(now).Seconds())
	offsets := make([]int64, len(krs))
	n := 0
	for i, r := range res {
		offsets[i] = r.Record.Offset
		n += len(r.Record.Value)
	}
	p.records.WithLabelValues(signal).Add(float64(len(krs)))
	p.bytes.WithLabelValues(signal).Add(float64(n))
	return offsets, nil
}

// Describe implements prometheus.Collector: the producer's metrics, for a
// registry made after the producer (Options.Registerer nil).
func (p *Producer) Describe(ch chan<- *prometheus.Desc) {
	p.duration.Describe(ch)
	p.records.Describe(ch)
	p.bytes.Describe(ch)
	p.failures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (p *Producer) Collect(ch chan<- prometheus.Metric) {
	p.duration.Collect(ch)
	p.records.Collect(ch)
	p.bytes.Collect(ch)
	p.failures.Collect(ch)
}

// Partitions asks the brokers how many partitions the topic has.
func (p *Producer) Partitions(ctx context.Context) (int32, error) {
	return topicPartitions(ctx, p.cl, p.opts.Topic)
}

// Close flushes nothing (Produce waits) and closes the connections.
// Idempotent.
func (p *Producer) Close() {
	p.closeOnce.Do(p.cl.Close)
}

// errNoTopic: the topic does not exist on the brokers.
var errNoTopic = errors.New("topic does not exist")
