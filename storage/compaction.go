package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index"
)

// compactSamplesPerChunk bounds a compacted per-series block. Blocks are
// built through a Prometheus chunk before the columnar re-encode, and ST
// histogram chunks count samples in 14 bits (16383); a day at 15 s is 5760
// samples, so one block per series and partition is the norm.
const compactSamplesPerChunk = 16000

// compactedPrefix is 0x05 'c' | partition: marks a partition whose chunks
// were merged; an out-of-order flush into it clears the mark.
var compactedPrefix = []byte{tagMeta, 'c'}

func compactedKey(p int64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, compactedPrefix...), orderedInt(p))
}

// Compact re-encodes the newest partition's sealed Prometheus chunks into
// columnar blocks and merges, in every partition older than the newest one,
// the short chunks of each series into one long per-series block in weft's columnar
// layout (sealing writes Prometheus XOR chunks as they are, to keep the
// ingest path cheap; the columnar codecs pay most on long blocks), and cleans
// tombstones. Each series is rewritten in one Pebble batch (new block set,
// short keys deleted) so queries see either the old or the new chunks.
func (db *DB) Compact(ctx context.Context) error {
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.cleanTombstonesLocked(ctx); err != nil {
		return fmt.Errorf("clean tombstones: %w", err)
	}
	head := db.partOf(db.maxT.Load())
	var merged []int64
	converted := 0
	for _, p := range db.parts.all() {
		if p >= head {
			// The partition still being written: only re-encode sealed
			// Prometheus chunks into columnar blocks; the partition-wide
			// merge waits until it is closed.
			n, err := db.convertPartition(ctx, p)
			if err != nil {
				return fmt.Errorf("convert partition %d: %w", p, err)
			}
			converted += n
			continue
		}
		if _, closer, err := db.pdb.Get(compactedKey(p)); err == nil {
			closer.Close()
			continue
		}
		if err := db.compactPartition(ctx, p); err != nil {
			return fmt.Errorf("compact partition %d: %w", p, err)
		}
		if err := db.markCompacted(p); err != nil {
			return fmt.Errorf("mark compacted: %w", err)
		}
		merged = append(merged, p)
	}
	if err := db.settlePartitions(ctx, merged); err != nil {
		return err
	}
	if len(merged) == 0 && converted > 0 {
		// Flush the columnar blocks and the deletions of the chunks they
		// replace now: chunks sealed and converted within one memtable
		// never reach an sstable (the flush elides a value its deletion
		// shadows), and a store at rest keeps no rewritten data in Pebble's
		// WAL, which is preallocated to ~1.1x the memtable size.
		if err := db.pdb.Flush(); err != nil {
			return fmt.Errorf("flush pebble: %w", err)
		}
	}
	db.stats.compactions.Add(1)
	return nil
}

// settlePartitions makes the on-disk state of freshly merged partitions
// final: it flushes Pebble's memtable (the merged blocks, the deletions of
// the short chunks they replace) into sstables and compacts each partition's
// chunk range and index postings range, so that the replaced chunk versions,
// their tombstones and the index's merge operands are dropped now rather
// than whenever Pebble's own compactions reach that key range, which in a
// store that no longer writes to a closed partition may be never. Measured
// on BenchmarkDiskBytesPerSample (25 h of telemetry, 2.4 M samples), the
// data directory shrinks from ~6 to ~1.5 B/sample. It runs once per
// partition (the compacted mark), so its write amplification is one rewrite
// of each closed day.
func (db *DB) settlePartitions(ctx context.Context, parts []int64) error {
	if len(parts) == 0 {
		return nil
	}
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("flush pebble: %w", err)
	}
	for _, p := range parts {
		if err := db.pdb.Compact(ctx, appendChunkKey(nil, p, 0, minInt64), appendChunkKey(nil, p+1, 0, minInt64), true); err != nil {
			return fmt.Errorf("compact partition %d chunks: %w", p, err)
		}
		if err := db.pdb.Compact(ctx, indexPartitionKey(p), indexPartitionKey(p+1), true); err != nil {
			return fmt.Errorf("compact partition %d postings: %w", p, err)
		}
	}
	return nil
}

