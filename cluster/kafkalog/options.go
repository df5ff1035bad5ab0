package kafkalog

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults.
const (
	DefaultTopic          = "weft-ingest"
	DefaultProduceTimeout = 10 * time.Second
	// DefaultMaxRecordBytes keeps a record under Kafka's default
	// message.max.bytes (1 MiB) with room for the batch header: a larger
	// request is split into several records.
	DefaultMaxRecordBytes = 900 << 10
	// DefaultFetchMaxWait is how long a fetch waits for new records: the
	// bound on how stale an idle ingester's view of the high watermark is.
	DefaultFetchMaxWait = 500 * time.Millisecond
)

// Options configure the clients of the ingest log. Brokers is required.
type Options struct {
	// Brokers are seed broker addresses (host:port).
	Brokers []string
	// Topic is the ingest topic. Default DefaultTopic.
	Topic string
	// ClientID names the client to the brokers (their logs and quotas).
	ClientID string
	// ProduceTimeout bounds a produce, retries included: past it the write
	// fails as unavailable (503). Default DefaultProduceTimeout.
	ProduceTimeout time.Duration
	// MaxRecordBytes splits a write into records of at most about this
	// many bytes. Default DefaultMaxRecordBytes.
	MaxRecordBytes int
	// FetchMaxWait bounds a fetch's wait for records. Default
	// DefaultFetchMaxWait.
	FetchMaxWait time.Duration
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the clients' metrics; nil registers none.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the documented defaults; Brokers must still be set.
func DefaultOptions() Options {
	return Options{
		Topic:          DefaultTopic,
		ClientID:       "weft",
		ProduceTimeout: DefaultProduceTimeout,
		MaxRecordBytes: DefaultMaxRecordBytes,
		FetchMaxWait:   DefaultFetchMaxWait,
	}
}

// Sentinels. Inspect with errors.Is.
var (
	// ErrNoBrokers: Options.Brokers is empty.
	ErrNoBrokers = errors.New("kafka: no brokers configured")
)

func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if len(o.Brokers) == 0 {
		return o, ErrNoBrokers
	}
	if o.Topic == "" {
		o.Topic = d.Topic
	}
	if o.ClientID == "" {
		o.ClientID = d.ClientID
	}
	if o.ProduceTimeout <= 0 {
		o.ProduceTimeout = d.ProduceTimeout
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = d.MaxRecordBytes
	}
	if o.FetchMaxWait <= 0 {
		o.FetchMaxWait = d.FetchMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// register registers cs on r, or on nothing when r is nil.
func register(r prometheus.Registerer, cs ...prometheus.Collector) {
	if r == nil {
		return
	}
	for _, c := range cs {
		r.MustRegister(c)
	}
}
