package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
)

// MergerName is the stable on-disk name of the index's merge operator. Pebble
// refuses to open a database written with a different merger name.
const MergerName = "weft.index.v1"

// bitmapValueVersion is the first byte of every postings value and operand.
const bitmapValueVersion byte = 0x01

// A postings value or merge operand is an edit (R, A) of a set S:
// S' = (S \ R) ∪ A. A stored (fully merged) value has R = ∅, so its set is A.
// Layout: version byte, uvarint len(R), R, A; R and A in roaring64's portable
// serialization, an empty R written as length 0.
//
// Edits compose: applying (R1, A1) then (R2, A2) equals
// (R1 ∪ R2, (A1 \ R2) ∪ A2), so partial merges during compaction stay exact.

// appendBitmapEdit appends the encoding of the edit (remove, add) to dst.
// Either may be nil (empty). It converts runs of consecutive IDs in both to
// run containers first, which changes their layout, not their sets:
// streams are created in batches (a target's series, a run's GPUs), so most
// postings are a few runs of consecutive IDs, and a run container holds a
// run in 4 bytes where an array container spends 2 per ID.
func appendBitmapEdit(dst []byte, remove, add *roaring64.Bitmap) ([]byte, error) {
	dst = append(dst, bitmapValueVersion)
	if remove == nil || remove.IsEmpty() {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		remove.RunOptimize()
		rb, err := remove.ToBytes()
		if err != nil {
			return nil, fmt.Errorf("encode removed postings: %w", err)
		}
		dst = binary.AppendUvarint(dst, uint64(len(rb)))
		dst = append(dst, rb...)
	}
	if add == nil {
		add = roaring64.New()
	}
	add.RunOptimize()
	var buf bytes.Buffer
	if _, err := add.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode added postings: %w", err)
	}
	return append(dst, buf.Bytes()...), nil
}

// decodeBitmapEdit decodes an edit. It never panics; malformed input returns
// an error wrapping ErrCorrupt.
func decodeBitmapEdit(b []byte) (remove, add *roaring64.Bitmap, err error) {
	if len(b) < 2 || b[0] != bitmapValueVersion {
		return nil, nil, fmt.Errorf("decode postings value: version: %w", ErrCorrupt)
	}
	b = b[1:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, nil, fmt.Errorf("decode postings value: removed length: %w", ErrCorrupt)
	}
	b = b[w:]
	remove = roaring64.New()
	if n > 0 {
		if err := unmarshalBitmap(remove, b[:n]); err != nil {
			return nil, nil, fmt.Errorf("decode postings value: removed: %w", err)
		}
	}
	add = roaring64.New()
	if err := unmarshalBitmap(add, b[n:]); err != nil {
		return nil, nil, fmt.Errorf("decode postings value: added: %w", err)
	}
	return remove, add, nil
}

// decodeBitmapValue decodes a stored postings value: the set it holds.
func decodeBitmapValue(b []byte) (*roaring64.Bitmap, error) {
	_, add, err := decodeBitmapEdit(b)
	return add, err
}

// unmarshalBitmap reads exactly one serialized bitmap from b. roaring's
// decoder is not hardened against hostile input, so a panic inside it is
// turned into ErrCorrupt: decoders of on-disk bytes must never crash weft.
func unmarshalBitmap(bm *roaring64.Bitmap, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("roaring decoder panicked (%v): %w", r, ErrCorrupt)
		}
	}()
	// roaring64 allocates from the bucket count in the header before reading
	// the buckets; bound it by what the input can hold (a bucket is at least
	// a 4-byte key and an 8-byte 32-bit bitmap header).
	if len(b) < 8 {
		return fmt.Errorf("short bitmap: %w", ErrCorrupt)
	}
	if n := binary.LittleEndian.Uint64(b); n > uint64(len(b)-8)/12 {
		return fmt.Errorf("bitmap claims %d buckets in %d bytes: %w", n, len(b), ErrCorrupt)
	}
	r := bytes.NewReader(b)
	if _, err := bm.ReadFrom(r); err != nil {
		return fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d trailing bytes: %w", r.Len(), ErrCorrupt)
	}
	if err := bm.Validate(); err != nil {
		return fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return nil
}

var merger = &pebble.Merger{
	Name: MergerName,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		if !isPostingsKey(key) {
			// Keys of other keyspaces keep Pebble's default semantics
			// (concatenation), so storage may use Merge for its own keys.
			return pebble.DefaultMerger.Merge(key, value)
		}
		m := &postingsMerger{}
		if err := m.MergeNewer(value); err != nil {
			return nil, err
		}
		return m, nil
	},
}

// Merger returns the merge operator the shared Pebble database must be opened
// with (pebble.Options.Merger). For index postings keys it composes bitmap
// edits; for every other key it concatenates like pebble.DefaultMerger.
// Its Name, MergerName, is a stable on-disk identifier.
func Merger() *pebble.Merger { return merger }

// postingsMerger accumulates edits, oldest first.
type postingsMerger struct {
	ops [][]byte
}

func (m *postingsMerger) MergeNewer(value []byte) error {
	m.ops = append(m.ops, bytes.Clone(value))
	return nil
}

func (m *postingsMerger) MergeOlder(value []byte) error {
	m.ops = append([][]byte{bytes.Clone(value)}, m.ops...)
	return nil
}

func (m *postingsMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	remove, add := roaring64.New(), roaring64.New()
	for _, op := range m.ops {
		r, a, err := decodeBitmapEdit(op)
		if err != nil {
			return nil, nil, fmt.Errorf("merge postings: %w", err)
		}
		add.AndNot(r)
		add.Or(a)
		remove.Or(r)
	}
	if includesBase {
		remove = nil
	} else {
		remove.AndNot(add) // removing then re-adding is just adding
	}
	out, err := appendBitmapEdit(nil, remove, add)
	if err != nil {
		return nil, nil, fmt.Errorf("merge postings: %w", err)
	}
	return out, nil, nil
}
