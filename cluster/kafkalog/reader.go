package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Fetched is one consumed record.
type Fetched struct {
	Partition int32
	Offset    int64
	// Time is the record's timestamp: when the distributor produced it.
	Time  time.Time
	Value []byte
}

// Poll is what one Reader.Poll returned: records in offset order per
// partition, and each polled partition's high watermark (the offset the
// next produced record will get) as the brokers reported it.
type Poll struct {
	Records       []Fetched
	HighWatermark map[int32]int64
}

// Reader consumes a static set of partitions of the ingest topic, without
// group membership, and commits offsets in its own consumer group: the
// ingesters' and block builders' view of the log. Poll is for one
// goroutine; the other methods are safe for concurrent use.
type Reader struct {
	cl         *kgo.Client
	adm        *kadm.Client
	opts       Options
	group      string
	partitions []int32

	startOnce sync.Once
	closeOnce sync.Once
}

// NewReader returns a reader of partitions that commits in group. It reads
// nothing until Start.
func NewReader(opts Options, group string, partitions []int32) (*Reader, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if group == "" {
		return nil, errors.New("kafka reader: empty consumer group")
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID(opts.ClientID),
		kgo.FetchMaxWait(opts.FetchMaxWait),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(slogAdapter{opts.Logger}),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka reader: %w", err)
	}
	return &Reader{cl: cl, adm: kadm.NewClient(cl), opts: opts, group: group, partitions: partitions}, nil
}

// Committed returns the group's committed offsets (the next offset to
// read) of the reader's partitions; partitions without a commit are absent.
func (r *Reader) Committed(ctx context.Context) (map[int32]int64, error) {
	resp, err := r.adm.FetchOffsetsForTopics(ctx, r.group, r.opts.Topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil // nothing committed yet
	}
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", r.group, err)
	}
	out := map[int32]int64{}
	for _, p := range r.partitions {
		o, ok := resp.Lookup(r.opts.Topic, p)
		if !ok {
			continue
		}
		if o.Err != nil {
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
				continue
			}
			return nil, fmt.Errorf("fetch offset of partition %d: %w", p, o.Err)
		}
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// Start begins consuming each partition at start[p], or at the log's
// start where start has none. Later calls do nothing.
func (r *Reader) Start(start map[int32]int64) {
	r.startOnce.Do(func() {
		offs := map[int32]kgo.Offset{}
		for _, p := range r.partitions {
			if o, ok := start[p]; ok {
				offs[p] = kgo.NewOffset().At(o)
			} else {
				offs[p] = kgo.NewOffset().AtStart()
			}
		}
		r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.opts.Topic: offs})
	})
}

// Poll waits for records, at most about twice FetchMaxWait (an empty Poll
// then: callers get to look at the clock while the log is idle), or for
// ctx. Fetch errors the client retries by itself (a broker restarting) are
// logged; ctx's error is returned.
func (r *Reader) Poll(ctx context.Context) (Poll, error) {
	pctx, cancel := context.WithTimeout(ctx, 2*r.opts.FetchMaxWait)
	defer cancel()
	fs := r.cl.PollFetches(pctx)
	if err := ctx.Err(); err != nil {
		return Poll{}, err
	}
	if fs.IsClientClosed() {
		return Poll{}, kgo.ErrClientClosed
	}
	out := Poll{HighWatermark: map[int32]int64{}}
	fs.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			r.opts.Logger.Warn("kafka_fetch_failed", "topic", topic, "partition", p, "err", err)
		}
	})
	fs.EachPartition(func(fp kgo.FetchTopicPartition) {
		if fp.Err != nil {
			return
		}
		out.HighWatermark[fp.Partition] = fp.HighWatermark
		for _, rec := range fp.Records {
			out.Records = append(out.Records, Fetched{Partition: rec.Partition, Offset: rec.Offset, Time: rec.Timestamp, Value: rec.Value})
		}
	})
	return out, nil
}

// Commit records next[p] as the group's next offset to read of each
// partition in next.
func (r *Reader) Commit(ctx context.Context, next map[int32]int64) error {
	if len(next) == 0 {
		return nil
	}
	var os kadm.Offsets
	for p, o := range next {
		os.Add(kadm.Offset{Topic: r.opts.Topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	resp, err := r.adm.CommitOffsets(ctx, r.group, os)
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", r.group, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", r.group, err)
	}
	return nil
}

// EndOffsets returns the high watermark of each of the reader's partitions:
// every record produced so far has a lower offset.
func (r *Reader) EndOffsets(ctx context.Context) (map[int32]int64, error) {
	return endOffsets(ctx, r.adm, r.opts.Topic, r.partitions)
}

// Close stops consuming and closes the connections. Idempotent.
func (r *Reader) Close() { r.closeOnce.Do(r.cl.Close) }

func endOffsets(ctx context.Context, adm *kadm.Client, topic string, partitions []int32) (map[int32]int64, error) {
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for _, p := range partitions {
		o, ok := lo.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("list end offsets of %s: no partition %d", topic, p)
		}
		if o.Err != nil {
			return nil, fmt.Errorf("list end offset of partition %d: %w", p, o.Err)
		}
		out[p] = o.Offset
	}
	return out, nil
}
