package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// Stream records are stored in buckets of streamBucketSize consecutive IDs,
// one Pebble key per bucket (docs/format/index.md, "Stream buckets"). A
// bucket's value is a sequence of fragments, each appended with a Pebble
// Merge (the index merger concatenates keys outside the postings): a
// records fragment holds the streams one Persist created in the bucket,
// front-coded against each other; a deletions fragment lists streams that
// are gone. Streams of one target or run are created together and share
// most labels, so a record usually costs its ID delta, one byte per shared
// label and the one or two values that differ: about 40 bytes instead of
// about 340 for a 12-label GPU series written out in full.
const (
	streamBucketBits = recPageBits // buckets die with the registry's record pages
	streamBucketSize = 1 << streamBucketBits

	fragRecords   byte = 1
	fragDeletions byte = 2

	// maxFragLabels bounds the label count of one record, so a corrupt count
	// cannot make the decoder allocate.
	maxFragLabels = 1 << 16
)

// streamBucket returns the bucket number of id.
func streamBucket(id ID) uint64 { return uint64(id) >> streamBucketBits }

// appendStreamBucketKey appends the key of bucket b to dst.
func appendStreamBucketKey(dst []byte, b uint64) []byte {
	dst = append(dst, keyspaceIndex, tagStreamBucket)
	return binary.BigEndian.AppendUint64(dst, b)
}

// fragLabel is one label of a record being encoded or decoded.
type fragLabel struct{ name, value string }

// recordFragWriter front-codes the records of one bucket into a records
// fragment. Records must be added in increasing ID order. The zero value is
// ready for use; reset starts a new fragment.
type recordFragWriter struct {
	payload []byte
	n       int
	lastID  ID
	prev    []fragLabel
	cur     []fragLabel
}

func (w *recordFragWriter) reset(bucket uint64) {
	w.payload, w.n, w.prev = w.payload[:0], 0, w.prev[:0]
	w.lastID = ID(bucket << streamBucketBits)
}

// add appends the record of stream id (kind, labels names[i]=values[i]).
func (w *recordFragWriter) add(id ID, kind Kind, names, values []string) {
	w.payload = binary.AppendUvarint(w.payload, uint64(id-w.lastID))
	w.payload = append(w.payload, byte(kind))
	w.payload = binary.AppendUvarint(w.payload, uint64(len(names)))
	w.cur = w.cur[:0]
	for i, name := range names {
		l := fragLabel{name, values[i]}
		w.cur = append(w.cur, l)
		w.payload = appendFragLabel(w.payload, w.prev, i, l)
	}
	w.prev, w.cur = w.cur, w.prev
	w.lastID = id
	w.n++
}

// appendFragLabel encodes label l, the i-th of its record, against the
// previous record's labels prev: tag 2k+1 repeats prev[k]; tag 2k+2 repeats
// prev[k]'s name with a new value; tag 0 spells out name and value. The
// candidate k is i, then its neighbours, since label sets of one source
// differ in a label or two.
func appendFragLabel(dst []byte, prev []fragLabel, i int, l fragLabel) []byte {
	for _, k := range [3]int{i, i - 1, i + 1} {
		if k < 0 || k >= len(prev) || prev[k].name != l.name {
			continue
		}
		if prev[k].value == l.value {
			return binary.AppendUvarint(dst, uint64(2*k+1))
		}
		dst = binary.AppendUvarint(dst, uint64(2*k+2))
		return appendLenString(dst, l.value)
	}
	dst = binary.AppendUvarint(dst, 0)
	dst = appendLenString(dst, l.name)
	return appendLenString(dst, l.value)
}

func appendLenString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendTo appends the framed fragment to dst; it must hold a record.
func (w *recordFragWriter) appendTo(dst []byte) []byte {
	return appendFrag(dst, fragRecords, w.n, w.payload)
}

// appendDeletionFrag appends a deletions fragment for ids (increasing, all
// in bucket) to dst.
func appendDeletionFrag(dst []byte, bucket uint64, ids []ID) []byte {
	var payload []byte
	last := ID(bucket << streamBucketBits)
	for _, id := range ids {
		payload = binary.AppendUvarint(payload, uint64(id-last))
		last = id
	}
	return appendFrag(dst, fragDeletions, len(ids), payload)
}

// appendFrag frames a fragment: type, uvarint payload length (the count
// included), uvarint count, entries.
func appendFrag(dst []byte, typ byte, n int, payload []byte) []byte {
	var cnt [binary.MaxVarintLen64]byte
	c := binary.PutUvarint(cnt[:], uint64(n))
	dst = append(dst, typ)
	dst = binary.AppendUvarint(dst, uint64(c+len(payload)))
	dst = append(dst, cnt[:c]...)
	return append(dst, payload...)
}

