package storage

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// The read side of Select below the series set: chunk cursors over Pebble,
// the arena copied chunk bytes live in, and the ordering of a series'
// sources.

// arenaBlock is the size of the blocks copied chunk bytes are packed into:
// one allocation (without pointers, so the GC does not scan it) for a few
// hundred series instead of one per series.
const arenaBlock = 64 << 10

// arenaCopy copies b into arena and returns the copy (capacity-limited, so
// appending to it never writes into the arena) and the arena.
func arenaCopy(arena, b []byte) ([]byte, []byte) {
	if len(b) > cap(arena)-len(arena) {
		if len(b) > arenaBlock/4 {
			return slices.Clone(b), arena
		}
		arena = make([]byte, 0, arenaBlock)
	}
	lo := len(arena)
	arena = append(arena, b...)
	return arena[lo:len(arena):len(arena)], arena
}

// sortSources orders srcs by mint, keeping the order of equal ones. They
// come almost sorted (Pebble chunks, then the head's), so insertion sort.
func sortSources(srcs []source) {
	for i := 1; i < len(srcs); i++ {
		for j := i; j > 0 && srcs[j].mint < srcs[j-1].mint; j-- {
			srcs[j], srcs[j-1] = srcs[j-1], srcs[j]
		}
	}
}

// chunkCursor reads the chunks of one partition for series visited mostly
// in ascending ID order. It only ever seeks forward (to a series, then past
// each chunk read), which Pebble turns into a few steps of the iterators it
// is already positioned on, and into nothing at all when the iterator
// already sits past the series' first possible key (a series without chunks
// there). The iterator is opened on first use.
type chunkCursor struct {
	part  int64
	it    *pebble.Iterator
	lower []byte
	upper []byte
	key   []byte
}

func (c *chunkCursor) reset(part int64) {
	c.part = part
	c.lower = binary.BigEndian.AppendUint64(append(c.lower[:0], tagChunk), orderedInt(part))
	c.upper = binary.BigEndian.AppendUint64(append(c.upper[:0], tagChunk), orderedInt(part)+1)
}

func (c *chunkCursor) close() error {
	if c.it == nil {
		return nil
	}
	err := c.it.Close()
	c.it = nil
	return err
}

// read appends the chunks of id that overlap [mint, maxt] to dst, in time
// order, their data copied into arena (only their bounds without withData).
func (c *chunkCursor) read(db *DB, id uint64, mint, maxt int64, withData bool, dst []source, arena []byte) ([]source, []byte, error) {
	if c.it == nil {
		it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: c.lower, UpperBound: c.upper})
		if err != nil {
			return dst, arena, fmt.Errorf("chunk iterator: %w", err)
		}
		c.it = it
	}
	c.key = appendChunkKey(c.key[:0], c.part, id, minInt64)
	for valid := c.it.SeekGE(c.key); valid; valid = c.it.SeekGE(c.key) {
		_, kid, kmint, ok := parseChunkKey(c.it.Key())
		if !ok || kid != id || kmint > maxt {
			break
		}
		v, err := c.it.ValueAndErr()
		if err != nil {
			return dst, arena, fmt.Errorf("read chunk: %w", err)
		}
		ch, err := decodeChunkValue(v, kmint)
		if err != nil {
			return dst, arena, fmt.Errorf("chunk of series %d at %d: %w", id, kmint, err)
		}
		if ch.maxt >= mint {
			src := source{mint: ch.mint, maxt: ch.maxt}
			if withData {
				src.enc = ch.enc
				src.data, arena = arenaCopy(arena, ch.data)
			}
			dst = append(dst, src)
		}
		if kmint == maxInt64 {
			break
		}
		c.key = appendChunkKey(c.key[:0], c.part, id, kmint+1)
	}
	if err := c.it.Error(); err != nil {
		return dst, arena, fmt.Errorf("chunk iterator: %w", err)
	}
	return dst, arena, nil
}
