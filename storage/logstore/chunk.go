package logstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/chunkenc"
	"github.com/weftdb/weft/storage/logentry"
)

// Chunk value layout (docs/format/logs.md):
//
//	version byte (chunkVersion)
//	uvarint n, varint minT, varint maxT     header: count and time range (ns)
//	uvarint lineBytes                       sum of the line lengths
//	token filter                            uvarint words, words little-endian
//	uvarint body length, zstd frame         the columns below, compressed
//
// body: timestamps (chunkenc.AppendTimestamps), n uvarint line lengths, the
// lines concatenated, then per entry the structured metadata (uvarint pair
// count, length-prefixed names and values).
const chunkVersion byte = 1

// maxChunkBody bounds a decompressed body (a corrupt header cannot make a
// reader allocate more); sealing writes at most a few times SealBytes.
const maxChunkBody = 256 << 20

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdCodecs() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		// EncodeAll and DecodeAll are safe for concurrent use; concurrency 1
		// keeps them from starting goroutines.
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if err != nil {
			panic("BUG: zstd encoder options: " + err.Error())
		}
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(maxChunkBody), zstd.IgnoreChecksum(true))
		if err != nil {
			panic("BUG: zstd decoder options: " + err.Error())
		}
	})
	return zstdEnc, zstdDec
}

// chunkMeta is what a reader learns from a chunk without decompressing it.
type chunkMeta struct {
	n          int
	minT, maxT int64
	lineBytes  uint64
	filter     bloom
	body       []byte // compressed columns
}

// appendChunk encodes es (sorted by timestamp, non-empty) as a chunk value.
func appendChunk(dst []byte, es []logentry.Entry) []byte {
	if len(es) == 0 || len(es) > chunkenc.MaxColumnLen {
		panic(fmt.Sprintf("BUG: chunk of %d entries", len(es)))
	}
	// Distinct filter items first, to size the filter: collecting, sorting
	// and compacting the hashes is several times faster than a set.
	items := make([]uint64, 0, len(es)*32)
	add := func(h uint64) { items = append(items, h) }
	for _, e := range es {
		lineItems(e.Line, add)
		metaItems(e.Metadata, add)
	}
	slices.Sort(items)
	items = slices.Compact(items)
	f := newBloom(len(items))
	for _, h := range items {
		f.add(h)
	}

	ts := make([]int64, len(es))
	for i, e := range es {
		ts[i] = e.Timestamp
	}
	body := chunkenc.AppendTimestamps(nil, ts)
	for _, e := range es {
		body = binary.AppendUvarint(body, uint64(len(e.Line)))
	}
	for _, e := range es {
		body = append(body, e.Line...)
	}
	for _, e := range es {
		body = appendLabels(body, e.Metadata)
	}
	enc, _ := zstdCodecs()
	comp := enc.EncodeAll(body, nil)

	dst = append(dst, chunkVersion)
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	dst = binary.AppendVarint(dst, es[0].Timestamp)
	dst = binary.AppendVarint(dst, es[len(es)-1].Timestamp)
	lineBytes := 0
	for _, e := range es {
		lineBytes += len(e.Line)
	}
	dst = binary.AppendUvarint(dst, uint64(lineBytes))
	dst = appendBloom(dst, f)
	dst = binary.AppendUvarint(dst, uint64(len(comp)))
	return append(dst, comp...)
}

// decodeChunkMeta reads a chunk's header and filter; body aliases src.
func decodeChunkMeta(src []byte) (chunkMeta, error) {
	var m chunkMeta
	if len(src) == 0 || src[0] != chunkVersion {
		return m, fmt.Errorf("chunk version: %w", ErrCorrupt)
	}
	src = src[1:]
	n, src, err := readUvarint(src)
	if err != nil || n == 0 || n > chunkenc.MaxColumnLen {
		return m, fmt.Errorf("chunk count: %w", ErrCorrupt)
	}
	m.n = int(n)
	var k int
	if m.minT, k = binary.Varint(src); k <= 0 {
		return m, fmt.Errorf("chunk min time: %w", ErrCorrupt)
	}
	src = src[k:]
	if m.maxT, k = binary.Varint(src); k <= 0 || m.maxT < m.minT {
		return m, fmt.Errorf("chunk max time: %w", ErrCorrupt)
	}
	src = src[k:]
	if m.lineBytes, src, err = readUvarint(src); err != nil {
		return m, fmt.Errorf("chunk line bytes: %w", ErrCorrupt)
	}
	if m.filter, src, err = decodeBloom(src); err != nil {
		return m, err
	}
	bl, src, err := readUvarint(src)
	if err != nil || bl != uint64(len(src)) {
		return m, fmt.Errorf("chunk body length: %w", ErrCorrupt)
	}
	m.body = src
	return m, nil
}

// decodeChunkEntries decompresses m's columns and appends its entries to
// dst. Lines and metadata are fresh strings the caller may keep.
func decodeChunkEntries(dst []logentry.Entry, m chunkMeta) ([]logentry.Entry, error) {
	_, dec := zstdCodecs()
	body, err := dec.DecodeAll(m.body, nil)
	if err != nil {
		return dst, fmt.Errorf("decompress chunk: %w: %w", ErrCorrupt, err)
	}
	ts, body, err := chunkenc.DecodeTimestamps(nil, body)
	if err != nil || len(ts) != m.n {
		return dst, fmt.Errorf("chunk timestamps: %w", ErrCorrupt)
	}
	lens := make([]uint64, m.n)
	total := uint64(0)
	for i := range lens {
		if lens[i], body, err = readUvarint(body); err != nil {
			return dst, err
		}
		total += lens[i]
		if total > uint64(len(body)) {
			return dst, fmt.Errorf("chunk line lengths: %w", ErrCorrupt)
		}
	}
	if total != m.lineBytes {
		return dst, fmt.Errorf("chunk line bytes %d, header says %d: %w", total, m.lineBytes, ErrCorrupt)
	}
	lines := string(body[:total])
	body = body[total:]
	dst = slices.Grow(dst, m.n)
	b := labels.NewScratchBuilder(4)
	off := uint64(0)
	for i := range m.n {
		e := logentry.Entry{Timestamp: ts[i], Line: lines[off : off+lens[i]]}
		off += lens[i]
		if e.Metadata, body, err = decodeLabels(&b, body); err != nil {
			return dst, err
		}
		dst = append(dst, e)
	}
	if len(body) != 0 {
		return dst, fmt.Errorf("chunk: %d trailing bytes: %w", len(body), ErrCorrupt)
	}
	return dst, nil
}

// mayMatch reports whether the chunk can hold an entry passing the
// line filters. Only LineContains filters can rule a chunk out.
func (m chunkMeta) mayMatch(fs []logentry.LineFilter) bool {
	for _, f := range fs {
		if f.Op == logentry.LineContains && !m.filter.mayContain(f.Value) {
			return false
		}
	}
	return true
}

// mayHaveMeta reports whether an entry of the chunk may carry every pair.
func (m chunkMeta) mayHaveMeta(pairs []labels.Label) bool {
	for _, l := range pairs {
		if !m.filter.mayHaveMeta(l.Name, l.Value) {
			return false
		}
	}
	return true
}
