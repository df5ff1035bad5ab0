package logstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/chunkenc"
	"github.com/weftdb/weft/storage/logentry"
)

// A sealed chunk is three values (docs/format/logs.md):
//
// the header, under the chunk key (tag 'C'), a few dozen bytes so that a
// scan of a stream's chunks reads little:
//
//	version byte (chunkVersion)
//	uvarint n, varint minT, varint maxT     count and time range (ns)
//	uvarint lineBytes                       sum of the line lengths
//	uvarint k, k length-prefixed names      distinct structured metadata names, sorted
//	uvarint filter length                   the length of the filter value
//	uvarint data length                     the length of the data value
//
// the token filter, under the filter key (tag 'F', same suffix): its words,
// little-endian;
//
// and the data, under the data key (tag 'D', same suffix):
//
//	uvarint T, T bytes                      timestamps (chunkenc.AppendTimestamps)
//	zstd frame                              n uvarint line lengths, the lines
//	                                        concatenated, per entry the metadata
//
// Timestamps stay outside the zstd frame, so that counting queries read
// them without decompressing lines.
//
// Version 1 chunks (one value: the header without metadata names and data
// length, then uvarint length and one zstd frame holding every column) are
// still read.
const (
	chunkVersion   byte = 2
	chunkVersionV1 byte = 1
)

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

// chunkMeta is what a reader learns from a chunk's header.
type chunkMeta struct {
	version    byte
	n          int
	minT, maxT int64
	lineBytes  uint64
	// names: the encoded distinct metadata names (v2); namesKnown is false
	// for version 1 chunks, whose names are not recorded.
	names      []byte
	namesKnown bool
	filter     bloom // version 1: inline; version 2: set from the filter value
	filterLen  uint64
	dataLen    uint64
	body       []byte // version 1: the compressed columns, inline
}

// itemPool recycles the filter item buffers of sealing.
var itemPool = sync.Pool{New: func() any { return new([]uint64) }}

// encodeChunk encodes es (sorted by timestamp, non-empty) as a chunk
// header, filter and data value.
func encodeChunk(es []logentry.Entry) (head, filter, data []byte) {
	if len(es) == 0 || len(es) > chunkenc.MaxColumnLen {
		panic(fmt.Sprintf("BUG: chunk of %d entries", len(es)))
	}
	var names []string
	lineBytes := 0
	for _, e := range es {
		e.Metadata.Range(func(l labels.Label) {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		})
		lineBytes += len(e.Line)
	}
	slices.Sort(names)
	words := filterWords(es, 0)

	ts := make([]int64, len(es))
	for i, e := range es {
		ts[i] = e.Timestamp
	}
	tcol := chunkenc.AppendTimestamps(nil, ts)
	mdBytes := 0
	for _, e := range es {
		mdBytes += 1 + e.Metadata.Len()*2
		e.Metadata.Range(func(l labels.Label) { mdBytes += len(l.Name) + len(l.Value) })
	}
	body := make([]byte, 0, lineBytes+3*len(es)+2*mdBytes)
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
	data = binary.AppendUvarint(make([]byte, 0, len(tcol)+len(body)/4+16), uint64(len(tcol)))
	data = append(data, tcol...)
	data = enc.EncodeAll(body, data)

	head = append(head, chunkVersion)
	head = binary.AppendUvarint(head, uint64(len(es)))
	head = binary.AppendVarint(head, es[0].Timestamp)
	head = binary.AppendVarint(head, es[len(es)-1].Timestamp)
	head = binary.AppendUvarint(head, uint64(lineBytes))
	head = binary.AppendUvarint(head, uint64(len(names)))
	for _, n := range names {
		head = appendString(head, n)
	}
	filter = make([]byte, 0, 8*len(words))
	for _, w := range words {
		filter = binary.LittleEndian.AppendUint64(filter, w)
	}
	head = binary.AppendUvarint(head, uint64(len(filter)))
	head = binary.AppendUvarint(head, uint64(len(data)))
	return head, filter, data
}

// setFilter attaches the chunk's filter value (version 2).
func (m *chunkMeta) setFilter(v []byte) error {
	if uint64(len(v)) != m.filterLen || len(v)%8 != 0 {
		return fmt.Errorf("chunk filter length %d, header says %d: %w", len(v), m.filterLen, ErrCorrupt)
	}
	m.filter = bloom{b: v}
	return nil
}

// decodeChunkMeta reads a chunk header; it aliases src.
func decodeChunkMeta(src []byte) (chunkMeta, error) {
	var m chunkMeta
	if len(src) == 0 || (src[0] != chunkVersion && src[0] != chunkVersionV1) {
		return m, fmt.Errorf("chunk version: %w", ErrCorrupt)
	}
	m.version = src[0]
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
	if m.version == chunkVersion {
		start := src
		cnt, rest, err := readUvarint(src)
		if err != nil || cnt > uint64(len(rest)) {
			return m, fmt.Errorf("chunk metadata names: %w", ErrCorrupt)
		}
		src = rest
		for range cnt {
			if _, src, err = readString(src); err != nil {
				return m, fmt.Errorf("chunk metadata names: %w", ErrCorrupt)
			}
		}
		m.names, m.namesKnown = start[:len(start)-len(src)], true
	}
	if m.version == chunkVersionV1 {
		if m.filter, src, err = decodeBloom(src); err != nil {
			return m, err
		}
	} else if m.filterLen, src, err = readUvarint(src); err != nil || m.filterLen > 8*maxBloomWords {
		return m, fmt.Errorf("chunk filter length: %w", ErrCorrupt)
	}
	bl, src, err := readUvarint(src)
	if err != nil {
		return m, fmt.Errorf("chunk data length: %w", ErrCorrupt)
	}
	if m.version == chunkVersionV1 {
		if bl != uint64(len(src)) {
			return m, fmt.Errorf("chunk body length: %w", ErrCorrupt)
		}
		m.body = src
		return m, nil
	}
	if len(src) != 0 {
		return m, fmt.Errorf("chunk header: %d trailing bytes: %w", len(src), ErrCorrupt)
	}
	m.dataLen = bl
	return m, nil
}

