package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// Open loads the index stored in db, which must have been opened with
// Merger(). It reads the whole stream registry and the per-kind stream sets
// of every partition, and the postings of the newest opts.HotPartitions
// partitions; older postings are read on first use. The caller keeps
// ownership of db and must keep it open until Close.
func Open(db *pebble.DB, opts Options) (*Index, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	ix := &Index{
		db:         db,
		opts:       opts,
		partMs:     opts.PartitionDuration.Milliseconds(),
		logger:     opts.Logger,
		syms:       newSymbols(),
		parts:      map[int64]*partition{},
		minPart:    math.MinInt64,
		pendingNew: roaring64.New(),
	}
	for k := range ix.kindCut {
		ix.kindCut[k] = math.MinInt64
	}
	ix.initShards()
	ix.nextID.Store(1)
	if err := ix.loadAlloc(); err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if err := ix.loadHourMarks(); err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if err := ix.loadStreams(); err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if err := ix.loadPartitions(); err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	ix.logger.Info("index_opened", "streams", ix.NumStreams(KindAny), "partitions", len(ix.parts), "next_id", ix.nextID.Load())
	return ix, nil
}

func (ix *Index) loadAlloc() error {
	v, closer, err := ix.db.Get(allocKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read id allocator: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return fmt.Errorf("read id allocator: length %d: %w", len(v), ErrCorrupt)
	}
	ix.advanceAlloc(ID(binary.BigEndian.Uint64(v) - 1))
	return nil
}

// loadStreams reads the registry: the stream buckets and the per-stream
// records of earlier versions. Streams get lastPart = MinInt64 so the first
// Touch checks partition membership.
func (ix *Index) loadStreams() error {
	it, err := ix.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{keyspaceIndex, tagStreamBucket},
		UpperBound: []byte{keyspaceIndex, tagStream + 1},
	})
	if err != nil {
		return fmt.Errorf("read streams: %w", err)
	}
	defer it.Close()
	l := streamLoader{ix: ix, b: labels.NewScratchBuilder(16), bucket: map[ID]loadedStream{}}
	for it.First(); it.Valid(); it.Next() {
		k, err := decodeKey(it.Key())
		if err != nil || (k.Type != keyStream && k.Type != keyStreamBucket) {
			return fmt.Errorf("read streams: key %x: %w", it.Key(), ErrCorrupt)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("read streams: %w", err)
		}
		if k.Type == keyStreamBucket {
			if err := l.loadBucket(k.Bucket, v); err != nil {
				return fmt.Errorf("read streams: %w", err)
			}
			continue
		}
		if k.ID == 0 {
			return fmt.Errorf("read streams: key %x: %w", it.Key(), ErrCorrupt)
		}
		ix.legacyRecords = true
		l.b.Reset()
		kind, err := decodeStreamValue(v, func(name, value []byte) { l.b.Add(string(name), string(value)) })
		if err != nil {
			return fmt.Errorf("read stream %d: %w", k.ID, err)
		}
		l.insert(k.ID, kind)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read streams: %w", err)
	}
	return nil
}

// streamLoader inserts stored streams into the registry during Open.
type streamLoader struct {
	ix     *Index
	b      labels.ScratchBuilder
	refs   []uint32
	encBuf [encScratch * 2]byte
	bucket map[ID]loadedStream // the streams of the bucket being read
}

type loadedStream struct {
	kind Kind
	ls   labels.Labels
}

// loadBucket inserts the streams of bucket b that no deletions fragment
// removed. Only those are interned: the symbol tables never forget.
func (l *streamLoader) loadBucket(b uint64, v []byte) error {
	clear(l.bucket)
	err := decodeStreamBucket(b, v, func(id ID, kind Kind, ls []fragLabel) {
		l.b.Reset()
		for _, x := range ls {
			l.b.Add(x.name, x.value)
		}
		l.b.Sort()
		l.bucket[id] = loadedStream{kind: kind, ls: l.b.Labels()}
	}, func(id ID) { delete(l.bucket, id) })
	if err != nil {
		return err
	}
	for id, s := range l.bucket {
		l.put(id, s.kind, s.ls)
	}
	return nil
}

