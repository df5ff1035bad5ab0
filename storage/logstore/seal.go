package logstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/storage/logentry"
)

// Seal seals heads into chunks: every non-empty head if all is true (tests,
// shutdown), else those that are full or older than Options.SealAge. Safe
// for concurrent use with every method.
func (s *Store) Seal(ctx context.Context, all bool) error {
	s.mu.RLock()
	sts := make([]*stream, 0, len(s.streams))
	for _, st := range s.streams {
		sts = append(sts, st)
	}
	s.mu.RUnlock()
	now := s.opts.Now()
	var errs []error
	for _, st := range sts {
		if err := ctx.Err(); err != nil {
			return err
		}
		st.mu.Lock()
		due := len(st.entries) > 0 && (all || now.Sub(st.oldest) >= s.opts.SealAge ||
			len(st.entries) >= s.opts.SealEntries || st.bytes >= s.opts.SealBytes)
		st.mu.Unlock()
		if due {
			if err := s.sealStream(st); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("seal: %w (and %d more)", errs[0], len(errs)-1)
	}
	return nil
}

// sealStream writes st's head as chunks and deletes its recent records in
// one batch, then trims the head. One seal per stream at a time.
func (s *Store) sealStream(st *stream) error {
	st.mu.Lock()
	for st.sealing {
		st.sealCond.Wait()
	}
	n, nseq := len(st.entries), len(st.seqs)
	if n == 0 {
		st.mu.Unlock()
		return nil
	}
	es := slices.Clone(st.entries[:n])
	seqs := slices.Clone(st.seqs[:nseq])
	st.sealing = true
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.sealing = false
		st.sealCond.Broadcast()
		st.mu.Unlock()
	}()

	slices.SortStableFunc(es, func(a, b logentry.Entry) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	es = dropDuplicates(es)
	b := s.db.NewBatch()
	defer b.Close()
	type sealed struct {
		part   int64
		ref    chunkRef
		filter []byte
	}
	var refs []sealed
	for len(es) > 0 {
		part := s.partOf(es[0].Timestamp)
		end := 1
		for end < len(es) && end < s.opts.SealEntries && s.partOf(es[end].Timestamp) == part {
			end++
		}
		seq := s.seq.Add(1)
		key := chunkKey(part, st.id, es[0].Timestamp, seq)
		head, filter, data := encodeChunk(es[:end])
		if err := b.Set(key, head, nil); err != nil {
			return fmt.Errorf("seal stream %d: %w", st.id, err)
		}
		if err := b.Set(filterKey(key), filter, nil); err != nil {
			return fmt.Errorf("seal stream %d: %w", st.id, err)
		}
		if err := b.Set(dataKey(key), data, nil); err != nil {
			return fmt.Errorf("seal stream %d: %w", st.id, err)
		}
		r, err := newChunkRef(key, head)
		if err != nil {
			return fmt.Errorf("BUG: seal stream %d: %w", st.id, err)
		}
		refs = append(refs, sealed{part, r, filter})
		es = es[end:]
	}
	if err := b.Set(seqKey(), binary.BigEndian.AppendUint64(nil, s.seq.Load()), nil); err != nil {
		return fmt.Errorf("seal stream %d: %w", st.id, err)
	}
	for _, q := range seqs {
		if err := b.Delete(recentKey(st.id, q), nil); err != nil {
			return fmt.Errorf("seal stream %d: %w", st.id, err)
		}
	}
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	// NoSync: losing this batch in a crash loses nothing (the recent records
	// stay); a later synced push makes it durable with the WAL before it.
	if err := s.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("seal stream %d: commit: %w", st.id, err)
	}
	if st.chunks == nil {
		st.chunks = map[int64][]chunkRef{}
	}
	for _, r := range refs {
		st.chunks[r.part] = insertRef(st.chunks[r.part], r.ref)
		s.filters.put(r.ref.key, r.filter) // new chunks are the likeliest to be searched
	}
	st.mu.Lock()
	st.entries = slices.Clone(st.entries[n:])
	st.segs = nil
	st.indexHead()
	if len(st.entries) == 0 {
		st.names = nil
	}
	st.unsorted = !slices.IsSortedFunc(st.entries, func(a, b logentry.Entry) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	st.seqs = slices.Clone(st.seqs[nseq:])
	st.bytes = 0
	for _, e := range st.entries {
		st.bytes += entrySize(e)
	}
	if len(st.entries) == 0 {
		st.oldest = time.Time{}
	} else {
		st.oldest = s.opts.Now()
	}
	st.mu.Unlock()
	return nil
}

// DropBefore deletes every partition that ends at or before t (unix ns):
// chunks and membership records, by range. Heads are left alone; their old
// entries are dropped by a later call after they are sealed.
func (s *Store) DropBefore(ctx context.Context, t int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cut := s.partOf(t) // partitions < cut end at or before t's partition start
	b := s.db.NewBatch()
	defer b.Close()
	for _, tag := range []byte{tagChunk, tagData, tagFilter, tagPart} {
		lo, _ := tagBound(tag)
		if err := b.DeleteRange(lo, partBound(tag, cut), nil); err != nil {
			return fmt.Errorf("drop partitions: %w", err)
		}
	}
	if err := s.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("drop partitions: commit: %w", err)
	}
	s.sealMu.Lock()
	s.mu.RLock()
	for _, st := range s.streams {
		for part := range st.chunks {
			if part < cut {
				delete(st.chunks, part)
			}
		}
	}
	s.mu.RUnlock()
	s.sealMu.Unlock()
	s.filters.clear()
	s.mu.Lock()
	for m := range s.parts {
		if m.part < cut {
			delete(s.parts, m)
		}
	}
	for _, st := range s.streams {
		i, _ := slices.BinarySearch(st.parts, cut)
		st.parts = slices.Clone(st.parts[i:])
	}
	s.mu.Unlock()
	return s.forgetEmpty()
}

