package tracestore

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/traceentry"
)

// blockVersion is the version byte of block headers.
const blockVersion byte = 1

// maxBlockKeys bounds the attribute names a block header lists for the tag
// APIs (a hostile sender could invent a new attribute name per span).
const maxBlockKeys = 1024

// blockMeta is a block's header: everything a search needs to decide which
// pages to read, kept in memory for every block. Immutable once built.
type blockMeta struct {
	part             int64
	seq              uint64
	minStart, maxEnd int64
	traces, spans    int
	streams          []index.ID // sorted, distinct
	ids              *bloom     // trace IDs
	values           *bloom     // indexed field-value pairs (valueKey)
	spanKeys         []string   // span attribute names, sorted (at most maxBlockKeys)
	resKeys          []string   // resource attribute names, sorted (at most maxBlockKeys)
	indexed          []string   // the span attributes its light sections index, sorted
	pages            []pageMeta
}

// pageMeta describes one page: a run of traces in trace-ID order.
type pageMeta struct {
	first, last      traceentry.TraceID
	minStart, maxEnd int64
	minDur, maxDur   int64
	statuses, kinds  uint8 // bit i set: a span with status (kind) i
	traces           int
	lightLen         int // compressed sizes
	heavyLen         int
}

// Value-filter keys: a span name, a string value of an indexed span
// attribute, a string value of a resource attribute.
const (
	valueName     byte = 'n'
	valueSpanAttr byte = 'a'
	valueResAttr  byte = 'r'
)

func valueKey(dst []byte, kind byte, key, value string) []byte {
	dst = append(dst[:0], kind)
	dst = append(dst, key...)
	dst = append(dst, 0)
	return append(dst, value...)
}

func (b *blockMeta) overlaps(start, end int64) bool {
	return b.maxEnd >= start && (end == 0 || b.minStart < end)
}

func (b *blockMeta) hasStream(id index.ID) bool {
	_, ok := slices.BinarySearch(b.streams, id)
	return ok
}

// pageOf returns the index of the page that may hold id, or -1.
func (b *blockMeta) pageOf(id traceentry.TraceID) int {
	i, _ := slices.BinarySearchFunc(b.pages, id, func(p pageMeta, id traceentry.TraceID) int {
		return compareIDs(p.last, id)
	})
	if i < len(b.pages) && compareIDs(b.pages[i].first, id) <= 0 {
		return i
	}
	return -1
}

func compareIDs(a, b traceentry.TraceID) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func (b *blockMeta) marshal() []byte {
	dst := []byte{blockVersion}
	dst = binary.AppendVarint(dst, b.minStart)
	dst = binary.AppendVarint(dst, b.maxEnd)
	dst = binary.AppendUvarint(dst, uint64(b.traces))
	dst = binary.AppendUvarint(dst, uint64(b.spans))
	dst = binary.AppendUvarint(dst, uint64(len(b.streams)))
	for _, id := range b.streams {
		dst = binary.AppendUvarint(dst, uint64(id))
	}
	dst = b.ids.appendTo(dst)
	dst = b.values.appendTo(dst)
	for _, list := range [][]string{b.spanKeys, b.resKeys, b.indexed} {
		dst = binary.AppendUvarint(dst, uint64(len(list)))
		for _, s := range list {
			dst = binary.AppendUvarint(dst, uint64(len(s)))
			dst = append(dst, s...)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(b.pages)))
	for _, p := range b.pages {
		dst = append(dst, p.first[:]...)
		dst = append(dst, p.last[:]...)
		dst = binary.AppendVarint(dst, p.minStart)
		dst = binary.AppendVarint(dst, p.maxEnd)
		dst = binary.AppendVarint(dst, p.minDur)
		dst = binary.AppendVarint(dst, p.maxDur)
		dst = append(dst, p.statuses, p.kinds)
		dst = binary.AppendUvarint(dst, uint64(p.traces))
		dst = binary.AppendUvarint(dst, uint64(p.lightLen))
		dst = binary.AppendUvarint(dst, uint64(p.heavyLen))
	}
	return dst
}

func unmarshalBlock(part int64, seq uint64, src []byte) (*blockMeta, error) {
	r := strReader{b: src}
	if v := r.byte1(); v != blockVersion {
		return nil, fmt.Errorf("block version %d: %w", v, ErrCorrupt)
	}
	b := &blockMeta{part: part, seq: seq}
	b.minStart = r.varint()
	b.maxEnd = r.varint()
	b.traces = int(r.uvarint())
	b.spans = int(r.uvarint())
	b.streams = make([]index.ID, r.count(1))
	for i := range b.streams {
		b.streams[i] = index.ID(r.uvarint())
	}
	b.ids = decodeBloom(&r)
	b.values = decodeBloom(&r)
	for _, list := range []*[]string{&b.spanKeys, &b.resKeys, &b.indexed} {
		*list = make([]string, r.count(1))
		for i := range *list {
			(*list)[i] = string(r.bytes(r.count(1)))
		}
	}
	b.pages = make([]pageMeta, r.count(40))
	for i := range b.pages {
		p := &b.pages[i]
		copy(p.first[:], r.bytes(16))
		copy(p.last[:], r.bytes(16))
		p.minStart = r.varint()
		p.maxEnd = r.varint()
		p.minDur = r.varint()
		p.maxDur = r.varint()
		p.statuses = r.byte1()
		p.kinds = r.byte1()
		p.traces = int(r.uvarint())
		p.lightLen = int(r.uvarint())
		p.heavyLen = int(r.uvarint())
	}
	if r.err != nil {
		return nil, fmt.Errorf("block %d/%d header: %w", part, seq, r.err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("block %d/%d header: trailing bytes: %w", part, seq, ErrCorrupt)
	}
	return b, nil
}
