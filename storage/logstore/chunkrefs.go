package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/weftdb/weft/index"
)

// The store keeps every sealed chunk's header in memory (a few dozen bytes
// a chunk), per stream and partition, so that selecting chunks by time
// reads no Pebble keys, and a bounded cache of token filters, so that
// repeated needle queries read no filters either. Chunks never change once
// written; seals add headers and retention drops partitions, both under
// Store.sealMu, with copy-on-write slices, so a select that captures the
// slices under sealMu together with its Pebble snapshot sees the same
// chunks in both.

// chunkRef is a sealed chunk's header key and decoded header (without the
// parts that alias a stored value: filter and version 1 body).
type chunkRef struct {
	key  []byte
	meta chunkMeta
}

// newChunkRef makes a chunkRef from a header key and value.
func newChunkRef(key, v []byte) (chunkRef, error) {
	m, err := decodeChunkMeta(v)
	if err != nil {
		return chunkRef{}, err
	}
	m.names = slices.Clone(m.names)
	m.filter, m.body = bloom{}, nil
	return chunkRef{key: slices.Clone(key), meta: m}, nil
}

// insertRef returns refs with r added in key order, as a new slice (readers
// may hold refs).
func insertRef(refs []chunkRef, r chunkRef) []chunkRef {
	i, _ := slices.BinarySearchFunc(refs, r.key, func(c chunkRef, k []byte) int { return bytes.Compare(c.key, k) })
	return slices.Insert(slices.Clip(refs), i, r)
}

// loadChunks reads every chunk header into its stream's list.
func (s *Store) loadChunks() error {
	lo, hi := tagBound(tagChunk)
	return s.scan(lo, hi, func(k, v []byte) error {
		if len(k) != 34 {
			return fmt.Errorf("chunk key: %w", ErrCorrupt)
		}
		part := unflip(binary.BigEndian.Uint64(k[2:]))
		id := index.ID(binary.BigEndian.Uint64(k[10:]))
		st := s.streams[id]
		if st == nil {
			return fmt.Errorf("chunk of unknown stream %d: %w", id, ErrCorrupt)
		}
		r, err := newChunkRef(k, v)
		if err != nil {
			return fmt.Errorf("chunk of stream %d: %w", id, err)
		}
		if st.chunks == nil {
			st.chunks = map[int64][]chunkRef{}
		}
		st.chunks[part] = append(st.chunks[part], r) // keys come in order
		return nil
	})
}

// filterCache holds token filters of sealed chunks, up to a byte budget;
// beyond it, arbitrary entries make room. Safe for concurrent use.
type filterCache struct {
	mu    sync.Mutex
	m     map[string][]byte
	bytes int
	max   int
}

func (c *filterCache) get(key []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[string(key)]
	return v, ok
}

// put keeps v (which the caller must not modify) under key.
func (c *filterCache) put(key, v []byte) {
	if len(v) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	if _, ok := c.m[string(key)]; ok {
		return
	}
	for k, old := range c.m { // map order: arbitrary victims
		if c.bytes+len(v) <= c.max {
			break
		}
		delete(c.m, k)
		c.bytes -= len(old)
	}
	c.m[string(key)] = v
	c.bytes += len(v)
}

func (c *filterCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.bytes = 0
}
