package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index/tenant"
)

// Kind is the signal kind of a stream. It is part of every postings key.
type Kind uint8

const (
	// KindAny matches every kind in queries. It is not a valid kind for writes.
	KindAny Kind = 0
	// KindMetric is a metric series.
	KindMetric Kind = 1
	// KindLog is a log stream.
	KindLog Kind = 2
	// KindTrace is a trace resource (service).
	KindTrace Kind = 3

	numKinds = 4
)

func (k Kind) valid() bool { return k >= KindMetric && k <= KindTrace }

// String returns the kind's lowercase name.
func (k Kind) String() string {
	switch k {
	case KindAny:
		return "any"
	case KindMetric:
		return "metric"
	case KindLog:
		return "log"
	case KindTrace:
		return "trace"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// kindsOf returns the concrete kinds a query kind covers.
func kindsOf(k Kind) []Kind {
	if k == KindAny {
		return []Kind{KindMetric, KindLog, KindTrace}
	}
	if k.valid() {
		return []Kind{k}
	}
	return nil
}

// ID identifies a stream. IDs are allocated monotonically from 1, shared by
// all kinds, and never reused. 0 is never a valid ID.
type ID uint64

// ReservedPrefix starts the label names of the streams weft writes itself
// (investigate.KindLabel, "__weft_kind__", on incidents): ingest paths
// refuse it, so that no client can plant a record weft reads as its own.
const ReservedPrefix = "__weft_"

// Sentinel errors; inspect with errors.Is.
var (
	ErrInvalidKind = errors.New("invalid stream kind")
	ErrEmptyLabels = errors.New("empty label set")
	// ErrReservedLabel: a new stream's labels name tenant.LabelName,
	// which only the tenant of a write sets.
	ErrReservedLabel = errors.New("label name " + tenant.LabelName + " is reserved for the tenant")
	ErrIDConflict    = errors.New("stream id conflict")
	ErrCorrupt       = errors.New("corrupt index data")
	ErrClosed        = errors.New("index closed")
)

// Options configure an Index. The zero value of a field means its default.
type Options struct {
	// PartitionDuration is the time span of one postings partition.
	// Default 24h; at least one minute. It must not change for an existing
	// database: partition numbers are timestamps divided by it.
	PartitionDuration time.Duration
	// HotPartitions is how many of the newest partitions Open loads into
	// memory eagerly; older ones are loaded on first use. Default 2.
	HotPartitions int
	// Logger receives rare events (open, drop). Nil means no logging.
	Logger *slog.Logger
	// AdmitNew, when set, is asked before a stream of kind is created (never
	// for a stream that exists): an error refuses the creation and is
	// returned unwrapped, nothing created. The substrate sets it to its
	// memory budget, so that new streams of every signal stop there.
	AdmitNew func(kind Kind) error
	// Commit commits a batch on the database; every store that shares the
	// database commits through Index.Commit. Pebble panics, rather than
	// returning an error, when a write to its own WAL fails; the substrate
	// sets Commit to its guard's, which turns that into a fatal store
	// error. Default (*pebble.Batch).Commit.
	Commit func(b *pebble.Batch, o *pebble.WriteOptions) error
	// Now is the wall clock that dates stream creation (Churn). Default
	// time.Now.
	Now func() time.Time
}

// PartitionDuration returns the time span of one postings partition; the
// signal stores partition their data by the same span.
func (ix *Index) PartitionDuration() time.Duration { return ix.opts.PartitionDuration }

// DefaultOptions returns the default options: PartitionDuration 24h,
// HotPartitions 2, Logger nil (no-op).
func DefaultOptions() Options {
	return Options{PartitionDuration: 24 * time.Hour, HotPartitions: 2}
}

func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.PartitionDuration == 0 {
		o.PartitionDuration = d.PartitionDuration
	}
	if o.PartitionDuration < time.Minute {
		return o, fmt.Errorf("partition duration %v below one minute", o.PartitionDuration)
	}
	if o.HotPartitions <= 0 {
		o.HotPartitions = d.HotPartitions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Commit == nil {
		o.Commit = (*pebble.Batch).Commit
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Commit commits b on the index's database with o, through Options.Commit.
func (ix *Index) Commit(b *pebble.Batch, o *pebble.WriteOptions) error {
	return ix.opts.Commit(b, o)
}

// Index is the stream registry and time-partitioned inverted index. All
// methods are safe for concurrent use. It keeps the registry and the recent
// partitions in memory and writes to the Pebble database only in Persist,
// Delete and DropPartitionsBefore. It does not own the database: Close does
// not close it, and the caller must not close the database before the Index.
type Index struct {
	db     *pebble.DB
	opts   Options
	partMs int64 // partition duration in milliseconds
	logger *slog.Logger

	syms       *symbols
	hashShards [numShards]hashShard
	recs       *recStore
	encs       encArena      // compact label sets of the records
	nextID     atomic.Uint64 // next ID to allocate
	hours      hourMarks     // first ID of each hour (churn.go)
	numStreams [numKinds]atomic.Int64

	partsMu sync.RWMutex
	parts   map[int64]*partition // guarded by partsMu
	minPart int64                // partitions below were dropped; guarded by partsMu
	// kindCut[k]: kind k's postings below this partition were dropped
	// (retention); guarded by writeMu.
	kindCut [numKinds]int64
	head    atomic.Pointer[partition]

	pendingMu  sync.Mutex
	pendingNew *roaring64.Bitmap // streams created since the last Persist
	// legacyRecords: the store holds per-stream records of an earlier
	// version (0x01 's'), which deletions must remove too. Set by Open.
	legacyRecords bool

	writeMu sync.Mutex // serializes Persist, Delete and DropPartitionsBefore
	closed  atomic.Bool
}

// Close releases the index's memory. It neither persists nor closes the
// database; call Persist first. Close is idempotent; other methods must not be
// called after it (those that return an error return ErrClosed).
func (ix *Index) Close() error {
	if ix.closed.Swap(true) {
		return nil
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	ix.partsMu.Lock()
	ix.parts = map[int64]*partition{}
	ix.head.Store(nil)
	ix.partsMu.Unlock()
	return nil
}

// partOf returns the partition number of timestamp t (milliseconds).
func (ix *Index) partOf(t int64) int64 {
	p := t / ix.partMs
	if t%ix.partMs < 0 {
		p--
	}
	return p
}

// NumStreams returns the number of streams of kind known to the index
// (KindAny: all kinds): the active series gauge.
func (ix *Index) NumStreams(kind Kind) int {
	var n int64
	for _, k := range kindsOf(kind) {
		n += ix.numStreams[k].Load()
	}
	return int(n)
}

// checkCtx returns ctx's error every ctxCheckEvery calls of a long loop.
const ctxCheckEvery = 4096

func checkCtx(ctx context.Context, i int) error {
	if i%ctxCheckEvery == 0 {
		return ctx.Err()
	}
	return nil
}