// batchDeleteRecords adds to b the removal of the stored records of ids,
// which the registry has forgotten: a bucket none of whose streams the
// registry still holds is deleted; otherwise a deletions fragment is merged
// into it (the dead records' bytes stay until the bucket's last stream
// goes, as the registry's record page does). The caller holds writeMu.
func (ix *Index) batchDeleteRecords(b *pebble.Batch, ids *roaring64.Bitmap) error {
	var key, val []byte
	var inBucket []ID
	bucket := uint64(math.MaxUint64)
	flush := func() error {
		if len(inBucket) == 0 {
			return nil
		}
		key = appendStreamBucketKey(key[:0], bucket)
		if ix.recs.pageEmpty(inBucket[0]) {
			if err := b.Delete(key, nil); err != nil {
				return fmt.Errorf("delete stream bucket %d: %w", bucket, err)
			}
			return nil
		}
		val = appendDeletionFrag(val[:0], bucket, inBucket)
		if err := b.Merge(key, val, nil); err != nil {
			return fmt.Errorf("delete streams in bucket %d: %w", bucket, err)
		}
		return nil
	}
	it := ids.Iterator()
	for it.HasNext() {
		id := ID(it.Next())
		if ix.legacyRecords {
			key = appendStreamKey(key[:0], id)
			if err := b.Delete(key, nil); err != nil {
				return fmt.Errorf("delete stream %d: %w", id, err)
			}
		}
		if sb := streamBucket(id); sb != bucket {
			if err := flush(); err != nil {
				return err
			}
			bucket, inBucket = sb, inBucket[:0]
		}
		inBucket = append(inBucket, id)
	}
	return flush()
}

// decodeStreamBucket decodes the value of bucket b in order: add is called
// for every record (labels in stored order; the slice is reused after add
// returns, its strings are not), del for every deleted ID. IDs must lie in
// the bucket and increase within a fragment. It never panics; malformed
// input returns an error wrapping ErrCorrupt.
func decodeStreamBucket(b uint64, v []byte, add func(id ID, kind Kind, ls []fragLabel), del func(id ID)) error {
	var prev, cur []fragLabel
	lo, hi := b<<streamBucketBits, b<<streamBucketBits|(streamBucketSize-1)
	for len(v) > 0 {
		typ := v[0]
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || n > uint64(len(v)-1-w) {
			return fmt.Errorf("decode stream bucket %d: fragment length: %w", b, ErrCorrupt)
		}
		frag := v[1+w : 1+w+int(n)]
		v = v[1+w+int(n):]
		count, w := binary.Uvarint(frag)
		if w <= 0 || count > uint64(len(frag)) {
			return fmt.Errorf("decode stream bucket %d: fragment count: %w", b, ErrCorrupt)
		}
		frag = frag[w:]
		last := lo
		prev = prev[:0]
		for i := uint64(0); i < count; i++ {
			d, w := binary.Uvarint(frag)
			if w <= 0 || d > hi-last || (i > 0 && d == 0) {
				return fmt.Errorf("decode stream bucket %d: id: %w", b, ErrCorrupt)
			}
			frag = frag[w:]
			last += d
			switch typ {
			case fragDeletions:
				del(ID(last))
				continue
			case fragRecords:
			default:
				return fmt.Errorf("decode stream bucket %d: fragment type %d: %w", b, typ, ErrCorrupt)
			}
			var err error
			var kind Kind
			if kind, cur, frag, err = decodeFragRecord(frag, prev, cur[:0]); err != nil {
				return fmt.Errorf("decode stream bucket %d: stream %d: %w", b, last, err)
			}
			add(ID(last), kind, cur)
			prev, cur = cur, prev
		}
		if len(frag) != 0 {
			return fmt.Errorf("decode stream bucket %d: %d trailing bytes in fragment: %w", b, len(frag), ErrCorrupt)
		}
	}
	return nil
}

// decodeFragRecord decodes one front-coded record (after its ID) against
// prev into cur, returning the rest of b.
func decodeFragRecord(b []byte, prev, cur []fragLabel) (Kind, []fragLabel, []byte, error) {
	if len(b) == 0 || !Kind(b[0]).valid() {
		return 0, cur, nil, fmt.Errorf("kind: %w", ErrCorrupt)
	}
	kind := Kind(b[0])
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > maxFragLabels || n > uint64(len(b)) {
		return 0, cur, nil, fmt.Errorf("label count: %w", ErrCorrupt)
	}
	b = b[1+w:]
	for j := uint64(0); j < n; j++ {
		tag, w := binary.Uvarint(b)
		if w <= 0 {
			return 0, cur, nil, fmt.Errorf("label %d tag: %w", j, ErrCorrupt)
		}
		b = b[w:]
		var l fragLabel
		var s []byte
		var err error
		switch {
		case tag == 0:
			if s, b, err = readLenBytes(b); err != nil {
				return 0, cur, nil, fmt.Errorf("label %d name: %w", j, err)
			}
			l.name = string(s)
		case (tag-1)/2 < uint64(len(prev)):
			l = prev[(tag-1)/2]
		default:
			return 0, cur, nil, fmt.Errorf("label %d refers to label %d of %d: %w", j, (tag-1)/2, len(prev), ErrCorrupt)
		}
		if tag == 0 || tag%2 == 0 {
			if s, b, err = readLenBytes(b); err != nil {
				return 0, cur, nil, fmt.Errorf("label %d value: %w", j, err)
			}
			l.value = string(s)
		}
		cur = append(cur, l)
	}
	return kind, cur, b, nil
}
