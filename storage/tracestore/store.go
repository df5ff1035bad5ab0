package tracestore

import (
	"cmp"
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

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/storage/traceentry"
)

// Errors of the write path, in one block.
var (
	// ErrEmptyLabels: a pushed resource has no stream labels.
	ErrEmptyLabels = errors.New("trace resource has no stream labels")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("trace store closed")
)

// ResourceSpans is the spans of one resource in a push.
type ResourceSpans struct {
	// Labels are the resource's stream labels (service_name and the
	// canonical workload-context labels), sorted as labels.Labels are.
	Labels labels.Labels
	// Spans carry their trace ID and point to their Resource and Scope; the
	// store keeps the spans and everything they point to (the caller must
	// not modify them afterwards).
	Spans []traceentry.Span
}

// PushResult says what Push did.
type PushResult struct {
	// Accepted spans are stored; TooOld spans ended before now minus the
	// retention and were dropped.
	Accepted, TooOld int
}

// Store is the trace store. See the package documentation.
type Store struct {
	db      *pebble.DB
	ix      *index.Index
	opts    Options
	log     *slog.Logger
	partNs  int64
	indexed map[string]struct{}
	encs    sync.Pool // *encoder

	seq atomic.Uint64 // last sequence number handed out (recent records, blocks)

	// mu guards everything below; Push holds it only to link what it
	// committed into memory, readers to copy the head and the block list.
	mu        sync.RWMutex
	streams   map[index.ID]*stream
	parts     map[partMember]struct{}
	head      map[traceentry.TraceID]*headTrace
	headBytes int
	recents   map[uint64]int // recent record → head traces with spans in it
	blocks    []*blockMeta   // in seal order
	spanKeys  map[string]struct{}
	resKeys   map[string]struct{}
	lastCut   time.Time

	// dropMu is held shared by a push from its stream lookups until its
	// streams are linked, and exclusively while retention forgets streams.
	dropMu sync.RWMutex
	// sealMu serializes seals.
	sealMu sync.Mutex

	closed   atomic.Bool
	stop     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

type partMember struct {
	part int64
	id   index.ID
}

// stream is one trace resource stream.
type stream struct {
	id    index.ID
	ls    labels.Labels
	parts []int64 // sorted partitions with spans
}

// headTrace is the unsealed spans of one trace.
type headTrace struct {
	id      traceentry.TraceID
	spans   []traceentry.Span
	streams []index.ID // per span
	// pushes are the recent records holding the spans, each with the
	// number of spans the trace had once it was appended.
	pushes      []pushRef
	first, last time.Time // arrival of the first and the last spans
	bytes       int
}

type pushRef struct {
	seq uint64
	end int
}

// Open opens the trace store kept in db (opened with index.Merger()) with
// ix, the index over the same database: it restores the trace streams and
// their partition memberships into ix, loads the block headers and rebuilds
// the head from the recent records. The caller keeps ownership of db and ix.
func Open(ctx context.Context, db *pebble.DB, ix *index.Index, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open trace store: %w", err)
	}
	if opts.PartitionDuration == 0 {
		opts.PartitionDuration = ix.PartitionDuration()
	}
	if opts.PartitionDuration < time.Minute || opts.PartitionDuration > ix.PartitionDuration() {
		return nil, fmt.Errorf("open trace store: partition duration %v outside [1m, %v] (the index's)", opts.PartitionDuration, ix.PartitionDuration())
	}
	s := &Store{
		db:       db,
		ix:       ix,
		opts:     opts,
		log:      opts.Logger,
		partNs:   opts.PartitionDuration.Nanoseconds(),
		indexed:  map[string]struct{}{},
		streams:  map[index.ID]*stream{},
		parts:    map[partMember]struct{}{},
		head:     map[traceentry.TraceID]*headTrace{},
		recents:  map[uint64]int{},
		spanKeys: map[string]struct{}{},
		resKeys:  map[string]struct{}{},
		stop:     make(chan struct{}),
		lastCut:  opts.Now(),
	}
	for _, a := range opts.IndexedAttributes {
		s.indexed[a] = struct{}{}
	}
	s.encs.New = func() any { return newEncoder(s.indexed) }
	if err := s.load(ctx); err != nil {
		return nil, fmt.Errorf("open trace store: %w", err)
	}
	if opts.MaintenanceInterval > 0 {
		s.wg.Add(1)
		go s.maintenanceLoop()
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

// load restores streams, memberships, block headers, the head and the
// sequence counter.
func (s *Store) load(ctx context.Context) error {
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
	lo, hi = tagBound(tagStream)
	if err := s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 10 {
			return fmt.Errorf("stream key: %w", ErrCorrupt)
		}
		id := index.ID(binary.BigEndian.Uint64(k[2:]))
		ls, err := decodeLabels(v)
		if err != nil {
			return fmt.Errorf("stream %d: %w", id, err)
		}
		if err := s.ix.Restore(index.KindTrace, id, ls, newest[id]*s.partNs/1e6); err != nil {
			return fmt.Errorf("restore stream %d: %w", id, err)
		}
		s.streams[id] = &stream{id: id, ls: ls}
		return nil
	}); err != nil {
		return err
	}
	for m := range s.parts {
		s.ix.Touch(m.id, m.part*s.partNs/1e6)
		if st := s.streams[m.id]; st != nil {
			st.addPart(m.part)
		}
	}
	lo, hi = tagBound(tagBlock)
	if err := s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 18 {
			return fmt.Errorf("block key: %w", ErrCorrupt)
		}
		part := unflip(binary.BigEndian.Uint64(k[2:]))
		seq := binary.BigEndian.Uint64(k[10:])
		b, err := unmarshalBlock(part, seq, v)
		if err != nil {
			return err
		}
		s.blocks = append(s.blocks, b)
		if seq > s.seq.Load() {
			s.seq.Store(seq)
		}
		return nil
	}); err != nil {
		return err
	}
	slices.SortFunc(s.blocks, func(a, b *blockMeta) int { return cmp.Compare(a.seq, b.seq) })
	if v, closer, err := s.db.Get(seqKey()); err == nil {
		if len(v) == 8 && binary.BigEndian.Uint64(v) > s.seq.Load() {
			s.seq.Store(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("read sequence: %w", err)
	}
	lo, hi = tagBound(tagRecent)
	now := s.opts.Now()
	n := 0
	return s.scan(lo, hi, func(k, v []byte) error {
		if n++; n%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if len(k) != 10 {
			return fmt.Errorf("recent key: %w", ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(k[2:])
		parts, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("recent record %d: %w", seq, err)
		}
		for _, p := range parts {
			for _, id := range p.streams {
				if s.streams[id] == nil {
					return fmt.Errorf("recent record %d: unknown stream %d: %w", seq, id, ErrCorrupt)
				}
			}
		}
		s.appendHeadLocked(parts, seq, now)
		if seq > s.seq.Load() {
			s.seq.Store(seq)
		}
		return nil
	})
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

// addPart records that the stream has spans in part; Store.mu held.
func (st *stream) addPart(part int64) {
	if i, ok := slices.BinarySearch(st.parts, part); !ok {
		st.parts = slices.Insert(st.parts, i, part)
	}
}

// spanBytes estimates what a span costs in memory and on disk before
// compression (BlockBytes, MaxHeadBytes).
func spanBytes(sp *traceentry.Span) int {
	n := 96 + len(sp.Name) + len(sp.StatusMessage) + len(sp.TraceState)
	n += attrsBytes(sp.Attributes)
	for _, e := range sp.Events {
		n += 16 + len(e.Name) + attrsBytes(e.Attributes)
	}
	for _, l := range sp.Links {
		n += 40 + len(l.TraceState) + attrsBytes(l.Attributes)
	}
	return n
}

func attrsBytes(as traceentry.Attributes) int {
	n := 0
	for _, kv := range as {
		n += 16 + len(kv.Key) + len(kv.Value.Str())
	}
	return n
}

// appendHeadLocked links the parts of recent record seq into the head;
// s.mu held (or the store not yet shared).
func (s *Store) appendHeadLocked(parts []part, seq uint64, now time.Time) {
	for _, p := range parts {
		ht := s.head[p.id]
		if ht == nil {
			ht = &headTrace{id: p.id, first: now}
			s.head[p.id] = ht
		}
		ht.spans = append(ht.spans, p.spans...)
		ht.streams = append(ht.streams, p.streams...)
		ht.pushes = append(ht.pushes, pushRef{seq: seq, end: len(ht.spans)})
		ht.last = now
		for i := range p.spans {
			b := spanBytes(&p.spans[i])
			ht.bytes += b
			s.headBytes += b
			s.noteKeys(&p.spans[i])
		}
		s.recents[seq]++
	}
}

// noteKeys remembers the attribute names of a head span for the tag APIs
// (bounded like a block's lists); s.mu held.
func (s *Store) noteKeys(sp *traceentry.Span) {
	for _, kv := range sp.Attributes {
		if len(s.spanKeys) < maxBlockKeys {
			s.spanKeys[kv.Key] = struct{}{}
		}
	}
	if sp.Resource != nil {
		for _, kv := range sp.Resource.Attributes {
			if len(s.resKeys) < maxBlockKeys {
				s.resKeys[kv.Key] = struct{}{}
			}
		}
	}
}

// Push stores the spans durably: when it returns nil, every accepted span
// survives a crash (kill -9). Spans that ended before now minus
// Options.Retention are dropped and counted in TooOld. Resources without
// spans are ignored. Safe for concurrent use; concurrent pushes share
// fsyncs.
func (s *Store) Push(ctx context.Context, batch []ResourceSpans) (PushResult, error) {
	var res PushResult
	if s.closed.Load() {
		return res, ErrClosed
	}
	if err := s.admit(); err != nil {
		return res, err
	}
	minEnd := int64(math.MinInt64)
	if r := s.opts.Retention; r > 0 {
		minEnd = s.opts.Now().Add(-r).UnixNano()
	}
	for _, rs := range batch {
		if rs.Labels.IsEmpty() && len(rs.Spans) > 0 {
			return res, ErrEmptyLabels
		}
	}
	tid, err := tenant.WriteID(ctx)
	if err != nil {
		return res, fmt.Errorf("push: %w", err)
	}
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	b := s.db.NewBatch()
	defer b.Close()
	byTrace := map[traceentry.TraceID]int{}
	var parts []part
	var newStreams []*stream
	var newParts []partMember
	for _, rs := range batch {
		var id index.ID
		known := false
		for i := range rs.Spans {
			sp := &rs.Spans[i]
			if sp.EndUnixNano < minEnd {
				res.TooOld++
				continue
			}
			if !known {
				var err error
				if id, err = s.streamID(b, tenant.Add(rs.Labels, tid), sp.StartUnixNano, &newStreams); err != nil {
					return PushResult{}, err
				}
				known = true
			}
			m := partMember{s.partOf(sp.StartUnixNano), id}
			s.mu.RLock()
			_, ok := s.parts[m]
			s.mu.RUnlock()
			if !ok && !slices.Contains(newParts, m) {
				newParts = append(newParts, m)
				if err := b.Set(partKey(m.part, id), nil, nil); err != nil {
					return PushResult{}, fmt.Errorf("push: %w", err)
				}
			}
			pi, ok := byTrace[sp.TraceID]
			if !ok {
				pi = len(parts)
				byTrace[sp.TraceID] = pi
				parts = append(parts, part{id: sp.TraceID})
			}
			parts[pi].spans = append(parts[pi].spans, *sp)
			parts[pi].streams = append(parts[pi].streams, id)
			res.Accepted++
		}
	}
	if len(parts) == 0 {
		return res, nil
	}
	seq := s.seq.Add(1)
	enc := s.encs.Get().(*encoder)
	rec := enc.appendRecord(nil, parts)
	s.encs.Put(enc)
	if err := b.Set(recentKey(seq), rec, nil); err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return PushResult{}, err
	}
	if err := s.ix.Commit(b, pebble.Sync); err != nil {
		return PushResult{}, fmt.Errorf("push: commit: %w", err)
	}
	now := s.opts.Now()
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
	s.appendHeadLocked(parts, seq, now)
	s.mu.Unlock()
	for _, m := range newParts {
		s.ix.Touch(m.id, m.part*s.partNs/1e6)
	}
	for _, p := range parts {
		for i := range p.spans {
			s.ix.Touch(p.streams[i], nsToMs(p.spans[i].StartUnixNano))
		}
	}
	return res, nil
}

// streamID returns the stream of ls, writing its record into b the first
// time the store sees it.
func (s *Store) streamID(b *pebble.Batch, ls labels.Labels, tNs int64, newStreams *[]*stream) (index.ID, error) {
	id, _, err := s.ix.GetOrCreate(index.KindTrace, ls, nsToMs(tNs))
	if err != nil {
		return 0, fmt.Errorf("push: %w", err)
	}
	s.mu.RLock()
	_, known := s.streams[id]
	s.mu.RUnlock()
	if known || slices.ContainsFunc(*newStreams, func(st *stream) bool { return st.id == id }) {
		return id, nil
	}
	*newStreams = append(*newStreams, &stream{id: id, ls: ls.Copy()})
	if err := b.Set(streamKey(id), appendLabels(nil, ls), nil); err != nil {
		return 0, fmt.Errorf("push: %w", err)
	}
	return id, nil
}

// Stats are the store's current sizes.
type Stats struct {
	Streams, HeadTraces, HeadBytes, Blocks, BlockTraces, BlockSpans int
}

// Stats reports the store's sizes. Safe for concurrent use.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{Streams: len(s.streams), HeadTraces: len(s.head), HeadBytes: s.headBytes, Blocks: len(s.blocks)}
	for _, b := range s.blocks {
		st.BlockTraces += b.traces
		st.BlockSpans += b.spans
	}
	return st
}

// Close stops the background goroutine and then, unless
// Options.NoSealOnClose, seals the whole head into blocks (the head is
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
			return fmt.Errorf("close trace store: %w", err)
		}
		lo, hi := tagBound(tagRecent)
		if err := s.db.Compact(context.Background(), lo, hi, false); err != nil {
			return fmt.Errorf("close trace store: compact recent records: %w", err)
		}
	}
	return nil
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
			s.log.Error("trace_seal_failed", "err", err)
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
