package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultLeaseSessionTimeout is how long the brokers wait for a silent
// lease member before they give its partitions to the others.
const DefaultLeaseSessionTimeout = 10 * time.Second

// Lease shares the ingest topic's partitions among the members of a
// consumer group as the brokers assign them: each member holds the
// partitions assigned to it, and when a member leaves or stops
// heartbeating (SessionTimeout) its partitions go to the others. It reads
// no records (fetching is paused): the partitions are only the units of
// work being shared, so that a piece of work (a rule group, by hash) runs
// on exactly one live member without a protocol of weft's own. Safe for
// concurrent use; Close leaves the group.
type Lease struct {
	cl    *kgo.Client
	topic string
	stop  context.CancelFunc
	done  chan struct{}

	mu       sync.Mutex
	held     map[int32]bool
	onChange func(held []int32)
}

// NewLease joins group on opts.Topic. onChange is called (from the
// client's group goroutine, never concurrently) with the partitions held
// after every change; it must not block for long.
func NewLease(opts Options, group string, sessionTimeout time.Duration, onChange func(held []int32)) (*Lease, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if group == "" {
		return nil, errors.New("kafka lease: empty group")
	}
	if sessionTimeout <= 0 {
		sessionTimeout = DefaultLeaseSessionTimeout
	}
	l := &Lease{topic: opts.Topic, held: map[int32]bool{}, onChange: onChange}
	change := func(m map[string][]int32, held bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range m[l.topic] {
			if held {
				l.held[p] = true
			} else {
				delete(l.held, p)
			}
		}
		if l.onChange != nil {
			l.onChange(l.partitionsLocked())
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID(opts.ClientID),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(opts.Topic),
		kgo.SessionTimeout(sessionTimeout),
		kgo.HeartbeatInterval(max(sessionTimeout/5, 100*time.Millisecond)),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { change(m, false) }),
		kgo.WithLogger(slogAdapter{opts.Logger}),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka lease: %w", err)
	}
	cl.PauseFetchTopics(opts.Topic)
	l.cl = cl
	// The group is joined and kept by polling; with fetching paused a poll
	// returns nothing and waits until Close.
	var ctx context.Context
	ctx, l.stop = context.WithCancel(context.Background())
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	return l, nil
}

// Held returns the partitions held now, sorted.
func (l *Lease) Held() []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.partitionsLocked()
}

func (l *Lease) partitionsLocked() []int32 {
	out := make([]int32, 0, len(l.held))
	for p := range l.held {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Close leaves the group (its partitions go to the other members at once)
// and closes the client.
func (l *Lease) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.cl.LeaveGroupContext(ctx)
	l.stop()
	<-l.done
	l.cl.Close()
}
