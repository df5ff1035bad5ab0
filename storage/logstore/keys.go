package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/keyspace"
	"github.com/weftdb/weft/storage/logentry"
)

// Key layout (docs/format/logs.md). Every key starts with keyspaceLogs and a
// one-byte tag; integers are big-endian, signed ones with the sign bit
// flipped so that they sort numerically.
const (
	keyspaceLogs = keyspace.Logs

	tagStream byte = 'S' // S id → stream label set
	tagPart   byte = 'P' // P part id → empty: the stream has chunks or recent entries in part
	tagRecent byte = 'R' // R id seq → entries of one push, not yet sealed
	tagChunk  byte = 'C' // C part id minT seq → sealed chunk header (with the token filter)
	tagData   byte = 'D' // D part id minT seq → the chunk's data (timestamps, compressed lines)
	tagFilter byte = 'F' // F part id minT seq → the chunk's token filter
	tagSeq    byte = 'N' // N → high-water mark of seq numbers used by chunks
)

// ErrCorrupt is wrapped by every error about undecodable stored data.
var ErrCorrupt = errors.New("corrupt log store data")

func flip(v int64) uint64   { return uint64(v) ^ (1 << 63) }
func unflip(u uint64) int64 { return int64(u ^ (1 << 63)) }

func streamKey(id index.ID) []byte {
	k := []byte{keyspaceLogs, tagStream}
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func partKey(part int64, id index.ID) []byte {
	k := []byte{keyspaceLogs, tagPart}
	k = binary.BigEndian.AppendUint64(k, flip(part))
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func recentKey(id index.ID, seq uint64) []byte {
	k := []byte{keyspaceLogs, tagRecent}
	k = binary.BigEndian.AppendUint64(k, uint64(id))
	return binary.BigEndian.AppendUint64(k, seq)
}

func chunkPrefix(part int64, id index.ID) []byte {
	k := []byte{keyspaceLogs, tagChunk}
	k = binary.BigEndian.AppendUint64(k, flip(part))
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func chunkKey(part int64, id index.ID, minT int64, seq uint64) []byte {
	k := chunkPrefix(part, id)
	k = binary.BigEndian.AppendUint64(k, flip(minT))
	return binary.BigEndian.AppendUint64(k, seq)
}

// dataKey returns the data key of the chunk with header key k.
func dataKey(k []byte) []byte { return withTag(k, tagData) }

// filterKey returns the filter key of the chunk with header key k.
func filterKey(k []byte) []byte { return withTag(k, tagFilter) }

func withTag(k []byte, tag byte) []byte {
	d := slices.Clone(k)
	d[1] = tag
	return d
}

// tagBound returns the key range [lo, hi) of tag, optionally starting at a
// partition (for the partitioned tags).
func tagBound(tag byte) (lo, hi []byte) {
	return []byte{keyspaceLogs, tag}, []byte{keyspaceLogs, tag + 1}
}

func partBound(tag byte, part int64) []byte {
	k := []byte{keyspaceLogs, tag}
	return binary.BigEndian.AppendUint64(k, flip(part))
}

func seqKey() []byte { return []byte{keyspaceLogs, tagSeq} }

// appendLabels encodes ls as uvarint count, then length-prefixed names and
// values.
func appendLabels(dst []byte, ls labels.Labels) []byte {
	dst = binary.AppendUvarint(dst, uint64(ls.Len()))
	ls.Range(func(l labels.Label) {
		dst = appendString(dst, l.Name)
		dst = appendString(dst, l.Value)
	})
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decodeLabels decodes appendLabels' output with b and returns the rest.
func decodeLabels(b *labels.ScratchBuilder, src []byte) (labels.Labels, []byte, error) {
	n, src, err := readUvarint(src)
	if err != nil || n > uint64(len(src)) {
		return labels.EmptyLabels(), nil, fmt.Errorf("label count: %w", ErrCorrupt)
	}
	b.Reset()
	for range n {
		var name, value string
		if name, src, err = readString(src); err != nil {
			return labels.EmptyLabels(), nil, err
		}
		if value, src, err = readString(src); err != nil {
			return labels.EmptyLabels(), nil, err
		}
		b.Add(name, value)
	}
	b.Sort()
	return b.Labels(), src, nil
}

func readUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, fmt.Errorf("uvarint: %w", ErrCorrupt)
	}
	return v, src[n:], nil
}

func readString(src []byte) (string, []byte, error) {
	n, src, err := readUvarint(src)
	if err != nil || n > uint64(len(src)) {
		return "", nil, fmt.Errorf("string: %w", ErrCorrupt)
	}
	return string(src[:n]), src[n:], nil
}

// appendEntries encodes the entries of one push (a recent record): uvarint
// count, then per entry varint timestamp, length-prefixed line and the
// metadata labels.
func appendEntries(dst []byte, es []logentry.Entry) []byte {
	dst = slices.Grow(dst, entriesSize(es))
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	for _, e := range es {
		dst = binary.AppendVarint(dst, e.Timestamp)
		dst = appendString(dst, e.Line)
		dst = appendLabels(dst, e.Metadata)
	}
	return dst
}

// entriesSize is the length of appendEntries' output.
func entriesSize(es []logentry.Entry) int {
	n := uvarintLen(uint64(len(es)))
	for _, e := range es {
		n += varintLen(e.Timestamp) + uvarintLen(uint64(len(e.Line))) + len(e.Line) + uvarintLen(uint64(e.Metadata.Len()))
		e.Metadata.Range(func(l labels.Label) {
			n += uvarintLen(uint64(len(l.Name))) + len(l.Name) + uvarintLen(uint64(len(l.Value))) + len(l.Value)
		})
	}
	return n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

func decodeEntries(dst []logentry.Entry, src []byte) ([]logentry.Entry, error) {
	n, src, err := readUvarint(src)
	if err != nil || n > uint64(len(src)) {
		return dst, fmt.Errorf("entry count: %w", ErrCorrupt)
	}
	b := labels.NewScratchBuilder(4)
	for range n {
		var e logentry.Entry
		ts, k := binary.Varint(src)
		if k <= 0 {
			return dst, fmt.Errorf("entry timestamp: %w", ErrCorrupt)
		}
		e.Timestamp, src = ts, src[k:]
		if e.Line, src, err = readString(src); err != nil {
			return dst, err
		}
		if e.Metadata, src, err = decodeLabels(&b, src); err != nil {
			return dst, err
		}
		dst = append(dst, e)
	}
	if len(src) != 0 {
		return dst, fmt.Errorf("%d trailing bytes: %w", len(src), ErrCorrupt)
	}
	return dst, nil
}

// entrySize is what an entry counts against Options.SealBytes.
func entrySize(e logentry.Entry) int {
	n := len(e.Line) + 8
	e.Metadata.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) })
	return n
}