// insert inserts stream id with the labels in l.b.
func (l *streamLoader) insert(id ID, kind Kind) {
	l.b.Sort()
	l.put(id, kind, l.b.Labels())
}

// put interns ls and inserts stream id into the registry.
func (l *streamLoader) put(id ID, kind Kind, ls labels.Labels) {
	ix := l.ix
	l.refs = ix.syms.internLabels(ls, l.refs[:0])
	r := streamRec{enc: ix.encs.copyOf(appendLabelRefs(l.encBuf[:0], l.refs)), lastPart: math.MinInt64, kind: kind}
	h := fullHash(kind, ls)
	insertHashLocked(ix.hashShardOf(h), h, id) // single-threaded during Open
	ix.recs.put(id, r)
	ix.numStreams[kind].Add(1)
	ix.advanceAlloc(id)
}

// loadPartitions finds every partition and reads its per-kind stream sets,
// then loads the postings of the newest HotPartitions.
func (ix *Index) loadPartitions() error {
	it, err := ix.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{keyspaceIndex, tagPart},
		UpperBound: []byte{keyspaceIndex, tagPart + 1},
	})
	if err != nil {
		return fmt.Errorf("read partitions: %w", err)
	}
	defer it.Close()
	for valid := it.First(); valid; {
		k, err := decodeKey(it.Key())
		if err != nil {
			return fmt.Errorf("read partitions: %w", err)
		}
		p := ix.parts[k.Part]
		if p == nil {
			p = &partition{num: k.Part}
			for kk := range p.all {
				p.all[kk] = roaring64.New()
			}
			ix.parts[k.Part] = p
			if h := ix.head.Load(); h == nil || h.num < p.num {
				ix.head.Store(p)
			}
		}
		if k.Type == keyKind {
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("read partition %d: %w", k.Part, err)
			}
			bm, err := decodeBitmapValue(v)
			if err != nil {
				return fmt.Errorf("read partition %d kind %d: %w", k.Part, k.Kind, err)
			}
			p.all[k.Kind] = bm
			valid = it.Next()
			continue
		}
		// Past the kind keys: skip this partition's pair keys.
		valid = it.SeekGE(appendPartPrefix(nil, k.Part+1))
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read partitions: %w", err)
	}
	ps := ix.allPartitions()
	for i := len(ps) - 1; i >= 0 && i >= len(ps)-ix.opts.HotPartitions; i-- {
		if err := ix.ensureLoaded(ps[i]); err != nil {
			return err
		}
	}
	return nil
}

// pairDelta groups IDs by postings key while building a batch.
type pairDelta struct {
	kind        Kind
	name, value uint32
}

