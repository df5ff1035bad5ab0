package logstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
)

// ReclaimDeletes processes every unprocessed delete request created at or
// before cutoff (unix ns): it rewrites the chunks holding entries the
// request covers without them and marks the request processed. The
// maintenance loop calls it with now minus Options.DeleteCancelPeriod;
// tests and operators may call it directly. One reclaim runs at a time;
// safe for concurrent use with every method.
func (s *Store) ReclaimDeletes(ctx context.Context, cutoff int64) error {
	s.reclaimMu.Lock()
	defer s.reclaimMu.Unlock()
	for _, r := range s.DeleteRequests() {
		if r.Processed || r.CreatedAt > cutoff {
			continue
		}
		if err := s.reclaim(ctx, &r); err != nil {
			return fmt.Errorf("reclaim delete request %s: %w", r.ID, err)
		}
		if err := s.markProcessed(r.ID); err != nil {
			return err
		}
		s.log.Info("log_delete_processed", "request_id", r.ID, "query", r.Query)
	}
	return nil
}

// reclaim rewrites the chunks of every stream r matches.
func (s *Store) reclaim(ctx context.Context, r *DeleteRequest) error {
	ids, err := s.ix.Postings(ctx, index.KindLog, nsToMs(r.Start), nsToMs(r.End), r.Matchers...)
	if err != nil {
		return fmt.Errorf("select streams: %w", err)
	}
	for _, id := range ids.ToArray() {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.RLock()
		st := s.streams[index.ID(id)]
		s.mu.RUnlock()
		if st == nil || !r.matchesStream(st.ls) {
			continue
		}
		// The head goes into chunks first, so that the rewrite below sees
		// every entry of the stream in one place.
		if err := s.sealStream(st); err != nil {
			return err
		}
		if err := s.rewriteChunks(ctx, st, r); err != nil {
			return err
		}
	}
	return nil
}

// drop forgets the filter of a chunk that no longer exists.
func (c *filterCache) drop(key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[string(key)]; ok {
		delete(c.m, string(key))
		c.bytes -= len(v)
	}
}

// rewritten is one chunk replaced by a rewrite: its old key and, when any
// entry is left, the new chunk.
type rewritten struct {
	part   int64
	old    []byte
	ref    chunkRef
	filter []byte
	empty  bool // nothing left: no new chunk
}

// rewriteChunks replaces each chunk of st holding entries r covers by one
// without them (or by nothing), in one batch. Chunks in partitions that
// retention may be dropping are left alone: retention removes them soon,
// and a chunk rewritten into a dropped partition would outlive it.
func (s *Store) rewriteChunks(ctx context.Context, st *stream, r *DeleteRequest) error {
	firstPart, lastPart := s.partOf(r.Start), s.partOf(r.End)
	if s.opts.Retention > 0 {
		firstPart = max(firstPart, s.partOf(s.opts.Now().Add(-s.opts.Retention).UnixNano())+1)
	}
	type cand struct {
		part int64
		ref  chunkRef
	}
	var cands []cand
	s.sealMu.RLock()
	snap := s.db.NewSnapshot()
	for part, refs := range st.chunks {
		if part < firstPart || part > lastPart {
			continue
		}
		for _, ref := range refs {
			if ref.meta.maxT >= r.Start && ref.meta.minT <= r.End {
				cands = append(cands, cand{part, ref})
			}
		}
	}
	s.sealMu.RUnlock()
	defer snap.Close()
	if len(cands) == 0 {
		return nil
	}
	rd := &iterator{ctx: ctx, s: s, snap: snap}
	b := s.db.NewBatch()
	defer b.Close()
	var done []rewritten
	for _, c := range cands {
		es, err := rd.readChunk(c.ref.key, c.ref.meta)
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(es), func(e logentry.Entry) bool { return r.covers(e) })
		if len(kept) == len(es) {
			continue
		}
		for _, k := range [][]byte{c.ref.key, dataKey(c.ref.key), filterKey(c.ref.key)} {
			if err := b.Delete(k, nil); err != nil {
				return fmt.Errorf("rewrite stream %d: %w", st.id, err)
			}
		}
		rw := rewritten{part: c.part, old: c.ref.key, empty: len(kept) == 0}
		if !rw.empty {
			key := chunkKey(c.part, st.id, kept[0].Timestamp, s.seq.Add(1))
			head, filter, data := encodeChunk(kept)
			for _, kv := range [][2][]byte{{key, head}, {filterKey(key), filter}, {dataKey(key), data}} {
				if err := b.Set(kv[0], kv[1], nil); err != nil {
					return fmt.Errorf("rewrite stream %d: %w", st.id, err)
				}
			}
			if rw.ref, err = newChunkRef(key, head); err != nil {
				return fmt.Errorf("BUG: rewrite stream %d: %w", st.id, err)
			}
			rw.filter = filter
		}
		done = append(done, rw)
	}
	if len(done) == 0 {
		return nil
	}
	if err := b.Set(seqKey(), binary.BigEndian.AppendUint64(nil, s.seq.Load()), nil); err != nil {
		return fmt.Errorf("rewrite stream %d: %w", st.id, err)
	}
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	// NoSync: a lost batch leaves the old chunks, and the request is marked
	// processed only by a later synced write, which makes this one durable
	// first (Pebble's log is written in order).
	if err := s.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("rewrite stream %d: commit: %w", st.id, err)
	}
	for _, rw := range done {
		refs := slices.DeleteFunc(slices.Clone(st.chunks[rw.part]), func(c chunkRef) bool { return sameKey(c.key, rw.old) })
		s.filters.drop(rw.old)
		if !rw.empty {
			refs = insertRef(refs, rw.ref)
			s.filters.put(rw.ref.key, rw.filter)
		}
		st.chunks[rw.part] = refs
	}
	return nil
}
