package index

import (
	"encoding/binary"
	"fmt"
)

// Keyspace is the first byte of every key the index owns in the shared Pebble
// database. The map of all keyspaces is storage/keyspace, which checks that
// this byte is the one it assigns to the index.
const Keyspace byte = 0x01

// Key layout (specified in docs/format/index.md). Every key starts with
// keyspaceIndex; the second byte says what the key holds.
const (
	// keyspaceIndex is the first byte of every key the index owns in the shared
	// Pebble database; other keyspaces belong to storage.
	keyspaceIndex = Keyspace

	tagAlloc        byte = 'a' // 0x01 'a'                         → next ID to allocate (8 bytes BE)
	tagStream       byte = 's' // 0x01 's' <id:8>                  → stream record (format of earlier versions: read, never written)
	tagStreamBucket byte = 'r' // 0x01 'r' <bucket:8>         → stream records of IDs bucket<<8 .. bucket<<8|255 (streamfrag.go)
	tagPart         byte = 'p' // 0x01 'p' <part:8> ...            → postings of one partition
	tagHour         byte = 'h' // 0x01 'h' <hour:8>                → first ID allocated in that unix hour (8 bytes BE; churn.go)

	subKind byte = 'k' // ... 'k' <kind:1>                               → bitmap of all streams of kind
	subPair byte = 'v' // ... 'v' <kind:1> <uvarint len(name)> name value → bitmap of streams with name=value
)

// keyType says which kind of index key a decoded key is.
type keyType uint8

const (
	keyInvalid keyType = iota
	keyAlloc
	keyStream
	keyStreamBucket
	keyKind
	keyPair
	keyHour
)

// indexKey is a decoded index key. Name and Value alias the decoded key.
type indexKey struct {
	Type   keyType
	ID     ID     // keyStream
	Bucket uint64 // keyStreamBucket
	Part   int64  // keyKind, keyPair; the hour of keyHour
	Kind   Kind   // keyKind, keyPair
	Name   []byte
	Value  []byte
}

// allocKey returns the key of the ID allocator's high-water mark.
func allocKey() []byte { return []byte{keyspaceIndex, tagAlloc} }

// appendStreamKey appends the registry key of id to dst.
func appendStreamKey(dst []byte, id ID) []byte {
	dst = append(dst, keyspaceIndex, tagStream)
	return binary.BigEndian.AppendUint64(dst, uint64(id))
}

// encodePart maps a signed partition number to an unsigned one whose
// big-endian bytes sort in numeric order.
func encodePart(p int64) uint64 { return uint64(p) ^ (1 << 63) }
func decodePart(u uint64) int64 { return int64(u ^ (1 << 63)) }

// appendPartPrefix appends the prefix shared by every key of partition p.
func appendPartPrefix(dst []byte, p int64) []byte {
	dst = append(dst, keyspaceIndex, tagPart)
	return binary.BigEndian.AppendUint64(dst, encodePart(p))
}

// appendKindKey appends the key of the all-streams bitmap of kind in partition p.
func appendKindKey(dst []byte, p int64, kind Kind) []byte {
	dst = appendPartPrefix(dst, p)
	return append(dst, subKind, byte(kind))
}

// appendKindPairPrefix appends the prefix of every pair key of (p, kind).
func appendKindPairPrefix(dst []byte, p int64, kind Kind) []byte {
	dst = appendPartPrefix(dst, p)
	return append(dst, subPair, byte(kind))
}

// appendPairNamePrefix appends the prefix of every pair key of (p, kind, name).
func appendPairNamePrefix(dst []byte, p int64, kind Kind, name string) []byte {
	dst = appendPartPrefix(dst, p)
	dst = append(dst, subPair, byte(kind))
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	return append(dst, name...)
}

// appendPairKey appends the postings key of name=value of kind in partition p.
func appendPairKey(dst []byte, p int64, kind Kind, name, value string) []byte {
	dst = appendPairNamePrefix(dst, p, kind, name)
	return append(dst, value...)
}

// partPrefixLen is the length of appendPartPrefix's output.
const partPrefixLen = 2 + 8

