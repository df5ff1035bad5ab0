package logstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/logentry"
)

// Errors of the write path, in one block.
var (
	// ErrEmptyLabels: a pushed stream has no labels.
	ErrEmptyLabels = errors.New("stream has no labels")
	// ErrTenant: a pushed stream has the tenant's reserved label, or the
	// push names no single tenant (package tenant).
	ErrTenant = errors.New("invalid tenant")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("log store closed")
	// ErrTooOld: an entry is older than the retention; the next retention
	// pass would drop it.
	ErrTooOld = errors.New("entry older than the log retention")
	// ErrInvalidDelete: a delete request is malformed (deletes.go).
	ErrInvalidDelete = errors.New("invalid delete request")
	// ErrDeleteNotFound: no delete request has the ID.
	ErrDeleteNotFound = errors.New("could not find delete request with given id")
	// ErrDeleteProcessed: the delete request is processed; it cannot be
	// cancelled.
	ErrDeleteProcessed = errors.New("deletion of request which is in process or already processed is not allowed")
)

// PushStream is one stream of a push: its labels (sorted, as labels.Labels
// guarantees) and entries in any order.
type PushStream struct {
	Labels  labels.Labels
	Entries []logentry.Entry
}

// Store is the log store. See the package documentation.
type Store struct {
	db     *pebble.DB
	ix     *index.Index
	opts   Options
	log    *slog.Logger
	partNs int64

	seq atomic.Uint64 // last sequence number handed out (recent records, chunks)

	mu      sync.RWMutex
	streams map[index.ID]*stream
	parts   map[partMember]struct{} // P records written

	// dropMu is held shared by a push from its stream lookups until the
	// streams are registered, and exclusively by DropBefore while it
	// forgets streams with nothing left, so that a push never writes to a
	// stream whose record is being deleted.
	dropMu sync.RWMutex

	// sealMu is held exclusively while a seal commits its chunks and trims
	// the head, and shared while a query snapshots heads and Pebble, so a
	// query sees every entry exactly once.
	sealMu sync.RWMutex

	filters filterCache

	// deletes are the delete requests (deletes.go); reclaimMu serializes
	// their processing.
	deletes   deleteSet
	reclaimMu sync.Mutex

	// sealQ hands full heads to the sealer goroutine, so that compressing
	// and building token filters stays off the push path. nil without
	// background goroutines (then Push seals inline).
	sealQ chan *stream

	closed   atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type partMember struct {
	part int64
	id   index.ID
}

// stream is the in-memory head of one log stream: the entries of its recent
// records, in push order.
type stream struct {
	id index.ID
	ls labels.Labels // as in the index, with the tenant label (package tenant)
	// pub is ls as readers see it: without the tenant label.
	pub labels.Labels

	parts []int64 // sorted partitions with P records; guarded by Store.mu
	// chunks: the sealed chunks' headers per partition, in key order;
	// guarded by Store.sealMu, slices copy-on-write (chunkrefs.go).
	chunks map[int64][]chunkRef

	mu       sync.Mutex
	entries  []logentry.Entry
	segs     []headSeg // token filters over entries, in segments
	names    []string  // sorted metadata names of the entries (a superset after sealing)
	unsorted bool      // entries are not in timestamp order
	slab     []byte    // the head's lines, copied (keepLine)
	seqs     []uint64  // recent records holding entries
	bytes    int
	oldest   time.Time // arrival of the oldest unsealed push (zero: empty)
	sealing  bool
	sealCond *sync.Cond
}

func newStream(id index.ID, ls labels.Labels) *stream {
	s := &stream{id: id, ls: ls, pub: tenant.Strip(ls)}
	s.sealCond = sync.NewCond(&s.mu)
	return s
}

// Open opens the log store kept in db (the database of storage.DB, opened
// with index.Merger()) with ix, the index over the same database. It
// restores the log streams and their partition memberships into ix and
// rebuilds the heads from the recent records. Call it after storage.Open and
// before any write. The caller keeps ownership of db and ix.
func Open(ctx context.Context, db *pebble.DB, ix *index.Index, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open log store: %w", err)
	}
	if opts.PartitionDuration == 0 {
		opts.PartitionDuration = ix.PartitionDuration()
	}
	if opts.PartitionDuration < time.Minute || opts.PartitionDuration > ix.PartitionDuration() {
		return nil, fmt.Errorf("open log store: partition duration %v outside [1m, %v] (the index's)", opts.PartitionDuration, ix.PartitionDuration())
	}
	s := &Store{
		db:      db,
		ix:      ix,
		opts:    opts,
		log:     opts.Logger,
		partNs:  opts.PartitionDuration.Nanoseconds(),
		streams: map[index.ID]*stream{},
		parts:   map[partMember]struct{}{},
		stop:    make(chan struct{}),
	}
	s.filters.max = opts.FilterCacheBytes
	if err := s.load(ctx); err != nil {
		return nil, fmt.Errorf("open log store: %w", err)
	}
	if opts.MaintenanceInterval > 0 {
		s.sealQ = make(chan *stream, sealQueueLen)
		s.wg.Add(2)
		go s.maintenanceLoop()
		go s.sealerLoop()
	}
	return s, nil
}

