package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/weftdb/weft/storage/keyspace"
)

// Keyspace tags (storage/keyspace).
const (
	tagChunk = keyspace.Chunks
	tagMeta  = keyspace.Meta
)

// chunkKeyLen is tag + partition + stream ID + start time.
const chunkKeyLen = 1 + 8 + 8 + 8

// Chunk value versions (first byte of every chunk value): 1 = a Prometheus
// tsdb/chunkenc chunk (encoding byte follows; read for compatibility), 2 =
// weft's columnar layout (storage/chunkenc codecs), which is what is written.
const (
	chunkValueXOR      = 1
	chunkValueColumnar = 2
)

// orderedInt maps an int64 to a uint64 whose big-endian bytes sort like the int.
func orderedInt(v int64) uint64 { return uint64(v) ^ (1 << 63) }

func fromOrdered(u uint64) int64 { return int64(u ^ (1 << 63)) }

func appendChunkKey(dst []byte, part int64, id uint64, mint int64) []byte {
	dst = append(dst, tagChunk)
	dst = binary.BigEndian.AppendUint64(dst, orderedInt(part))
	dst = binary.BigEndian.AppendUint64(dst, id)
	return binary.BigEndian.AppendUint64(dst, orderedInt(mint))
}

func parseChunkKey(k []byte) (part int64, id uint64, mint int64, ok bool) {
	if len(k) != chunkKeyLen || k[0] != tagChunk {
		return 0, 0, 0, false
	}
	return fromOrdered(binary.BigEndian.Uint64(k[1:])), binary.BigEndian.Uint64(k[9:]), fromOrdered(binary.BigEndian.Uint64(k[17:])), true
}

// appendChunkValueXOR encodes a head chunk as a version 1 value: its
// Prometheus bytes as they are. Sealing is on the ingest path, so it only
// copies; compaction re-encodes whole partitions into columnar blocks.
func appendChunkValueXOR(dst []byte, c *sealedChunk) []byte {
	if c.enc == encColumnar {
		return appendChunkValue(dst, c)
	}
	dst = append(dst, chunkValueXOR, byte(c.enc))
	dst = binary.AppendUvarint(dst, uint64(c.n))
	dst = binary.AppendUvarint(dst, uint64(c.maxt-c.mint))
	return append(dst, c.data...)
}

// appendChunkValue encodes c as a version 2 (columnar) value, converting
// from the Prometheus encoding if needed.
func appendChunkValue(dst []byte, c *sealedChunk) []byte {
	dst = append(dst, chunkValueColumnar)
	dst = binary.AppendUvarint(dst, uint64(c.n))
	dst = binary.AppendUvarint(dst, uint64(c.maxt-c.mint))
	if c.enc == encColumnar {
		return append(dst, c.data...)
	}
	cols := colPool.Get().(*columns)
	defer colPool.Put(cols)
	if err := cols.fromChunk(c.enc, c.data); err != nil {
		panic(fmt.Sprintf("BUG: head chunk does not decode: %v", err))
	}
	return appendColumnar(dst, cols)
}

var errBadChunk = errors.New("bad chunk value")

// decodeChunkValue parses a chunk value; data aliases v.
func decodeChunkValue(v []byte, mint int64) (sealedChunk, error) {
	if len(v) < 2 {
		return sealedChunk{}, errBadChunk
	}
	var c sealedChunk
	var rest []byte
	switch v[0] {
	case chunkValueXOR:
		if !chunkenc.IsValidEncoding(chunkenc.Encoding(v[1])) {
			return sealedChunk{}, errBadChunk
		}
		c = sealedChunk{mint: mint, enc: chunkenc.Encoding(v[1])}
		rest = v[2:]
	case chunkValueColumnar:
		c = sealedChunk{mint: mint, enc: encColumnar}
		rest = v[1:]
	default:
		return sealedChunk{}, errBadChunk
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 {
		return sealedChunk{}, errBadChunk
	}
	rest = rest[k:]
	d, k := binary.Uvarint(rest)
	if k <= 0 {
		return sealedChunk{}, errBadChunk
	}
	c.n, c.maxt, c.data = int(n), mint+int64(d), rest[k:]
	// Prometheus' chunk decoders trust their header (its chunks come from
	// checksummed files): a value too short for it must not reach them.
	if c.enc != encColumnar && len(c.data) < promChunkHeaderLen(c.enc) {
		return sealedChunk{}, errBadChunk
	}
	return c, nil
}

// promChunkHeaderLen is the header length of a Prometheus chunk encoding:
// the sample count, plus the counter-reset flags of histogram chunks.
func promChunkHeaderLen(enc chunkenc.Encoding) int {
	if enc == chunkenc.EncXOR {
		return 2
	}
	return 3
}

// partitionSet is the sorted set of partitions that hold chunks.
type partitionSet struct {
	mu    sync.RWMutex
	parts []int64
}

func (ps *partitionSet) add(p int64) {
	ps.mu.RLock()
	_, found := slices.BinarySearch(ps.parts, p)
	ps.mu.RUnlock()
	if found {
		return
	}
	ps.mu.Lock()
	if i, found := slices.BinarySearch(ps.parts, p); !found {
		ps.parts = slices.Insert(ps.parts, i, p)
	}
	ps.mu.Unlock()
}

// between returns the partitions in [lo, hi].
func (ps *partitionSet) between(lo, hi int64) []int64 {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	i, _ := slices.BinarySearch(ps.parts, lo)
	j, _ := slices.BinarySearch(ps.parts, hi+1)
	return slices.Clone(ps.parts[i:j])
}

func (ps *partitionSet) removeBefore(p int64) []int64 {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i, _ := slices.BinarySearch(ps.parts, p)
	old := slices.Clone(ps.parts[:i])
	ps.parts = slices.Delete(ps.parts, 0, i)
	return old
}

func (ps *partitionSet) all() []int64 {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return slices.Clone(ps.parts)
}

// loadPartitions finds the partitions present in Pebble by skipping from one
// partition prefix to the next.
func (db *DB) loadPartitions() error {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{tagChunk}, UpperBound: []byte{tagChunk + 1}})
	if err != nil {
		return fmt.Errorf("chunk iterator: %w", err)
	}
	defer it.Close()
	var seek []byte
	for ok := it.First(); ok; {
		p, _, _, good := parseChunkKey(it.Key())
		if !good {
			ok = it.Next()
			continue
		}
		db.parts.add(p)
		seek = append(seek[:0], tagChunk)
		seek = binary.BigEndian.AppendUint64(seek, orderedInt(p)+1)
		ok = it.SeekGE(seek)
	}
	return it.Error()
}