// decodeKey decodes any index key. It never panics; malformed keys return an error.
func decodeKey(key []byte) (indexKey, error) {
	var k indexKey
	if len(key) < 2 || key[0] != keyspaceIndex {
		return k, fmt.Errorf("decode index key: not in index keyspace: %w", ErrCorrupt)
	}
	switch key[1] {
	case tagAlloc:
		if len(key) != 2 {
			return k, fmt.Errorf("decode alloc key: trailing bytes: %w", ErrCorrupt)
		}
		k.Type = keyAlloc
		return k, nil
	case tagStream:
		if len(key) != 10 {
			return k, fmt.Errorf("decode stream key: length %d: %w", len(key), ErrCorrupt)
		}
		k.Type = keyStream
		k.ID = ID(binary.BigEndian.Uint64(key[2:]))
		return k, nil
	case tagStreamBucket:
		if len(key) != 10 {
			return k, fmt.Errorf("decode stream bucket key: length %d: %w", len(key), ErrCorrupt)
		}
		k.Type = keyStreamBucket
		k.Bucket = binary.BigEndian.Uint64(key[2:])
		return k, nil
	case tagHour:
		if len(key) != 10 {
			return k, fmt.Errorf("decode hour key: length %d: %w", len(key), ErrCorrupt)
		}
		k.Type = keyHour
		k.Part = decodePart(binary.BigEndian.Uint64(key[2:]))
		return k, nil
	case tagPart:
		if len(key) < partPrefixLen+2 {
			return k, fmt.Errorf("decode partition key: short: %w", ErrCorrupt)
		}
		k.Part = decodePart(binary.BigEndian.Uint64(key[2:]))
		rest := key[partPrefixLen:]
		k.Kind = Kind(rest[1])
		if !k.Kind.valid() {
			return k, fmt.Errorf("decode partition key: kind %d: %w", rest[1], ErrCorrupt)
		}
		switch rest[0] {
		case subKind:
			if len(rest) != 2 {
				return k, fmt.Errorf("decode kind key: trailing bytes: %w", ErrCorrupt)
			}
			k.Type = keyKind
			return k, nil
		case subPair:
			rest = rest[2:]
			n, w := binary.Uvarint(rest)
			if w <= 0 || n > uint64(len(rest)-w) {
				return k, fmt.Errorf("decode pair key: name length: %w", ErrCorrupt)
			}
			rest = rest[w:]
			k.Type = keyPair
			k.Name = rest[:n]
			k.Value = rest[n:]
			return k, nil
		}
		return k, fmt.Errorf("decode partition key: sub-tag %#x: %w", rest[0], ErrCorrupt)
	}
	return k, fmt.Errorf("decode index key: tag %#x: %w", key[1], ErrCorrupt)
}

// isPostingsKey reports whether key holds a bitmap (and so is merged by the
// index's merge operator).
func isPostingsKey(key []byte) bool {
	return len(key) >= partPrefixLen+2 && key[0] == keyspaceIndex && key[1] == tagPart
}

// appendStreamValue appends the on-disk stream record: kind, label count, then
// each label's name and value, each as uvarint length + bytes.
func appendStreamValue(dst []byte, kind Kind, names, values []string) []byte {
	dst = append(dst, byte(kind))
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for i := range names {
		dst = binary.AppendUvarint(dst, uint64(len(names[i])))
		dst = append(dst, names[i]...)
		dst = binary.AppendUvarint(dst, uint64(len(values[i])))
		dst = append(dst, values[i]...)
	}
	return dst
}

// decodeStreamValue decodes a stream record, calling add for every label in
// order. The byte slices passed to add alias b. It never panics.
func decodeStreamValue(b []byte, add func(name, value []byte)) (Kind, error) {
	if len(b) < 2 {
		return 0, fmt.Errorf("decode stream record: short: %w", ErrCorrupt)
	}
	kind := Kind(b[0])
	if !kind.valid() {
		return 0, fmt.Errorf("decode stream record: kind %d: %w", b[0], ErrCorrupt)
	}
	b = b[1:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return 0, fmt.Errorf("decode stream record: label count: %w", ErrCorrupt)
	}
	b = b[w:]
	for i := uint64(0); i < n; i++ {
		var name, value []byte
		var err error
		if name, b, err = readLenBytes(b); err != nil {
			return 0, fmt.Errorf("decode stream record: label %d name: %w", i, err)
		}
		if value, b, err = readLenBytes(b); err != nil {
			return 0, fmt.Errorf("decode stream record: label %d value: %w", i, err)
		}
		add(name, value)
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("decode stream record: %d trailing bytes: %w", len(b), ErrCorrupt)
	}
	return kind, nil
}

func readLenBytes(b []byte) (v, tail []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, ErrCorrupt
	}
	b = b[w:]
	return b[:n], b[n:], nil
}