// forgetEmpty deletes the streams with nothing left (no partition, an empty
// head): their records and their place in memory, so that the next Open
// does not restore into the index a stream its retention forgot. Pushes wait
// meanwhile (dropMu), so none writes to a stream whose record goes.
func (s *Store) forgetEmpty() error {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []*stream
	for _, st := range s.streams {
		if len(st.parts) > 0 {
			continue
		}
		st.mu.Lock()
		empty := len(st.entries) == 0 && len(st.seqs) == 0 && !st.sealing
		st.mu.Unlock()
		if empty {
			gone = append(gone, st)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, st := range gone {
		if err := b.Delete(streamKey(st.id), nil); err != nil {
			return fmt.Errorf("forget streams: %w", err)
		}
	}
	if err := s.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("forget streams: commit: %w", err)
	}
	for _, st := range gone {
		delete(s.streams, st.id)
	}
	s.log.Info("log_streams_forgotten", "streams", len(gone))
	return nil
}

// dropDuplicates removes, from entries sorted by timestamp, each entry with
// the timestamp and line of an earlier one (a client's retried push), as
// Select would skip it: a chunk then holds no duplicates, so its header
// count is what a query returns.
func dropDuplicates(es []logentry.Entry) []logentry.Entry {
	out := es[:0]
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].Timestamp == es[i].Timestamp {
			j++
		}
		if j == i+1 {
			out = append(out, es[i])
			i = j
			continue
		}
		if j-i > 32 { // many lines at one timestamp: a set
			seen := make(map[string]struct{}, j-i)
			for _, e := range es[i:j] {
				if _, dup := seen[e.Line]; !dup {
					seen[e.Line] = struct{}{}
					out = append(out, e)
				}
			}
			i = j
			continue
		}
		start := len(out)
		for _, e := range es[i:j] {
			dup := false
			for _, k := range out[start:] {
				if k.Line == e.Line {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, e)
			}
		}
		i = j
	}
	return out
}
