package logstore

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
)

// Select implements query/logql's Source (checked in api/, which wires the
// two): the entries in [p.Start, p.End) of the
// log streams matching p.Matchers, stream after stream (ascending stream
// ID), each stream's entries in ascending timestamp order (entries with
// equal timestamps in the order they were pushed within a chunk or head).
// An entry with the timestamp and line of one already returned for its
// stream is a duplicate and is skipped.
// Chunks whose token filter rules out a LineContains filter are not read.
// The iterator reads a consistent snapshot taken now. Safe for concurrent
// use.
func (s *Store) Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error) {
	return s.SelectWithHints(ctx, p, Hints{})
}

// Hints are pushdown hints beyond logentry.SelectParams. Like line filters they
// only let the store skip chunks; the caller still filters every entry.
type Hints struct {
	// MetadataEqual: every wanted entry carries each of these structured
	// metadata pairs (a conjunction, e.g. from `| trace_id="abc"` outside
	// any `or`), or has a stream label of that name. Chunks of streams
	// without such a label whose token filter lacks a pair are skipped.
	MetadataEqual []labels.Label
}

// SelectWithMetadata is Select with Hints.MetadataEqual set to md (the
// method query/logql's MetadataHintSource asks for).
func (s *Store) SelectWithMetadata(ctx context.Context, p logentry.SelectParams, md []labels.Label) (logentry.Iterator, error) {
	return s.SelectWithHints(ctx, p, Hints{MetadataEqual: md})
}