// writePending writes the sealed-but-unwritten chunks of ss to Pebble (not
// synced: the WAL still holds their samples until the next checkpoint, which
// syncs Pebble first) and then drops them from the head.
func (db *DB) writePending(ss []*memSeries) error {
	if len(ss) == 0 {
		return nil
	}
	if len(ss) > 1 {
		// A series that sealed several chunks in one commit is listed once
		// per seal; write it once.
		seen := make(map[*memSeries]struct{}, len(ss))
		uniq := ss[:0:0]
		for _, s := range ss {
			if _, dup := seen[s]; !dup {
				seen[s] = struct{}{}
				uniq = append(uniq, s)
			}
		}
		ss = uniq
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	written := make([][]*sealedChunk, len(ss))
	var key, val []byte
	for i, s := range ss {
		s.mu.Lock()
		if s.ext != nil {
			written[i] = slices.Clone(s.ext.pending)
		}
		s.mu.Unlock()
		for _, c := range written[i] {
			p := db.partOf(c.mint)
			key = appendChunkKey(key[:0], p, s.id, c.mint)
			val = appendChunkValueXOR(val[:0], c)
			if err := b.Set(key, val, nil); err != nil {
				return fmt.Errorf("batch chunk: %w", err)
			}
			db.parts.add(p)
		}
	}
	if b.Empty() {
		return nil
	}
	if err := db.ix.Commit(b, pebble.NoSync); err != nil {
		return fmt.Errorf("write chunks: %w", err)
	}
	for i, s := range ss {
		popped := 0
		s.mu.Lock()
		if s.ext != nil {
			for _, c := range written[i] {
				if len(s.ext.pending) > 0 && s.ext.pending[0] == c {
					s.ext.pending[0] = nil
					s.ext.pending = s.ext.pending[1:]
					popped++
				}
			}
			if len(s.ext.pending) == 0 {
				s.ext.pending = nil
			}
			s.dropExtIfEmptyLocked()
		}
		s.mu.Unlock()
		db.sealedChunks.Add(-int64(popped))
	}
	return nil
}

// chunkReader reads a series' chunks from one Pebble iterator.
type chunkReader struct {
	db  *DB
	it  *pebble.Iterator
	key []byte
}

func (db *DB) newChunkReader() (*chunkReader, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{tagChunk}, UpperBound: []byte{tagChunk + 1}})
	if err != nil {
		return nil, fmt.Errorf("chunk iterator: %w", err)
	}
	return &chunkReader{db: db, it: it}, nil
}

func (r *chunkReader) Close() error { return r.it.Close() }

// read appends the chunks of id that overlap [mint, maxt], in time order,
// with data copied (valid after the iterator moves).
func (r *chunkReader) read(id uint64, mint, maxt int64, parts []int64, dst []*sealedChunk) ([]*sealedChunk, error) {
	for _, p := range parts {
		r.key = appendChunkKey(r.key[:0], p, id, minInt64)
		for ok := r.it.SeekGE(r.key); ok; ok = r.it.Next() {
			kp, kid, kmint, good := parseChunkKey(r.it.Key())
			if !good || kp != p || kid != id || kmint > maxt {
				break
			}
			v, err := r.it.ValueAndErr()
			if err != nil {
				return dst, fmt.Errorf("read chunk: %w", err)
			}
			c, err := decodeChunkValue(v, kmint)
			if err != nil {
				return dst, fmt.Errorf("chunk of series %d at %d: %w", id, kmint, err)
			}
			if c.maxt < mint {
				continue
			}
			c.data = slices.Clone(c.data)
			dst = append(dst, &c)
		}
	}
	return dst, r.it.Error()
}
