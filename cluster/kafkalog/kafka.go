package kafkalog

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// slogAdapter is franz-go's logger over slog: franz-go's info messages
// (connections, metadata refreshes) are debug for weft.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Level() kgo.LogLevel {
	if a.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelDebug
	}
	return kgo.LogLevelWarn
}

func (a slogAdapter) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	l := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	}
	a.l.Log(context.Background(), l, "kafka: "+msg, keyvals...)
}

// topicPartitions returns the number of partitions of topic.
func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int32, error) {
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list topic %s: %w", topic, err)
	}
	d, ok := td[topic]
	if !ok {
		return 0, fmt.Errorf("list topic %s: %w", topic, errNoTopic)
	}
	if d.Err != nil {
		return 0, fmt.Errorf("list topic %s: %w", topic, d.Err)
	}
	return int32(len(d.Partitions)), nil
}

// CreateTopic creates the ingest topic with n partitions (replication factor
// -1: the brokers' default) unless it exists. For tests and first-time
// setup; production topics are usually made by their operators.
func CreateTopic(ctx context.Context, opts Options, n int32) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(opts.Brokers...), kgo.ClientID(opts.ClientID))
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	if got, err := topicPartitions(ctx, cl, opts.Topic); err == nil {
		if got != n {
			return fmt.Errorf("topic %s has %d partitions, want %d", opts.Topic, got, n)
		}
		return nil
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, n, -1, nil, opts.Topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", opts.Topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", opts.Topic, resp.Err)
	}
	return nil
}