// indexPartitionKey is the first key of partition p's postings in the
// index keyspace: 0x01 'p' | be64(p XOR 1<<63) (docs/format/index.md). The
// index owns these keys; storage only names the range to compact.
func indexPartitionKey(p int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x01, 'p'}, orderedInt(p))
}

// settleOnClose converts the chunks sealed since the last compaction into
// columnar blocks and flushes Pebble, so that a stopped store holds no
// Prometheus chunks and no rewritten data in Pebble's WAL (preallocated to
// ~1.1x the memtable size). With the background loop running that is at
// most one compaction interval of data; chunks sealed and converted within
// one memtable never reach an sstable. Measured on
// BenchmarkDiskBytesPerSample/graceful_stop (Flush + Close, 25 h): 3.54 ->
// 1.09 B/sample for the whole directory. Called by Close under maintMu.
//
// The chunk range of every partition it converted is then compacted, as
// settlePartitions does for a closed partition: the version-1 chunks the
// blocks replace sit in sstables written before, and their deletions would
// otherwise keep both on disk until Pebble's compactions reach the range
// (weft-bench medium, 1M series: the converted blocks were 170 MB of the
// 380 MB of chunk data on disk at stop, the rest replaced versions). It
// costs one rewrite of the newest partition's chunks at each stop.
func (db *DB) settleOnClose() error {
	ctx := context.Background()
	converted, err := db.convertUncompacted(ctx)
	if err != nil {
		return err
	}
	if err := db.pdb.Flush(); err != nil {
		return fmt.Errorf("flush pebble: %w", err)
	}
	for _, p := range converted {
		if err := db.pdb.Compact(ctx, appendChunkKey(nil, p, 0, minInt64), appendChunkKey(nil, p+1, 0, minInt64), true); err != nil {
			return fmt.Errorf("compact partition %d chunks: %w", p, err)
		}
	}
	return nil
}

// convertUncompacted converts the version-1 chunks of every partition not
// yet merged (in practice the newest one or two) into columnar blocks and
// returns the partitions where it rewrote any series.
func (db *DB) convertUncompacted(ctx context.Context) ([]int64, error) {
	var converted []int64
	for _, p := range db.parts.all() {
		if _, closer, err := db.pdb.Get(compactedKey(p)); err == nil {
			closer.Close()
			continue
		}
		n, err := db.convertPartition(ctx, p)
		if err != nil {
			return converted, fmt.Errorf("convert partition %d: %w", p, err)
		}
		if n > 0 {
			converted = append(converted, p)
		}
	}
	return converted, nil
}

// convertPartition re-encodes, per series, the version-1 (Prometheus) chunks
// of partition p into one columnar block, together with any columnar chunk
// that falls between them so chunks never overlap. It returns how many
// series it rewrote.
func (db *DB) convertPartition(ctx context.Context, p int64) (int, error) {
	lo := appendChunkKey(nil, p, 0, minInt64)
	hi := appendChunkKey(nil, p+1, 0, minInt64)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, fmt.Errorf("partition iterator: %w", err)
	}
	var ids []uint64
	for ok := it.First(); ok; ok = it.Next() {
		_, id, _, good := parseChunkKey(it.Key())
		if !good || (len(ids) > 0 && ids[len(ids)-1] == id) {
			continue
		}
		if v, err := it.ValueAndErr(); err == nil && len(v) > 0 && v[0] == chunkValueXOR {
			ids = append(ids, id)
		}
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	for i, id := range ids {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return i, err
			}
		}
		if err := db.rewriteSeriesChunks(p, id, true); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

func (db *DB) compactPartition(ctx context.Context, p int64) error {
	lo := appendChunkKey(nil, p, 0, minInt64)
	hi := appendChunkKey(nil, p+1, 0, minInt64)
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("partition iterator: %w", err)
	}
	var ids []uint64
	var last uint64
	count := 0
	for ok := it.First(); ok; ok = it.Next() {
		_, id, _, good := parseChunkKey(it.Key())
		if !good {
			continue
		}
		if id != last || count == 0 {
			if count > 0 {
				ids = append(ids, last)
			}
			last, count = id, 0
		}
		count++
	}
	if count > 0 {
		ids = append(ids, last)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for i, id := range ids {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := db.rewriteSeriesChunks(p, id, false); err != nil {
			return err
		}
	}
	return nil
}