// Persist makes every stream created or touched so far durable: registry
// records of new streams, their postings and partition memberships, and the
// ID allocator, in one synced Pebble batch. Postings are written as merge
// operands holding only what changed. If the commit fails, the changes stay
// pending for the next Persist. Safe for concurrent use with every method.
func (ix *Index) Persist(ctx context.Context) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()

	type taken struct {
		p   *partition
		ids *roaring64.Bitmap
	}
	var took []taken
	for _, p := range ix.allPartitions() {
		p.mu.Lock()
		p.flushLocked()
		if p.loaded && !p.dropped && !p.pending.IsEmpty() {
			took = append(took, taken{p, p.pending})
			p.pending = roaring64.New()
		}
		p.mu.Unlock()
	}
	// Registry records after postings: a stream created in between gets its
	// record now and its postings next time (harmless: Open marks it again on
	// its first Touch), never postings without a record.
	ix.pendingMu.Lock()
	newIDs := ix.pendingNew
	ix.pendingNew = roaring64.New()
	ix.pendingMu.Unlock()
	restore := func() {
		ix.pendingMu.Lock()
		ix.pendingNew.Or(newIDs)
		ix.pendingMu.Unlock()
		for _, t := range took {
			t.p.mu.Lock()
			t.p.pending.Or(t.ids)
			t.p.mu.Unlock()
		}
	}
	if err := ix.writePending(ctx, newIDs, func(f func(*partition, *roaring64.Bitmap) error) error {
		for _, t := range took {
			if err := f(t.p, t.ids); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		restore()
		return fmt.Errorf("persist index: %w", err)
	}
	return nil
}

func (ix *Index) writePending(ctx context.Context, newIDs *roaring64.Bitmap, eachPart func(func(*partition, *roaring64.Bitmap) error) error) error {
	b := ix.db.NewBatch()
	defer b.Close()
	var key, val []byte
	var names, values []string
	var refs []uint32
	var fw recordFragWriter
	bucket := uint64(math.MaxUint64)
	flush := func() error {
		if fw.n == 0 {
			return nil
		}
		key = appendStreamBucketKey(key[:0], bucket)
		val = fw.appendTo(val[:0])
		if err := b.Merge(key, val, nil); err != nil {
			return fmt.Errorf("batch stream bucket %d: %w", bucket, err)
		}
		return nil
	}
	i := 0
	it := newIDs.Iterator()
	for it.HasNext() {
		id := ID(it.Next())
		if err := checkCtx(ctx, i); err != nil {
			return err
		}
		i++
		r, ok := ix.rec(id)
		if !ok {
			continue // deleted or dropped since
		}
		var err error
		if refs, err = decodeLabelRefs(refs[:0], r.enc); err != nil {
			panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
		}
		names, values = names[:0], values[:0]
		for j := 0; j+1 < len(refs); j += 2 {
			n, _ := ix.syms.name(refs[j])
			v, _ := ix.syms.value(refs[j], refs[j+1])
			names, values = append(names, n), append(values, v)
		}
		if sb := streamBucket(id); sb != bucket {
			if err := flush(); err != nil {
				return err
			}
			bucket = sb
			fw.reset(bucket)
		}
		fw.add(id, r.kind, names, values)
	}
	if err := flush(); err != nil {
		return err
	}

	err := eachPart(func(p *partition, ids *roaring64.Bitmap) error {
		kinds := [numKinds]*roaring64.Bitmap{}
		deltas := map[pairDelta]*roaring64.Bitmap{}
		it := ids.Iterator()
		for it.HasNext() {
			id := it.Next()
			if err := checkCtx(ctx, i); err != nil {
				return err
			}
			i++
			r, ok := ix.rec(ID(id))
			if !ok {
				continue
			}
			var err error
			if refs, err = decodeLabelRefs(refs[:0], r.enc); err != nil {
				panic(fmt.Sprintf("BUG: stream %d has a corrupt in-memory label set: %v", id, err))
			}
			if kinds[r.kind] == nil {
				kinds[r.kind] = roaring64.New()
			}
			kinds[r.kind].Add(id)
			for j := 0; j+1 < len(refs); j += 2 {
				d := pairDelta{kind: r.kind, name: refs[j], value: refs[j+1]}
				bm := deltas[d]
				if bm == nil {
					bm = roaring64.New()
					deltas[d] = bm
				}
				bm.Add(id)
			}
		}
		for k, bm := range kinds {
			if bm == nil {
				continue
			}
			if err := ix.batchEdit(b, appendKindKey(key[:0], p.num, Kind(k)), nil, bm); err != nil {
				return err
			}
		}
		for d, bm := range deltas {
			n, _ := ix.syms.name(d.name)
			v, _ := ix.syms.value(d.name, d.value)
			if err := ix.batchEdit(b, appendPairKey(key[:0], p.num, d.kind, n, v), nil, bm); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := b.Set(allocKey(), binary.BigEndian.AppendUint64(nil, ix.nextID.Load()), nil); err != nil {
		return fmt.Errorf("batch id allocator: %w", err)
	}
	marks, err := ix.appendHourMarks(b)
	if err != nil {
		return err
	}
	if err := ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	ix.markWritten(marks)
	return nil
}

// batchEdit adds a merge operand (remove, add) for key to b.
func (ix *Index) batchEdit(b *pebble.Batch, key []byte, remove, add *roaring64.Bitmap) error {
	v, err := appendBitmapEdit(nil, remove, add)
	if err != nil {
		return err
	}
	if err := b.Merge(key, v, nil); err != nil {
		return fmt.Errorf("batch merge %q: %w", key, err)
	}
	return nil
}
