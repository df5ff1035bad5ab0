package logstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// SelectTimestamps' f receives one block of entry timestamps of one stream: n entries, all in the selected range, the oldest at
// minT and the newest at maxT. metaNames is a superset of the structured
// metadata names the block's entries carry (sorted; nil when none). load
// returns the block's timestamps in ascending order; calling it may read
// and decode data, so callers that need only the count and bounds should
// not. The slices are valid until f returns. (The function type is spelled
// out, not named, so that query/logql's TimestampSource matches it without
// importing this package.)
//
// SelectTimestamps calls f with the timestamps of the entries Select
// would return for p (line filters are not applied: p.LineFilters must be
// empty), in blocks, stream after stream, without reading lines: a chunk
// whose time range lies inside [p.Start, p.End) is described by its header
// alone. Duplicates are removed as Select removes them. The blocks of a
// stream come in no particular order. The first error of
// f stops the walk and is returned. Safe for concurrent use.
func (s *Store) SelectTimestamps(ctx context.Context, p logentry.SelectParams, f func(stream labels.Labels, metaNames []string, minT, maxT int64, n int, load func() ([]int64, error)) error) error {
	if len(p.LineFilters) > 0 {
		return fmt.Errorf("select timestamps: line filters cannot be applied to timestamps")
	}
	ei, err := s.Select(ctx, p)
	if err != nil {
		return err
	}
	it := ei.(*iterator)
	defer it.Close()
	if it.snap == nil {
		return nil
	}
	var ts []int64
	for _, sel := range it.streams {
		if err := ctx.Err(); err != nil {
			return err
		}
		blocks, err := s.chunkBlocks(it, sel)
		if err != nil {
			return err
		}
		if len(sel.dels) > 0 || overlapping(sel.head, blocks) {
			// Deleted entries, or duplicates across blocks: read the
			// stream's entries.
			if err := it.eachStreamEntries(sel, func(ts []int64, names []string) error {
				return f(sel.st.pub, names, ts[0], ts[len(ts)-1], len(ts), func() ([]int64, error) { return ts, nil })
			}); err != nil {
				return err
			}
			continue
		}
		if len(sel.head) > 0 {
			var d dupFilter
			ts = ts[:0]
			for i, e := range sel.head {
				// Only an entry at the previous one's timestamp can be a
				// duplicate (the head is sorted): skip the line work otherwise.
				if i+1 < len(sel.head) && sel.head[i+1].Timestamp == e.Timestamp || i > 0 && sel.head[i-1].Timestamp == e.Timestamp {
					if d.seen(e.Timestamp, e.Line) {
						continue
					}
				}
				ts = append(ts, e.Timestamp)
			}
			if err := f(sel.st.pub, sel.headNames, ts[0], ts[len(ts)-1], len(ts), func() ([]int64, error) { return ts, nil }); err != nil {
				return err
			}
		}
		for _, b := range blocks {
			if err := it.emitBlock(sel, b, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// chunkBlock is a chunk header kept for SelectTimestamps.
type chunkBlock struct {
	key   []byte
	meta  chunkMeta
	names []string
}

// chunkBlocks reads the headers of sel's chunks that overlap the range.
func (s *Store) chunkBlocks(it *iterator, sel selStream) ([]chunkBlock, error) {
	var out []chunkBlock
	for _, refs := range sel.refs {
		for _, r := range refs {
			m := r.meta
			if m.minT >= it.p.End {
				break
			}
			if m.maxT < it.p.Start {
				continue
			}
			var names []string
			m.eachName(func(n string) { names = append(names, n) })
			out = append(out, chunkBlock{key: r.key, meta: m, names: names})
		}
	}
	return out, nil
}

// overlapping reports whether two of the blocks (the head and the chunks,
// by their time ranges, bounds included) overlap: only then can an entry
// of one duplicate an entry of another.
func overlapping(head []logentry.Entry, blocks []chunkBlock) bool {
	type span struct{ lo, hi int64 }
	spans := make([]span, 0, len(blocks)+1)
	if len(head) > 0 {
		spans = append(spans, span{head[0].Timestamp, head[len(head)-1].Timestamp})
	}
	for _, b := range blocks {
		spans = append(spans, span{b.meta.minT, b.meta.maxT})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(min(max(a.lo-b.lo, -1), 1)) })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo <= spans[i-1].hi {
			return true
		}
	}
	return false
}

// emitBlock hands one chunk to f: by its header when it lies inside the
// range and records its metadata names, else by its decoded timestamps.
func (it *iterator) emitBlock(sel selStream, b chunkBlock, f func(labels.Labels, []string, int64, int64, int, func() ([]int64, error)) error) error {
	m := b.meta
	inside := m.minT >= it.p.Start && m.maxT < it.p.End
	if inside && m.namesKnown {
		var ts []int64
		load := func() ([]int64, error) {
			if ts != nil {
				return ts, nil
			}
			it.chunksRead++
			err := it.withChunkData(b.key, m, func(m chunkMeta, data []byte) error {
				var err error
				ts, err = decodeChunkTimestamps(nil, m, data)
				return err
			})
			return ts, err
		}
		return f(sel.st.pub, b.names, m.minT, m.maxT, m.n, load)
	}
	var ts []int64
	names := b.names
	if m.namesKnown {
		it.chunksRead++
		if err := it.withChunkData(b.key, m, func(m chunkMeta, data []byte) error {
			var err error
			ts, err = decodeChunkTimestamps(nil, m, data)
			return err
		}); err != nil {
			return err
		}
		ts = inRange(ts, it.p.Start, it.p.End)
	} else { // version 1: the names are in the entries
		es, err := it.readChunk(b.key, m)
		if err != nil {
			return err
		}
		var d dupFilter
		for _, e := range es {
			if e.Timestamp >= it.p.Start && e.Timestamp < it.p.End && !d.seen(e.Timestamp, e.Line) {
				ts = append(ts, e.Timestamp)
				names = addNames(names, e.Metadata)
			}
		}
	}
	if len(ts) == 0 {
		return nil
	}
	return f(sel.st.pub, names, ts[0], ts[len(ts)-1], len(ts), func() ([]int64, error) { return ts, nil })
}

// eachStreamEntries merges sel's head and chunks as Select does and calls
// f once with the timestamps and metadata names of the stream's entries.
func (it *iterator) eachStreamEntries(sel selStream, f func(ts []int64, names []string) error) error {
	sub := &iterator{ctx: it.ctx, s: it.s, p: it.p, snap: it.snap, streams: []selStream{sel}}
	var ts []int64
	var names []string
	for sub.Next() {
		_, e := sub.At()
		ts = append(ts, e.Timestamp)
		names = addNames(names, e.Metadata)
	}
	it.chunksRead += sub.chunksRead
	if err := sub.Err(); err != nil {
		return err
	}
	if len(ts) == 0 {
		return nil
	}
	return f(ts, names)
}

// inRange returns the part of sorted ts in [start, end).
func inRange(ts []int64, start, end int64) []int64 {
	lo, _ := slices.BinarySearch(ts, start)
	hi, _ := slices.BinarySearch(ts, end)
	return ts[lo:hi]
}

// addNames adds md's names to the sorted set names. A new name makes a
// new slice: readers may hold the old one.
func addNames(names []string, md labels.Labels) []string {
	md.Range(func(l labels.Label) {
		if i, ok := slices.BinarySearch(names, l.Name); !ok {
			names = slices.Insert(slices.Clip(names), i, l.Name)
		}
	})
	return names
}
