package ingester

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weftdb/weft/cluster/internal/wait"
	"github.com/weftdb/weft/cluster/kafkalog"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/cluster/record"
)

// Defaults.
const (
	DefaultMaxLag             = 30 * time.Second
	DefaultCommitInterval     = time.Second
	DefaultConsistencyTimeout = 20 * time.Second
	// retryBackoff is the wait before re-applying a batch the store
	// failed: long enough not to spin on a full disk.
	retryBackoff = time.Second
	offsetsFile  = "offsets.json"
)

// Options configure an ingester.
type Options struct {
	// Partitions it consumes (required).
	Partitions []int32
	// TotalPartitions is the topic's partition count (reported in Status).
	TotalPartitions int32
	// StateDir holds offsets.json (required): the substrate's directory.
	StateDir string
	// MaxLag: once caught up, the ingester stays ready while the records
	// it has not applied were produced at most this long ago. Default
	// DefaultMaxLag.
	MaxLag time.Duration
	// CommitInterval is how often applied offsets are committed to the
	// consumer group. Default DefaultCommitInterval.
	CommitInterval time.Duration
	// ConsistencyTimeout bounds a read-after-write wait. Default
	// DefaultConsistencyTimeout.
	ConsistencyTimeout time.Duration
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the ingester's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock (lag); nil means time.Now.
	Now func() time.Time
}

// Log is the ingest log as the ingester reads it; *kafkalog.Reader.
type Log interface {
	Committed(ctx context.Context) (map[int32]int64, error)
	Start(start map[int32]int64)
	Poll(ctx context.Context) (kafkalog.Poll, error)
	Commit(ctx context.Context, next map[int32]int64) error
	EndOffsets(ctx context.Context) (map[int32]int64, error)
}

