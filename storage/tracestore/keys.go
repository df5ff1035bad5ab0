package tracestore

import (
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/keyspace"
)

// Key layout (docs/format/traces.md). Every key starts with keyspace.Traces
// and a one-byte tag; integers are big-endian, partitions with the sign bit
// flipped so that they sort numerically.
const (
	tagStream byte = 'S' // S id → stream label set
	tagPart   byte = 'P' // P part id → empty: the stream has spans in part
	tagRecent byte = 'R' // R seq → the spans of one push, not yet sealed
	tagBlock  byte = 'B' // B part seq → block header
	tagLight  byte = 'L' // L part seq page → light section (zstd)
	tagHeavy  byte = 'D' // D part seq page → heavy section (zstd)
	tagSeq    byte = 'N' // N → high-water mark of the sequence numbers of blocks
)

func flip(v int64) uint64   { return uint64(v) ^ (1 << 63) }
func unflip(u uint64) int64 { return int64(u ^ (1 << 63)) }

func streamKey(id index.ID) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyspace.Traces, tagStream}, uint64(id))
}

func partKey(part int64, id index.ID) []byte {
	k := binary.BigEndian.AppendUint64([]byte{keyspace.Traces, tagPart}, flip(part))
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func recentKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyspace.Traces, tagRecent}, seq)
}

func blockKey(tag byte, part int64, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{keyspace.Traces, tag}, flip(part))
	return binary.BigEndian.AppendUint64(k, seq)
}

func pageKey(tag byte, part int64, seq uint64, page int) []byte {
	return binary.BigEndian.AppendUint32(blockKey(tag, part, seq), uint32(page))
}

func seqKey() []byte { return []byte{keyspace.Traces, tagSeq} }

// tagBound returns the key range [lo, hi) of tag.
func tagBound(tag byte) (lo, hi []byte) {
	return []byte{keyspace.Traces, tag}, []byte{keyspace.Traces, tag + 1}
}

// partBound is the first key of tag in partition part.
func partBound(tag byte, part int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyspace.Traces, tag}, flip(part))
}

// appendLabels encodes ls as uvarint count, then length-prefixed names and
// values.
func appendLabels(dst []byte, ls labels.Labels) []byte {
	dst = binary.AppendUvarint(dst, uint64(ls.Len()))
	ls.Range(func(l labels.Label) {
		dst = binary.AppendUvarint(dst, uint64(len(l.Name)))
		dst = append(dst, l.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(l.Value)))
		dst = append(dst, l.Value...)
	})
	return dst
}

func decodeLabels(src []byte) (labels.Labels, error) {
	r := strReader{b: src}
	n := r.count(2)
	b := labels.NewScratchBuilder(n)
	for range n {
		name := string(r.bytes(r.count(1)))
		value := string(r.bytes(r.count(1)))
		b.Add(name, value)
	}
	if r.err != nil || len(r.b) != 0 {
		return labels.EmptyLabels(), fmt.Errorf("stream labels: %w", ErrCorrupt)
	}
	b.Sort()
	return b.Labels(), nil
}