// rewriteSeriesChunks merges the chunks of id in partition p into columnar
// blocks under the series lock (so no out-of-order flush interleaves). With
// xorOnly it takes only the version-1 chunks and the columnar chunks that
// start inside their time span; otherwise all of them.
func (db *DB) rewriteSeriesChunks(p int64, id uint64, xorOnly bool) error {
	if s := db.series.get(id); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	r, err := db.newChunkReader()
	if err != nil {
		return err
	}
	defer r.Close()
	chunks, err := r.read(id, minInt64, maxInt64, []int64{p}, nil)
	if err != nil {
		return err
	}
	if xorOnly {
		chunks = selectXORSpan(chunks)
	}
	if len(chunks) == 0 || (len(chunks) == 1 && chunks[0].enc == encColumnar) {
		return nil
	}
	var all []sample
	for _, c := range chunks {
		all = chunkSamples(c.enc, c.data, all)
	}
	all = dedupeSorted(all)
	b := db.pdb.NewBatch()
	defer b.Close()
	var key, val []byte
	for _, c := range chunks {
		key = appendChunkKey(key[:0], p, id, c.mint)
		if err := b.Delete(key, nil); err != nil {
			return fmt.Errorf("batch delete chunk: %w", err)
		}
	}
	for _, c := range db.encodeSamples(all, compactSamplesPerChunk) {
		key = appendChunkKey(key[:0], p, id, c.mint)
		val = appendChunkValue(val[:0], c)
		if err := b.Set(key, val, nil); err != nil {
			return fmt.Errorf("batch chunk: %w", err)
		}
	}
	if err := db.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("write block: %w", err)
	}
	return nil
}

// selectXORSpan returns the chunks (sorted by start) from the first to the
// last version-1 chunk, so the merged block overlaps nothing left behind.
func selectXORSpan(chunks []*sealedChunk) []*sealedChunk {
	first, last := -1, -1
	for i, c := range chunks {
		if c.enc != encColumnar {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	return chunks[first : last+1]
}

// dedupeSorted sorts samples by time (stable) and keeps the first of equal
// timestamps.
func dedupeSorted(ss []sample) []sample {
	sorted := true
	for i := 1; i < len(ss); i++ {
		if ss[i].t <= ss[i-1].t {
			sorted = false
			break
		}
	}
	if sorted {
		return ss
	}
	sortSamples(ss)
	out := ss[:0]
	for i, x := range ss {
		if i > 0 && x.t == out[len(out)-1].t {
			continue
		}
		out = append(out, x)
	}
	return out
}

// ApplyRetention applies the retention clock of the DB's substrate to the
// metric signal now: its chunks and its index postings in partitions that
// end at or before now minus the metric retention (Substrate.ApplyRetention
// for one signal).
func (db *DB) ApplyRetention(ctx context.Context) error {
	sub := db.sub
	for _, sig := range sub.signals {
		if sig.kind == index.KindMetric {
			return sub.applyRetention(ctx, sig)
		}
	}
	return ErrClosed
}

// dropBefore deletes the chunks of every partition that ends at or before t
// (one DeleteRange); the substrate drops the postings.
func (db *DB) dropBefore(ctx context.Context, t time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	// Partition p is dropped when its last millisecond is before t.
	keep := db.partOf(t.UnixMilli())
	dropped := db.parts.removeBefore(keep)
	if len(dropped) == 0 {
		return nil
	}
	lo := appendChunkKey(nil, dropped[0], 0, minInt64)
	hi := appendChunkKey(nil, keep, 0, minInt64)
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lo, hi, nil); err != nil {
		return fmt.Errorf("delete partitions: %w", err)
	}
	if err := db.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("delete partitions: %w", err)
	}
	start := keep * db.partMs
	for {
		cur := db.minT.Load()
		if cur >= start || db.minT.CompareAndSwap(cur, start) {
			break
		}
	}
	db.log.Info("retention_dropped_partitions", "count", len(dropped), "before_ms", start)
	return nil
}

// markCompacted records that partition p is compacted.
func (db *DB) markCompacted(p int64) error {
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.Set(compactedKey(p), nil, nil); err != nil {
		return err
	}
	return db.ix.Commit(b, pebble.NoSync)
}
