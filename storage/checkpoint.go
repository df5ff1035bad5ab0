package storage

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/model/exemplar"

	"github.com/weftdb/weft/storage/internal/record"
)

func exemplarOf(e record.Exemplar) exemplar.Exemplar {
	return exemplar.Exemplar{Labels: e.Labels, Value: e.V, Ts: e.T, HasTs: e.HasTs}
}

// Checkpoint truncates the WAL. Steps (docs/format/wal.md):
//  1. under the exclusive commit lock, cut a new segment N: every commit
//     logged before N is applied to the head;
//  2. write checkpoint.N with every live series record, every head sample
//     (open, pending and out-of-order), exemplars and metadata;
//  3. persist the index and metadata and flush Pebble, so every chunk
//     sealed from the old segments' samples is durable;
//  4. rename the checkpoint into place and delete segments < N.
//
// Safe to call concurrently with appends and queries.
func (db *DB) Checkpoint(ctx context.Context) error {
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	return db.checkpointLocked(ctx)
}

func (db *DB) checkpointLocked(ctx context.Context) error {
	db.commitMu.Lock()
	n, err := db.wal.Cut()
	db.commitMu.Unlock()
	if err != nil {
		return fmt.Errorf("cut wal: %w", err)
	}
	var all []*memSeries
	db.series.forEach(func(s *memSeries) { all = append(all, s) })
	if err := db.writePending(all); err != nil {
		return err
	}
	err = db.wal.WriteCheckpoint(n, func(add func([]byte) error) error {
		var rec []byte
		var ss []record.Sample
		var hs, fhs []record.Histogram
		var es []record.Exemplar
		var buf []sample
		for i, s := range all {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			s.mu.Lock()
			buf = s.headSamplesLocked(buf[:0])
			es = es[:0]
			if s.ext != nil {
				for _, e := range s.exemplarsLocked(minInt64, maxInt64) {
					es = append(es, record.Exemplar{ID: s.id, T: e.Ts, V: e.Value, HasTs: e.HasTs, Labels: e.Labels})
				}
			}
			s.mu.Unlock()
			if len(buf) == 0 && len(es) == 0 {
				// Nothing of the series is only in the head: the index
				// (persisted below) names it, and Open recreates its head
				// entry from there (loadHeadSeries).
				continue
			}
			ls, ok := db.idx.Labels(s.id, nil)
			if !ok {
				continue
			}
			rec = record.AppendSeries(rec[:0], []record.Series{{Kind: 1, ID: s.id, Labels: ls}})
			if err := add(rec); err != nil {
				return err
			}
			ss, hs, fhs = ss[:0], hs[:0], fhs[:0]
			for _, x := range buf {
				switch {
				case x.fh != nil:
					fhs = append(fhs, record.Histogram{ID: s.id, ST: x.st, T: x.t, FH: x.fh})
				case x.h != nil:
					hs = append(hs, record.Histogram{ID: s.id, ST: x.st, T: x.t, H: x.h})
				default:
					ss = append(ss, record.Sample{ID: s.id, ST: x.st, T: x.t, V: x.v})
				}
			}
			if len(ss) > 0 {
				if err := add(record.AppendSamples(rec[:0], ss)); err != nil {
					return err
				}
			}
			if len(hs) > 0 {
				if err := add(record.AppendHistograms(rec[:0], hs, false)); err != nil {
					return err
				}
			}
			if len(fhs) > 0 {
				if err := add(record.AppendHistograms(rec[:0], fhs, true)); err != nil {
					return err
				}
			}
			if len(es) > 0 {
				if err := add(record.AppendExemplars(rec[:0], es)); err != nil {
					return err
				}
			}
		}
		if ms := db.meta.snapshot(); len(ms) > 0 {
			if err := add(record.AppendMetadata(rec[:0], ms)); err != nil {
				return err
			}
		}
		// Chunks sealed from the old segments' samples must be durable
		// before those segments go.
		if err := db.idx.Persist(ctx); err != nil {
			return fmt.Errorf("persist index: %w", err)
		}
		if err := db.persistMetadata(); err != nil {
			return err
		}
		if err := db.pdb.Flush(); err != nil {
			return fmt.Errorf("flush pebble: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	db.stats.checkpoints.Add(1)
	return nil
}

// loadHeadSeries creates a head entry for every metric series the index
// knows, before the WAL is replayed. A checkpoint writes series records only
// for series with samples or exemplars in the head: after a Flush, or for
// series whose runs ended, the records of all the others would be the bulk
// of the checkpoint (measured: 0.51 B/sample on BenchmarkDiskBytesPerSample
// over 25 h, 1.8 B/sample over 1 h of 20k series, ~300 bytes per series),
// and would be rewritten at every checkpoint for as long as the series
// exist. Replay needs a head entry for every series a record in the WAL
// refers to: a series created after the checkpoint has its record in a
// later segment, and every other one was persisted in the index by that
// checkpoint (Persist runs before the checkpoint is renamed into place).
func (db *DB) loadHeadSeries(ctx context.Context) error {
	ids, err := db.idx.Postings(ctx, minInt64, maxInt64)
	if err != nil {
		return fmt.Errorf("index series: %w", err)
	}
	it := ids.Iterator()
	for i := 0; it.HasNext(); i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		db.series.getOrCreate(it.Next())
	}
	return nil
}

// headSamplesLocked appends every sample the head holds for s, in time order
// per source (pending chunks, open chunk, OOO buffer).
func (s *memSeries) headSamplesLocked(dst []sample) []sample {
	if s.ext != nil {
		for _, pc := range s.ext.pending {
			dst = chunkSamples(pc.enc, pc.data, dst)
		}
	}
	if s.chunk != nil {
		dst = chunkSamples(s.chunk.Encoding(), s.chunk.Bytes(), dst)
	}
	if s.ext != nil {
		dst = append(dst, s.ext.ooo...)
	}
	return dst
}

// Flush seals every open chunk and out-of-order buffer into Pebble and
// checkpoints the WAL, leaving the head empty of samples (series stay). Used
// at graceful shutdown; safe concurrently with appends and queries.
func (db *DB) Flush(ctx context.Context) error {
	db.maintMu.Lock()
	defer db.maintMu.Unlock()
	if db.closed.Load() {
		return ErrClosed
	}
	var all []*memSeries
	db.series.forEach(func(s *memSeries) {
		s.mu.Lock()
		db.sealLocked(s)
		s.mu.Unlock()
		all = append(all, s)
	})
	if err := db.writePending(all); err != nil {
		return err
	}
	for i, s := range all {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := db.flushOOO(s); err != nil {
			return err
		}
	}
	return db.checkpointLocked(ctx)
}

// flushOOO merges the series' out-of-order samples that lie before its open
// chunk into the Pebble chunks they overlap (read, merge, rewrite in one
// batch). Samples inside the open chunk's range wait for it to seal. Runs
// under the series lock; skipped while sealed chunks are still pending.
func (db *DB) flushOOO(s *memSeries) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext == nil || len(s.ext.ooo) == 0 || len(s.ext.pending) > 0 {
		return nil
	}
	limit := int64(maxInt64)
	if s.chunk != nil {
		limit = s.cmint
	}
	k := 0
	for k < len(s.ext.ooo) && s.ext.ooo[k].t < limit {
		k++
	}
	if k == 0 {
		return nil
	}
	ooo := s.ext.ooo[:k]
	r, err := db.newChunkReader()
	if err != nil {
		return err
	}
	defer r.Close()
	b := db.pdb.NewBatch()
	defer b.Close()
	var key, val []byte
	for i := 0; i < len(ooo); {
		p := db.partOf(ooo[i].t)
		j := i
		for j < len(ooo) && db.partOf(ooo[j].t) == p {
			j++
		}
		group := ooo[i:j]
		old, err := r.read(s.id, group[0].t, group[len(group)-1].t, []int64{p}, nil)
		if err != nil {
			return err
		}
		var existing []sample
		for _, c := range old {
			existing = chunkSamples(c.enc, c.data, existing)
			key = appendChunkKey(key[:0], p, s.id, c.mint)
			if err := b.Delete(key, nil); err != nil {
				return fmt.Errorf("batch delete chunk: %w", err)
			}
		}
		// Existing (older, acknowledged earlier) samples win on equal timestamps.
		for _, c := range db.encodeSamples(mergeSamples(group, existing), db.opts.SamplesPerChunk) {
			key = appendChunkKey(key[:0], p, s.id, c.mint)
			val = appendChunkValue(val[:0], c)
			if err := b.Set(key, val, nil); err != nil {
				return fmt.Errorf("batch chunk: %w", err)
			}
		}
		db.parts.add(p)
		// The partition holds short chunks again: let compaction revisit it.
		if err := b.Delete(compactedKey(p), nil); err != nil {
			return fmt.Errorf("batch clear compacted mark: %w", err)
		}
		i = j
	}
	if err := db.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("write ooo chunks: %w", err)
	}
	s.ext.ooo = append(s.ext.ooo[:0], s.ext.ooo[k:]...)
	s.dropExtIfEmptyLocked()
	return nil
}