func (s *Store) partOf(tNs int64) int64 {
	p := tNs / s.partNs
	if tNs < 0 && tNs%s.partNs != 0 {
		p--
	}
	return p
}

func nsToMs(t int64) int64 {
	ms := t / 1e6
	if t < 0 && t%1e6 != 0 {
		ms--
	}
	return ms
}

// load restores streams, memberships, heads and the sequence counter.
func (s *Store) load(ctx context.Context) error {
	// Memberships first: a stream is restored into its newest partition.
	newest := map[index.ID]int64{}
	lo, hi := tagBound(tagPart)
	if err := s.scan(lo, hi, func(k, _ []byte) error {
		if len(k) != 18 {
			return fmt.Errorf("membership key: %w", ErrCorrupt)
		}
		p := unflip(binary.BigEndian.Uint64(k[2:]))
		id := index.ID(binary.BigEndian.Uint64(k[10:]))
		s.parts[partMember{p, id}] = struct{}{}
		if q, ok := newest[id]; !ok || p > q {
			newest[id] = p
		}
		return nil
	}); err != nil {
		return err
	}
	b := labels.NewScratchBuilder(8)
	lo, hi = tagBound(tagStream)
	if err := s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 10 {
			return fmt.Errorf("stream key: %w", ErrCorrupt)
		}
		id := index.ID(binary.BigEndian.Uint64(k[2:]))
		ls, rest, err := decodeLabels(&b, v)
		if err != nil || len(rest) != 0 {
			return fmt.Errorf("stream %d labels: %w", id, ErrCorrupt)
		}
		if err := s.ix.Restore(index.KindLog, id, ls, newest[id]*s.partNs/1e6); err != nil {
			return fmt.Errorf("restore stream %d: %w", id, err)
		}
		s.streams[id] = newStream(id, ls)
		return nil
	}); err != nil {
		return err
	}
	if err := s.loadChunks(); err != nil {
		return err
	}
	if err := s.loadDeletes(); err != nil {
		return err
	}
	for m := range s.parts {
		s.ix.Touch(m.id, m.part*s.partNs/1e6)
		if st := s.streams[m.id]; st != nil {
			st.addPart(m.part)
		}
	}
	if v, closer, err := s.db.Get(seqKey()); err == nil {
		if len(v) == 8 {
			s.seq.Store(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("read sequence: %w", err)
	}
	lo, hi = tagBound(tagRecent)
	now := s.opts.Now()
	n := 0
	if err := s.scan(lo, hi, func(k, v []byte) error {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if len(k) != 18 {
			return fmt.Errorf("recent key: %w", ErrCorrupt)
		}
		id := index.ID(binary.BigEndian.Uint64(k[2:]))
		seq := binary.BigEndian.Uint64(k[10:])
		st := s.streams[id]
		if st == nil {
			return fmt.Errorf("recent record of unknown stream %d: %w", id, ErrCorrupt)
		}
		es, err := decodeEntries(nil, v)
		if err != nil {
			return fmt.Errorf("recent record %d/%d: %w", id, seq, err)
		}
		st.appendLocked(es, seq, now)
		if seq > s.seq.Load() {
			s.seq.Store(seq)
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

func (s *Store) scan(lo, hi []byte, f func(k, v []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("scan: %w", err)
		}
		if err := f(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// slabSize is the largest block head lines are copied into.
const slabSize = 64 << 10

// keepLine copies a line into the head's slab, so that the head does not
// keep alive the request it came from (pushed lines are often substrings
// of the whole request body); st.mu held. Slab bytes are written once and
// never moved: a full slab is left to the lines in it.
func (st *stream) keepLine(line string) string {
	if len(line) == 0 {
		return ""
	}
	if len(st.slab)+len(line) > cap(st.slab) {
		// Slabs double from 1 KiB, so a quiet stream's head stays small.
		st.slab = make([]byte, 0, max(min(2*cap(st.slab), slabSize), 1<<10, len(line)))
	}
	start := len(st.slab)
	st.slab = append(st.slab, line...)
	return unsafe.String(&st.slab[start], len(line))
}

// addPart records that the stream has data in part; Store.mu held.
func (st *stream) addPart(part int64) {
	if i, ok := slices.BinarySearch(st.parts, part); !ok {
		st.parts = slices.Insert(st.parts, i, part)
	}
}

// appendLocked adds the entries of one recent record; s.mu held (or the
// stream not yet shared).
func (st *stream) appendLocked(es []logentry.Entry, seq uint64, now time.Time) {
	if len(st.entries) == 0 {
		st.oldest = now
	}
	for i, e := range es {
		if i == 0 && len(st.entries) > 0 && e.Timestamp < st.entries[len(st.entries)-1].Timestamp ||
			i > 0 && e.Timestamp < es[i-1].Timestamp {
			st.unsorted = true
		}
	}
	for _, e := range es {
		e.Line = st.keepLine(e.Line)
		st.entries = append(st.entries, e)
	}
	st.indexHead()
	st.seqs = append(st.seqs, seq)
	for _, e := range es {
		st.bytes += entrySize(e)
		st.names = addNames(st.names, e.Metadata)
	}
}

// Push stores the streams durably: when it returns nil, every entry
// survives a crash. Streams with no entries are ignored. Safe for
// concurrent use; concurrent pushes share fsyncs.
func (s *Store) Push(ctx context.Context, streams []PushStream) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.admit(); err != nil {
		return err
	}
	type pending struct {
		st      *stream
		seq     uint64
		entries []logentry.Entry
	}
	minT := int64(math.MinInt64)
	if r := s.opts.Retention; r > 0 {
		minT = s.opts.Now().Add(-r).UnixNano()
	}
	for _, ps := range streams {
		if ps.Labels.IsEmpty() && len(ps.Entries) > 0 {
			return ErrEmptyLabels
		}
		for _, e := range ps.Entries {
			if e.Timestamp < minT {
				return fmt.Errorf("%w: entry at %s, stream %s, is older than %s", ErrTooOld,
					time.Unix(0, e.Timestamp).UTC().Format(time.RFC3339Nano), ps.Labels, s.opts.Retention)
			}
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	var todo []pending
	var newParts []partMember
	var newStreams []*stream
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	tid, err := tenant.WriteID(ctx)
	if err != nil {
		return fmt.Errorf("push: %w: %w", ErrTenant, err)
	}
	for _, ps := range streams {
		if len(ps.Entries) == 0 {
			continue
		}
		if ps.Labels.Has(tenant.LabelName) {
			return fmt.Errorf("push: %w: label name %q is reserved for the tenant", ErrTenant, tenant.LabelName)
		}
		ps.Labels = tenant.Add(ps.Labels, tid)
		id, _, err := s.ix.GetOrCreate(index.KindLog, ps.Labels, nsToMs(ps.Entries[0].Timestamp))
		if err != nil {
			return fmt.Errorf("push: %w", err)
		}
		s.mu.RLock()
		st := s.streams[id]
		s.mu.RUnlock()
		if st == nil {
			st = newStream(id, ps.Labels.Copy())
			newStreams = append(newStreams, st)
			if err := b.Set(streamKey(id), appendLabels(nil, ps.Labels), nil); err != nil {
				return fmt.Errorf("push: %w", err)
			}
		}
		for _, e := range ps.Entries {
			m := partMember{s.partOf(e.Timestamp), id}
			s.mu.RLock()
			_, ok := s.parts[m]
			s.mu.RUnlock()
			if ok || slices.Contains(newParts, m) {
				continue
			}
			newParts = append(newParts, m)
			if err := b.Set(partKey(m.part, id), nil, nil); err != nil {
				return fmt.Errorf("push: %w", err)
			}
		}
		seq := s.seq.Add(1)
		key := recentKey(id, seq)
		op := b.SetDeferred(len(key), entriesSize(ps.Entries)) // encoded in place: no copy
		copy(op.Key, key)
		if v := appendEntries(op.Value[:0], ps.Entries); len(v) != len(op.Value) {
			panic(fmt.Sprintf("BUG: entries encode to %d bytes, sized %d", len(v), len(op.Value)))
		}
		if err := op.Finish(); err != nil {
			return fmt.Errorf("push: %w", err)
		}
		todo = append(todo, pending{st, seq, ps.Entries})
	}
	if len(todo) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("push: commit: %w", err)
	}
	s.mu.Lock()
	for _, st := range newStreams {
		if _, ok := s.streams[st.id]; !ok {
			s.streams[st.id] = st
		}
	}
	for _, m := range newParts {
		s.parts[m] = struct{}{}
		s.streams[m.id].addPart(m.part)
	}
	for i := range todo {
		todo[i].st = s.streams[todo[i].st.id] // a concurrent push may have registered it first
	}
	s.mu.Unlock()
	now := s.opts.Now()
	for _, p := range todo {
		for _, e := range p.entries {
			s.ix.Touch(p.st.id, nsToMs(e.Timestamp))
		}
		p.st.mu.Lock()
		p.st.appendLocked(p.entries, p.seq, now)
		full := len(p.st.entries) >= s.opts.SealEntries || p.st.bytes >= s.opts.SealBytes
		p.st.mu.Unlock()
		if full && s.sealQ != nil {
			select {
			case s.sealQ <- p.st:
				continue
			default: // queue full: seal here, which slows the pushers down
			}
		}
		if full {
			if err := s.sealStream(p.st); err != nil {
				// The entries are durable; sealing is retried by maintenance.
				s.log.Error("log_seal_failed", "stream", uint64(p.st.id), "err", err)
			}
		}
	}
	return nil
}

// Close stops the background goroutines and then, unless
// Options.NoSealOnClose, seals every head into chunks and compacts the
// range of the (now deleted) recent records, so that the data is stored
// compactly and the next Open reads no recent records (the heads are
// durable either way). Pushes after Close fail with ErrClosed. Idempotent;
// the database stays open.
func (s *Store) Close() error {
	first := false
	s.stopOnce.Do(func() {
		first = true
		s.closed.Store(true)
		close(s.stop)
	})
	s.wg.Wait()
	if first && !s.opts.NoSealOnClose && s.admit() == nil {
		if err := s.Seal(context.Background(), true); err != nil {
			return fmt.Errorf("close log store: %w", err)
		}
		// Recent records flushed before they were sealed stay in the
		// files, shadowed by their deletions, until a compaction reaches
		// them: compact their range now (it holds nothing live).
		lo, hi := tagBound(tagRecent)
		if err := s.db.Compact(context.Background(), lo, hi, false); err != nil {
			return fmt.Errorf("close log store: compact recent records: %w", err)
		}
	}
	return nil
}

// sealQueueLen bounds the heads waiting for the sealer; beyond it pushes
// seal inline (backpressure).
const sealQueueLen = 1024

func (s *Store) sealerLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case st := <-s.sealQ:
			st.mu.Lock()
			full := len(st.entries) >= s.opts.SealEntries || st.bytes >= s.opts.SealBytes
			st.mu.Unlock()
			if !full {
				continue // sealed meanwhile
			}
			if err := s.sealStream(st); err != nil {
				s.log.Error("log_seal_failed", "stream", uint64(st.id), "err", err)
			}
		}
	}
}

func (s *Store) maintenanceLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.MaintenanceInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := s.Seal(ctx, false); err != nil && ctx.Err() == nil {
			s.log.Error("log_seal_failed", "err", err)
		}
		if err := s.ReclaimDeletes(ctx, s.opts.Now().Add(-s.opts.DeleteCancelPeriod).UnixNano()); err != nil && ctx.Err() == nil {
			s.log.Error("log_delete_reclaim_failed", "err", err)
		}
		cancel()
	}
}

// admit asks Options.Admit whether writes are taken now.
func (s *Store) admit() error {
	if s.opts.Admit == nil {
		return nil
	}
	return s.opts.Admit()
}
