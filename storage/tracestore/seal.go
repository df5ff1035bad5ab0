package tracestore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// maxSectionBytes bounds a decompressed section (a corrupt value cannot
// make a reader allocate more); pages are PageBytes before compression.
const maxSectionBytes = 256 << 20

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		// EncodeAll and DecodeAll are safe for concurrent use; concurrency
		// 1 keeps them from starting goroutines.
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if err != nil {
			panic("BUG: zstd encoder options: " + err.Error())
		}
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxSectionBytes), zstd.IgnoreChecksum(true))
		if err != nil {
			panic("BUG: zstd decoder options: " + err.Error())
		}
	})
	return zstdEnc, zstdDec
}

// sealing is one head trace picked for a seal: its first n spans.
type sealing struct {
	p     part
	n     int
	bytes int
	seqs  []uint64 // recent records whose spans of this trace are all in the first n
}

// Seal seals head traces into blocks: every trace if all is true (tests,
// shutdown); otherwise, once Options.BlockInterval has passed since the
// last cut or the ready traces hold Options.BlockBytes, the traces idle
// for Options.IdleTime or older than Options.MaxTraceAge (every trace once
// the head holds Options.MaxHeadBytes). Safe for concurrent use with every
// method; seals run one at a time.
func (s *Store) Seal(ctx context.Context, all bool) error {
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	now := s.opts.Now()
	var picked []sealing
	readyBytes := 0
	s.mu.RLock()
	if s.headBytes >= s.opts.MaxHeadBytes {
		all = true
	}
	for _, ht := range s.head {
		if !all && now.Sub(ht.last) < s.opts.IdleTime && now.Sub(ht.first) < s.opts.MaxTraceAge {
			continue
		}
		n := len(ht.spans)
		sl := sealing{p: part{id: ht.id, spans: ht.spans[:n:n], streams: ht.streams[:n:n]}, n: n, bytes: ht.bytes}
		for _, pr := range ht.pushes {
			if pr.end <= n {
				sl.seqs = append(sl.seqs, pr.seq)
			}
		}
		picked = append(picked, sl)
		readyBytes += ht.bytes
	}
	due := all || now.Sub(s.lastCut) >= s.opts.BlockInterval || readyBytes >= s.opts.BlockBytes
	// Recent records every one of whose traces is picked can go.
	releases := map[uint64]int{}
	for _, sl := range picked {
		for _, q := range sl.seqs {
			releases[q]++
		}
	}
	var gone []uint64
	for q, k := range releases {
		if s.recents[q] == k {
			gone = append(gone, q)
		}
	}
	s.mu.RUnlock()
	if len(picked) == 0 || !due {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// One block per partition, by the start of each trace part.
	byPart := map[int64][]part{}
	for _, sl := range picked {
		start, _ := sl.p.timeRange()
		p := s.partOf(start)
		byPart[p] = append(byPart[p], sl.p)
	}
	b := s.db.NewBatch()
	defer b.Close()
	var metas []*blockMeta
	for _, p := range slices.Sorted(maps.Keys(byPart)) {
		m, err := s.writeBlock(b, p, byPart[p])
		if err != nil {
			return fmt.Errorf("seal: %w", err)
		}
		metas = append(metas, m)
	}
	for _, q := range gone {
		if err := b.Delete(recentKey(q), nil); err != nil {
			return fmt.Errorf("seal: %w", err)
		}
	}
	if err := b.Set(seqKey(), binary.BigEndian.AppendUint64(nil, s.seq.Load()), nil); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	// NoSync: losing this batch in a crash loses nothing (the recent
	// records stay); a later synced push makes it durable.
	if err := s.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("seal: commit: %w", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.blocks = append(s.blocks, metas...)
	for _, sl := range picked {
		ht := s.head[sl.p.id]
		if ht == nil {
			continue
		}
		s.headBytes -= sl.bytes
		if len(ht.spans) == sl.n {
			delete(s.head, sl.p.id)
			continue
		}
		// Spans arrived while sealing: they stay in the head.
		ht.spans = slices.Clone(ht.spans[sl.n:])
		ht.streams = slices.Clone(ht.streams[sl.n:])
		var rest []pushRef
		for _, pr := range ht.pushes {
			if pr.end > sl.n {
				rest = append(rest, pushRef{seq: pr.seq, end: pr.end - sl.n})
			}
		}
		ht.pushes = rest
		ht.bytes -= sl.bytes
		ht.first = now
	}
	for q, k := range releases {
		if s.recents[q] -= k; s.recents[q] <= 0 {
			delete(s.recents, q)
		}
	}
	if len(s.head) == 0 {
		clear(s.spanKeys)
		clear(s.resKeys)
	}
	s.lastCut = now
	return nil
}

// writeBlock encodes parts (of partition p) as one block into b and
// returns its header.
func (s *Store) writeBlock(b *pebble.Batch, p int64, parts []part) (*blockMeta, error) {
	slices.SortFunc(parts, func(a, b part) int { return compareIDs(a.id, b.id) })
	m := &blockMeta{part: p, seq: s.seq.Add(1), ids: newBloom(len(parts))}
	m.indexed = slices.Sorted(maps.Keys(s.indexed))
	streams := map[index.ID]struct{}{}
	spanKeys, resKeys := map[string]struct{}{}, map[string]struct{}{}
	nValues := 0
	for i := range parts {
		nValues += len(parts[i].spans)
	}
	m.values = newBloom(nValues)
	var key []byte
	for i := range parts {
		pt := &parts[i]
		m.ids.add(pt.id[:])
		start, end := pt.timeRange()
		if i == 0 || start < m.minStart {
			m.minStart = start
		}
		if i == 0 || end > m.maxEnd {
			m.maxEnd = end
		}
		m.traces++
		m.spans += len(pt.spans)
		for j := range pt.spans {
			sp := &pt.spans[j]
			streams[pt.streams[j]] = struct{}{}
			key = valueKey(key, valueName, "", sp.Name)
			m.values.add(key)
			for _, kv := range sp.Attributes {
				if len(spanKeys) < maxBlockKeys {
					spanKeys[kv.Key] = struct{}{}
				}
				if _, ok := s.indexed[kv.Key]; ok && kv.Value.Type() == traceentry.ValueString {
					key = valueKey(key, valueSpanAttr, kv.Key, kv.Value.Str())
					m.values.add(key)
				}
			}
			if sp.Resource != nil {
				for _, kv := range sp.Resource.Attributes {
					if len(resKeys) < maxBlockKeys {
						resKeys[kv.Key] = struct{}{}
					}
					if kv.Value.Type() == traceentry.ValueString {
						key = valueKey(key, valueResAttr, kv.Key, kv.Value.Str())
						m.values.add(key)
					}
				}
			}
		}
	}
	m.streams = slices.Sorted(maps.Keys(streams))
	m.spanKeys = slices.Sorted(maps.Keys(spanKeys))
	m.resKeys = slices.Sorted(maps.Keys(resKeys))

	enc := s.encs.Get().(*encoder)
	defer s.encs.Put(enc)
	zenc, _ := zstdCodecs()
	var light, heavy, zbuf []byte
	for start := 0; start < len(parts); {
		end, size := start, 0
		for end < len(parts) && (end == start || size < s.opts.PageBytes) {
			for j := range parts[end].spans {
				size += spanBytes(&parts[end].spans[j])
			}
			end++
		}
		pm := pageMeta{first: parts[start].id, last: parts[end-1].id, traces: end - start}
		first := true
		for _, pt := range parts[start:end] {
			for j := range pt.spans {
				sp := &pt.spans[j]
				d := sp.EndUnixNano - sp.StartUnixNano
				if first || sp.StartUnixNano < pm.minStart {
					pm.minStart = sp.StartUnixNano
				}
				if first || sp.EndUnixNano > pm.maxEnd {
					pm.maxEnd = sp.EndUnixNano
				}
				if first || d < pm.minDur {
					pm.minDur = d
				}
				if first || d > pm.maxDur {
					pm.maxDur = d
				}
				first = false
				pm.statuses |= bit(int(sp.StatusCode))
				pm.kinds |= bit(int(sp.Kind))
			}
		}
		light, heavy = enc.encode(light[:0], heavy[:0], parts[start:end])
		page := len(m.pages)
		zbuf = zenc.EncodeAll(light, zbuf[:0])
		pm.lightLen = len(zbuf)
		if err := b.Set(pageKey(tagLight, p, m.seq, page), zbuf, nil); err != nil {
			return nil, err
		}
		zbuf = zenc.EncodeAll(heavy, zbuf[:0])
		pm.heavyLen = len(zbuf)
		if err := b.Set(pageKey(tagHeavy, p, m.seq, page), zbuf, nil); err != nil {
			return nil, err
		}
		m.pages = append(m.pages, pm)
		start = end
	}
	if err := b.Set(blockKey(tagBlock, p, m.seq), m.marshal(), nil); err != nil {
		return nil, err
	}
	return m, nil
}

// bit returns the mask bit of a small enum value; values out of range
// share the top bit.
func bit(v int) uint8 {
	if v < 0 || v > 7 {
		return 1 << 7
	}
	return 1 << v
}

// DropBefore deletes every partition that ends at or before t (unix ns):
// blocks and membership records, by range, and forgets streams with
// nothing left. The head is left alone. The substrate's retention clock
// calls it.
func (s *Store) DropBefore(ctx context.Context, t int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cut := s.partOf(t)
	b := s.db.NewBatch()
	defer b.Close()
	for _, tag := range []byte{tagBlock, tagLight, tagHeavy, tagPart} {
		lo, _ := tagBound(tag)
		if err := b.DeleteRange(lo, partBound(tag, cut), nil); err != nil {
			return fmt.Errorf("drop partitions: %w", err)
		}
	}
	if err := s.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("drop partitions: commit: %w", err)
	}
	s.mu.Lock()
	s.blocks = slices.DeleteFunc(s.blocks, func(m *blockMeta) bool { return m.part < cut })
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

// forgetEmpty deletes the streams with no partition left and no span in
// the head, so that the next Open does not restore into the index a
// stream its retention forgot.
func (s *Store) forgetEmpty() error {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	inHead := map[index.ID]struct{}{}
	for _, ht := range s.head {
		for _, id := range ht.streams {
			inHead[id] = struct{}{}
		}
	}
	var gone []index.ID
	for id, st := range s.streams {
		if _, ok := inHead[id]; !ok && len(st.parts) == 0 {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range gone {
		if err := b.Delete(streamKey(id), nil); err != nil {
			return fmt.Errorf("forget streams: %w", err)
		}
	}
	if err := s.ix.Commit(b, pebble.Sync); err != nil {
		return fmt.Errorf("forget streams: commit: %w", err)
	}
	for _, id := range gone {
		delete(s.streams, id)
	}
	s.log.Info("trace_streams_forgotten", "streams", len(gone))
	return nil
}

// sortBlocksNewestFirst orders blocks by their latest span end, newest
// first (ties: newer seal first).
func sortBlocksNewestFirst(bs []*blockMeta) {
	slices.SortFunc(bs, func(a, b *blockMeta) int {
		if c := cmp.Compare(b.maxEnd, a.maxEnd); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
}