// Ingester consumes the log into a store. Start it once; Stop stops and
// waits for its goroutine. Status, Ready and WaitFor are safe for
// concurrent use.
type Ingester struct {
	opts    Options
	log     Log
	applier *record.Applier
	logger  *slog.Logger
	m       *metrics

	mu        sync.Mutex
	applied   map[int32]int64 // next offset to apply
	hwm       map[int32]int64
	lastTime  map[int32]time.Time // produce time of the last applied record
	caughtUp  bool                // reached the high watermarks seen at start
	startHWM  map[int32]int64
	committed map[int32]int64 // last offsets committed to the group
	changed   chan struct{}   // closed and replaced after every applied batch

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns an ingester applying log's records with applier.
func New(opts Options, log Log, applier *record.Applier) (*Ingester, error) {
	if len(opts.Partitions) == 0 {
		return nil, errors.New("ingester: no partitions")
	}
	if opts.StateDir == "" {
		return nil, errors.New("ingester: no state directory")
	}
	if opts.MaxLag <= 0 {
		opts.MaxLag = DefaultMaxLag
	}
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = DefaultCommitInterval
	}
	if opts.ConsistencyTimeout <= 0 {
		opts.ConsistencyTimeout = DefaultConsistencyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	in := &Ingester{opts: opts, log: log, applier: applier, logger: opts.Logger,
		applied: map[int32]int64{}, hwm: map[int32]int64{}, lastTime: map[int32]time.Time{}, committed: map[int32]int64{},
		changed: make(chan struct{})}
	in.m = newMetrics(opts.Registerer, in)
	return in, nil
}

// Start finds where to resume (the later of the offsets file and the
// group's commit), notes the high watermarks to catch up to, and starts
// consuming in a goroutine that Stop ends.
func (in *Ingester) Start(ctx context.Context) error {
	local, err := readOffsets(filepath.Join(in.opts.StateDir, offsetsFile))
	if err != nil {
		return err
	}
	committed, err := in.log.Committed(ctx)
	if err != nil {
		return fmt.Errorf("ingester: %w", err)
	}
	end, err := in.log.EndOffsets(ctx)
	if err != nil {
		return fmt.Errorf("ingester: %w", err)
	}
	start := map[int32]int64{}
	for _, p := range in.opts.Partitions {
		o, ok := committed[p]
		if l, lok := local[p]; lok && (!ok || l > o) {
			o, ok = l, true
		}
		if ok {
			start[p] = o
		}
	}
	in.mu.Lock()
	maps.Copy(in.applied, start)
	maps.Copy(in.committed, committed)
	in.startHWM = end
	maps.Copy(in.hwm, end)
	in.caughtUp = in.reachedLocked(end)
	in.mu.Unlock()
	in.logger.Info("ingester_starting", "partitions", in.opts.Partitions, "resume_at", start, "catch_up_to", end)
	in.log.Start(start)
	ctx, in.cancel = context.WithCancel(context.WithoutCancel(ctx))
	in.done = make(chan struct{})
	go in.run(ctx)
	return nil
}

// Stop ends consumption, waits for the goroutine and commits the applied
// offsets one last time (bounded by ctx).
func (in *Ingester) Stop(ctx context.Context) error {
	if in.cancel == nil {
		return nil
	}
	in.cancel()
	<-in.done
	return in.commit(ctx)
}

func (in *Ingester) run(ctx context.Context) {
	defer close(in.done)
	lastCommit := time.Now()
	for ctx.Err() == nil {
		poll, err := in.log.Poll(ctx)
		if err != nil {
			if ctx.Err() == nil {
				in.logger.Warn("ingester_poll_failed", "err", err)
				wait.Sleep(ctx, retryBackoff)
			}
			continue
		}
		in.mu.Lock()
		for p, h := range poll.HighWatermark {
			in.hwm[p] = max(in.hwm[p], h)
		}
		in.mu.Unlock()
		if len(poll.Records) > 0 {
			in.apply(ctx, poll.Records)
		}
		in.mu.Lock()
		if !in.caughtUp && in.reachedLocked(in.startHWM) {
			in.caughtUp = true
			in.logger.Info("ingester_caught_up", "applied", maps.Clone(in.applied))
		}
		in.mu.Unlock()
		if time.Since(lastCommit) >= in.opts.CommitInterval {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := in.commit(cctx); err != nil && ctx.Err() == nil {
				in.logger.Warn("ingester_commit_failed", "err", err)
			}
			cancel()
			lastCommit = time.Now()
		}
	}
}

// apply decodes and applies one poll's records, retrying the store until it
// takes them or ctx ends. A record that does not decode is skipped (logged
// and counted): it can never be applied, and must not stop the partition.
func (in *Ingester) apply(ctx context.Context, fetched []kafkalog.Fetched) {
	recs := make([]record.Record, 0, len(fetched))
	in.mu.Lock()
	applied := maps.Clone(in.applied)
	in.mu.Unlock()
	for _, f := range fetched {
		if o, ok := applied[f.Partition]; ok && f.Offset < o {
			continue // applied before a restart
		}
		rec, err := record.Decode(f.Value)
		if err != nil {
			in.logger.Error("ingester_record_corrupt", "partition", f.Partition, "offset", f.Offset, "err", err)
			in.m.corrupt.Inc()
			continue
		}
		recs = append(recs, rec)
	}
	for {
		res, err := in.applier.Apply(ctx, recs)
		if err == nil {
			in.m.observe(res)
			break
		}
		in.m.applyFailures.Inc()
		in.logger.Error("ingester_apply_failed", "records", len(recs), "err", err)
		if !wait.Sleep(ctx, retryBackoff) {
			return
		}
	}
	in.mu.Lock()
	for _, f := range fetched {
		if f.Offset+1 > in.applied[f.Partition] {
			in.applied[f.Partition] = f.Offset + 1
			in.lastTime[f.Partition] = f.Time
		}
	}
	snapshot := maps.Clone(in.applied)
	close(in.changed)
	in.changed = make(chan struct{})
	in.mu.Unlock()
	if err := writeOffsets(filepath.Join(in.opts.StateDir, offsetsFile), snapshot); err != nil {
		in.logger.Error("ingester_offsets_write_failed", "err", err)
	}
}

// commit commits the applied offsets that moved since the last commit.
func (in *Ingester) commit(ctx context.Context) error {
	in.mu.Lock()
	next := map[int32]int64{}
	for p, o := range in.applied {
		if c, ok := in.committed[p]; !ok || c != o {
			next[p] = o
		}
	}
	in.mu.Unlock()
	if len(next) == 0 {
		return nil
	}
	if err := in.log.Commit(ctx, next); err != nil {
		return err
	}
	in.mu.Lock()
	maps.Copy(in.committed, next)
	in.mu.Unlock()
	return nil
}

// reachedLocked reports whether every partition applied up to target.
func (in *Ingester) reachedLocked(target map[int32]int64) bool {
	for _, p := range in.opts.Partitions {
		if in.applied[p] < target[p] {
			return false
		}
	}
	return true
}

// Ready reports whether the ingester serves current data: it caught up
// with the log as it was at start, and what it has not applied yet was
// produced within MaxLag.
func (in *Ingester) Ready() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.caughtUp {
		return false
	}
	now := in.opts.Now()
	for _, p := range in.opts.Partitions {
		if in.applied[p] < in.hwm[p] && now.Sub(in.lastTime[p]) > in.opts.MaxLag {
			return false
		}
	}
	return true
}

// Status reports the ingester for queriers (readapi.Status).
func (in *Ingester) Status() readapi.Status {
	ready := in.Ready()
	in.mu.Lock()
	defer in.mu.Unlock()
	return readapi.Status{Partitions: slices.Clone(in.opts.Partitions), TotalPartitions: in.opts.TotalPartitions, Ready: ready,
		Applied: maps.Clone(in.applied), HighWatermark: maps.Clone(in.hwm)}
}

// WaitFor returns once every partition applied every record produced
// before the call (read-after-write), or fails after ConsistencyTimeout or
// when ctx ends.
func (in *Ingester) WaitFor(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, in.opts.ConsistencyTimeout)
	defer cancel()
	end, err := in.log.EndOffsets(ctx)
	if err != nil {
		return fmt.Errorf("read-after-write: %w", err)
	}
	for {
		in.mu.Lock()
		ok, ch := in.reachedLocked(end), in.changed
		in.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("read-after-write: waiting for offsets %v: %w", end, context.Cause(ctx))
		}
	}
}

func readOffsets(path string) (map[int32]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ingester offsets: %w", err)
	}
	var m map[int32]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read ingester offsets %s: %w", path, err)
	}
	return m, nil
}

// writeOffsets replaces the offsets file atomically (a kill leaves the old
// or the new one).
func writeOffsets(path string, m map[int32]int64) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