// hasName reports whether an entry of the chunk may carry metadata name
// (always true when the chunk does not record its names).
func (m chunkMeta) hasName(name string) bool {
	if !m.namesKnown {
		return true
	}
	_, src, _ := readUvarint(m.names)
	for len(src) > 0 {
		var n string
		var err error
		if n, src, err = readString(src); err != nil {
			return true
		}
		if n == name {
			return true
		}
	}
	return false
}

// eachName calls f with each recorded metadata name.
func (m chunkMeta) eachName(f func(string)) {
	_, src, _ := readUvarint(m.names)
	for len(src) > 0 {
		n, rest, err := readString(src)
		if err != nil {
			return
		}
		f(n)
		src = rest
	}
}

// splitData returns the timestamp column and the compressed rest of a
// chunk: from data (version 2) or from the inline body, decompressed
// (version 1; then rest is the decompressed remainder and compressed false).
func (m chunkMeta) splitData(data []byte) (tcol, rest []byte, compressed bool, err error) {
	if m.version == chunkVersionV1 {
		_, dec := zstdCodecs()
		body, err := dec.DecodeAll(m.body, nil)
		if err != nil {
			return nil, nil, false, fmt.Errorf("decompress chunk: %w: %w", ErrCorrupt, err)
		}
		return body, nil, false, nil
	}
	if uint64(len(data)) != m.dataLen {
		return nil, nil, false, fmt.Errorf("chunk data length %d, header says %d: %w", len(data), m.dataLen, ErrCorrupt)
	}
	tl, data, err := readUvarint(data)
	if err != nil || tl > uint64(len(data)) {
		return nil, nil, false, fmt.Errorf("chunk timestamps length: %w", ErrCorrupt)
	}
	return data[:tl], data[tl:], true, nil
}

// decodeChunkTimestamps appends the chunk's timestamps to dst.
func decodeChunkTimestamps(dst []int64, m chunkMeta, data []byte) ([]int64, error) {
	tcol, _, _, err := m.splitData(data)
	if err != nil {
		return dst, err
	}
	out, _, err := chunkenc.DecodeTimestamps(dst, tcol)
	if err != nil || len(out)-len(dst) != m.n {
		return dst, fmt.Errorf("chunk timestamps: %w", ErrCorrupt)
	}
	return out, nil
}

// decodeChunkEntries decodes the chunk's entries from its data value (nil
// for version 1) and appends them to dst. Lines and metadata are fresh
// strings the caller may keep.
func decodeChunkEntries(dst []logentry.Entry, m chunkMeta, data []byte) ([]logentry.Entry, error) {
	tcol, rest, compressed, err := m.splitData(data)
	if err != nil {
		return dst, err
	}
	ts, body, err := chunkenc.DecodeTimestamps(nil, tcol)
	if err != nil || len(ts) != m.n {
		return dst, fmt.Errorf("chunk timestamps: %w", ErrCorrupt)
	}
	if compressed {
		if len(body) != 0 {
			return dst, fmt.Errorf("chunk timestamps: trailing bytes: %w", ErrCorrupt)
		}
		_, dec := zstdCodecs()
		// Lengths, lines and (usually small) metadata: one allocation.
		size := min(m.lineBytes+uint64(24*m.n), maxChunkBody)
		if body, err = dec.DecodeAll(rest, make([]byte, 0, size)); err != nil {
			return dst, fmt.Errorf("decompress chunk: %w: %w", ErrCorrupt, err)
		}
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
	// The lines alias the decompressed body, which nothing else holds or
	// writes (version 1: a fresh copy, as the body holds the timestamps).
	var lines string
	if compressed && total > 0 {
		lines = unsafe.String(&body[0], total)
	} else {
		lines = string(body[:total])
	}
	body = body[total:]
	dst = slices.Grow(dst, m.n)
	b := labels.NewScratchBuilder(4)
	var prev labels.Labels
	var prevEnc []byte
	off := uint64(0)
	for i := range m.n {
		e := logentry.Entry{Timestamp: ts[i], Line: lines[off : off+lens[i]]}
		off += lens[i]
		// Consecutive entries often carry the same metadata: share it.
		start := body
		if e.Metadata, body, err = decodeLabelsSame(&b, body, prevEnc, prev); err != nil {
			return dst, err
		}
		prevEnc, prev = start[:len(start)-len(body)], e.Metadata
		dst = append(dst, e)
	}
	if len(body) != 0 {
		return dst, fmt.Errorf("chunk: %d trailing bytes: %w", len(body), ErrCorrupt)
	}
	return dst, nil
}

// decodeLabelsSame is decodeLabels, returning prev without decoding when
// src starts with prevEnc (prev's encoding).
func decodeLabelsSame(b *labels.ScratchBuilder, src, prevEnc []byte, prev labels.Labels) (labels.Labels, []byte, error) {
	if len(prevEnc) > 0 && len(src) >= len(prevEnc) && string(src[:len(prevEnc)]) == string(prevEnc) {
		return prev, src[len(prevEnc):], nil
	}
	return decodeLabels(b, src)
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
		if !m.hasName(l.Name) || !m.filter.mayHaveMeta(l.Name, l.Value) {
			return false
		}
	}
	return true
}