// SelectWithHints is Select with extra pushdown hints.
func (s *Store) SelectWithHints(ctx context.Context, p logentry.SelectParams, h Hints) (logentry.Iterator, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if p.End <= p.Start {
		return &iterator{}, nil
	}
	ids, err := s.ix.Postings(ctx, index.KindLog, nsToMs(p.Start), nsToMs(p.End-1), p.Matchers...)
	if err != nil {
		return nil, fmt.Errorf("select logs: %w", err)
	}
	it := &iterator{ctx: ctx, s: s, p: p, hints: h}
	firstPart, lastPart := s.partOf(p.Start), s.partOf(p.End-1)
	s.sealMu.RLock()
	s.mu.RLock()
	for _, id := range ids.ToArray() {
		st := s.streams[index.ID(id)]
		if st == nil {
			continue
		}
		sel := selStream{st: st, dels: s.deletes.active(st.ls, p.Start, p.End)}
		for _, part := range st.parts {
			if part >= firstPart && part <= lastPart {
				sel.parts = append(sel.parts, part)
				sel.refs = append(sel.refs, st.chunks[part])
			}
		}
		st.mu.Lock()
		sel.head = st.selectHead(p, h)
		sel.headNames = st.names
		unsorted := st.unsorted
		st.mu.Unlock()
		if unsorted {
			slices.SortStableFunc(sel.head, func(a, b logentry.Entry) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		}
		it.streams = append(it.streams, sel)
	}
	s.mu.RUnlock()
	it.snap = s.db.NewSnapshot()
	s.sealMu.RUnlock()
	return it, nil
}

// selStream is one selected stream: its head entries in range (sorted) and
// the partitions to read chunks from.
type selStream struct {
	st        *stream
	head      []logentry.Entry
	headNames []string // a superset of the head's metadata names (never modified)
	parts     []int64
	refs      [][]chunkRef     // per part: its chunks (never modified)
	dels      []*DeleteRequest // delete requests covering some of it (deletes.go)
}

// iterator implements logentry.Iterator over a Pebble snapshot.
type iterator struct {
	ctx     context.Context
	s       *Store
	p       logentry.SelectParams
	hints   Hints
	snap    *pebble.Snapshot
	streams []selStream
	next    int // index of the next stream in streams

	cur   labels.Labels
	dels  []*DeleteRequest // of the current stream
	merge mergeHeap
	dups  dupFilter
	at    logentry.Entry
	err   error
	steps int

	// ChunksRead and ChunksSkipped count chunks decoded and chunks ruled out
	// by their token filter (for tests and stats).
	chunksRead, chunksSkipped int
}

func (it *iterator) Next() bool {
	if it.err != nil || it.snap == nil {
		return false
	}
	for {
		if it.steps++; it.steps%1024 == 0 {
			if err := it.ctx.Err(); err != nil {
				it.err = err
				return false
			}
		}
		if len(it.merge) == 0 {
			if it.next >= len(it.streams) {
				return false
			}
			if err := it.openStream(it.streams[it.next]); err != nil {
				it.err = err
				return false
			}
			it.next++
			continue
		}
		top := it.merge[0]
		if top.pending != nil {
			es, err := it.readChunk(top.pending, top.meta)
			if err != nil {
				it.err = err
				return false
			}
			top.pending, top.entries = nil, es
			if len(es) == 0 {
				heap.Pop(&it.merge)
				continue
			}
			top.key = es[0].Timestamp
			heap.Fix(&it.merge, 0)
			continue
		}
		e := top.entries[0]
		top.entries = top.entries[1:]
		if len(top.entries) == 0 {
			heap.Pop(&it.merge)
		} else {
			top.key = top.entries[0].Timestamp
			heap.Fix(&it.merge, 0)
		}
		if e.Timestamp < it.p.Start || e.Timestamp >= it.p.End || len(it.dels) > 0 && deleted(it.dels, e) {
			continue
		}
		if it.dups.seen(e.Timestamp, e.Line) {
			continue
		}
		it.at = e
		return true
	}
}

// openStream fills the merge heap with the stream's head and the chunks
// that may match.
func (it *iterator) openStream(sel selStream) error {
	it.cur, it.dels = sel.st.pub, sel.dels
	it.merge = it.merge[:0]
	it.dups.reset()
	if len(sel.head) > 0 {
		it.merge = append(it.merge, &cursor{key: sel.head[0].Timestamp, entries: sel.head})
	}
	needFilter := false
	for _, f := range it.p.LineFilters {
		needFilter = needFilter || f.Op == logentry.LineContains
	}
	for _, l := range it.hints.MetadataEqual {
		needFilter = needFilter || !sel.st.ls.Has(l.Name)
	}
	for i := range sel.parts {
		if err := it.openPart(sel, sel.refs[i], needFilter); err != nil {
			return err
		}
	}
	heap.Init(&it.merge)
	return nil
}

// openPart adds to the merge heap the chunks (of sel, in one partition)
// that overlap the range and, when needFilter, whose token filter lets the
// line filters and metadata hints through.
func (it *iterator) openPart(sel selStream, refs []chunkRef, needFilter bool) error {
	for _, r := range refs {
		m := r.meta
		if m.minT >= it.p.End {
			break // key order is minT order
		}
		if m.maxT < it.p.Start {
			continue
		}
		if needFilter {
			f, err := it.filter(r)
			if err != nil {
				return fmt.Errorf("select logs: chunk of stream %d: %w", sel.st.id, err)
			}
			m.filter = f
			if !m.mayMatch(it.p.LineFilters) || !it.mayHaveMeta(sel.st, m) {
				it.chunksSkipped++
				continue
			}
			m.filter = bloom{}
		}
		it.merge = append(it.merge, &cursor{key: m.minT, pending: r.key, meta: m})
	}
	return nil
}

// filter returns a chunk's token filter: from the store's cache, else read
// (and cached).
func (it *iterator) filter(r chunkRef) (bloom, error) {
	if r.meta.version == chunkVersionV1 {
		v, closer, err := it.snap.Get(r.key)
		if err != nil {
			return bloom{}, fmt.Errorf("read chunk: %w", err)
		}
		defer closer.Close()
		m, err := decodeChunkMeta(v)
		if err != nil {
			return bloom{}, err
		}
		return bloom{b: slices.Clone(m.filter.b)}, nil
	}
	if b, ok := it.s.filters.get(r.key); ok {
		return bloom{b: b}, nil
	}
	v, closer, err := it.snap.Get(filterKey(r.key))
	if err != nil {
		return bloom{}, fmt.Errorf("read chunk filter: %w", err)
	}
	b := slices.Clone(v)
	closer.Close()
	m := r.meta
	if err := m.setFilter(b); err != nil {
		return bloom{}, err
	}
	it.s.filters.put(r.key, b)
	return m.filter, nil
}

// mayHaveMeta applies the metadata hints to a chunk of st. A hint on a
// name that is also a stream label cannot skip chunks: an entry without
// that metadata pair has the stream label's value.
func (it *iterator) mayHaveMeta(st *stream, m chunkMeta) bool {
	for _, l := range it.hints.MetadataEqual {
		if !st.ls.Has(l.Name) && !m.mayHaveMeta([]labels.Label{l}) {
			return false
		}
	}
	return true
}

// readChunk decodes the entries of the chunk with header key key.
func (it *iterator) readChunk(key []byte, m chunkMeta) ([]logentry.Entry, error) {
	it.chunksRead++
	var es []logentry.Entry
	err := it.withChunkData(key, m, func(m chunkMeta, data []byte) error {
		var err error
		es, err = decodeChunkEntries(nil, m, data)
		return err
	})
	return es, err
}

// withChunkData calls f with the chunk's header and data value (version 1:
// the header read again, with its inline body; data nil), valid during f.
func (it *iterator) withChunkData(key []byte, m chunkMeta, f func(m chunkMeta, data []byte) error) error {
	k := key
	if m.version != chunkVersionV1 {
		k = dataKey(key)
	}
	v, closer, err := it.snap.Get(k)
	if err != nil {
		return fmt.Errorf("select logs: read chunk: %w", err)
	}
	defer closer.Close()
	var data []byte
	if m.version == chunkVersionV1 {
		if m, err = decodeChunkMeta(v); err != nil {
			return fmt.Errorf("select logs: chunk %x: %w", key, err)
		}
	} else {
		data = v
	}
	if err := f(m, data); err != nil {
		return fmt.Errorf("select logs: chunk of stream %d: %w", binary.BigEndian.Uint64(key[10:]), err)
	}
	return nil
}

func (it *iterator) At() (labels.Labels, logentry.Entry) { return it.cur, it.at }
func (it *iterator) Err() error                          { return it.err }

func (it *iterator) Close() error {
	if it.snap == nil {
		return nil
	}
	err := it.snap.Close()
	it.snap = nil
	return err
}

// cursor is a sorted run of entries, or a chunk not read yet (pending)
// keyed by its minimum time.
type cursor struct {
	key     int64
	entries []logentry.Entry
	pending []byte
	meta    chunkMeta // of pending, without the parts aliasing the scan
}

// dupFilter finds entries with the timestamp and line of one already
// returned for the stream: a duplicate (a client retrying a push),
// returned once, as Loki does. Only entries at the last timestamp can be
// duplicates, so distinct timestamps cost one comparison.
type dupFilter struct {
	lastT int64
	lines []string // returned at lastT
	set   map[string]struct{}
	valid bool
}

func (d *dupFilter) reset() {
	d.valid = false
	d.lines = d.lines[:0]
	clear(d.set)
}

// seen reports whether (t, line) was returned before, and records it if not.
func (d *dupFilter) seen(t int64, line string) bool {
	if !d.valid || t != d.lastT {
		d.valid, d.lastT = true, t
		d.lines = append(d.lines[:0], line)
		if len(d.set) > 0 {
			clear(d.set)
		}
		return false
	}
	if d.set != nil && len(d.set) > 0 {
		if _, ok := d.set[line]; ok {
			return true
		}
		d.set[line] = struct{}{}
		return false
	}
	if slices.Contains(d.lines, line) {
		return true
	}
	d.lines = append(d.lines, line)
	if len(d.lines) > 16 { // many lines at one timestamp: a set from here on
		if d.set == nil {
			d.set = map[string]struct{}{}
		}
		for _, l := range d.lines {
			d.set[l] = struct{}{}
		}
	}
	return false
}

type mergeHeap []*cursor

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	// A pending chunk must be opened before entries of its start time are
	// emitted from other cursors, so that ties keep a stable order.
	return h[i].pending != nil && h[j].pending == nil
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
