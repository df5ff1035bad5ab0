package index

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

// FuzzIndexKey round-trips every key type built from fuzzed parts and feeds
// the raw input to the decoder, which must never panic.
func FuzzIndexKey(f *testing.F) {
	f.Add(int64(0), uint8(1), "__name__", "up", uint64(1), []byte{0x01, 's'})
	f.Add(int64(-5), uint8(3), "", "", uint64(0), []byte{0x01, 'p', 0, 0, 0, 0, 0, 0, 0, 0, 'v', 1, 0xff})
	f.Add(int64(1<<40), uint8(2), "a\x00b", "c\x00", uint64(1<<63), []byte{0x01, 'a'})
	f.Fuzz(func(t *testing.T, part int64, kind uint8, name, value string, id uint64, raw []byte) {
		_, _ = decodeKey(raw) // must not panic

		k := Kind(kind%3 + 1)
		got, err := decodeKey(appendPairKey(nil, part, k, name, value))
		if err != nil || got.Type != keyPair || got.Part != part || got.Kind != k || string(got.Name) != name || string(got.Value) != value {
			t.Fatalf("pair key round trip: %+v, %v", got, err)
		}
		if !bytes.HasPrefix(appendPairKey(nil, part, k, name, value), appendPairNamePrefix(nil, part, k, name)) {
			t.Fatal("pair key does not start with its name prefix")
		}
		got, err = decodeKey(appendKindKey(nil, part, k))
		if err != nil || got.Type != keyKind || got.Part != part || got.Kind != k {
			t.Fatalf("kind key round trip: %+v, %v", got, err)
		}
		got, err = decodeKey(appendStreamKey(nil, ID(id)))
		if err != nil || got.Type != keyStream || got.ID != ID(id) {
			t.Fatalf("stream key round trip: %+v, %v", got, err)
		}
		got, err = decodeKey(appendStreamBucketKey(nil, id))
		if err != nil || got.Type != keyStreamBucket || got.Bucket != id {
			t.Fatalf("stream bucket key round trip: %+v, %v", got, err)
		}
		// Partition order is numeric order.
		a, b := appendPartPrefix(nil, part), appendPartPrefix(nil, part+1)
		if part != 1<<63-1 && bytes.Compare(a, b) >= 0 {
			t.Fatalf("partition %d does not sort before %d", part, part+1)
		}
	})
}

// FuzzStreamValue round-trips on-disk stream records and decodes raw input.
func FuzzStreamValue(f *testing.F) {
	f.Add(uint8(1), "a\xffb\xffc\xffd", []byte{1, 1, 1, 'a', 1, 'b'})
	f.Add(uint8(2), "", []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, joined string, raw []byte) {
		_, _ = decodeStreamValue(raw, func(_, _ []byte) {})
		_, _, _ = decodeBitmapEdit(raw)

		parts := strings.Split(joined, "\xff")
		if len(parts)%2 == 1 {
			parts = parts[:len(parts)-1]
		}
		var names, values []string
		for i := 0; i < len(parts); i += 2 {
			names, values = append(names, parts[i]), append(values, parts[i+1])
		}
		k := Kind(kind%3 + 1)
		enc := appendStreamValue(nil, k, names, values)
		var gotN, gotV []string
		gotK, err := decodeStreamValue(enc, func(n, v []byte) { gotN, gotV = append(gotN, string(n)), append(gotV, string(v)) })
		if len(names) == 0 {
			// A record always has a count; zero labels decode fine.
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		if err != nil || gotK != k || !slices.Equal(gotN, names) || !slices.Equal(gotV, values) {
			t.Fatalf("stream value round trip: %v %v %v %v", gotK, gotN, gotV, err)
		}
	})
}

// FuzzLabelSetEncoding round-trips the compact in-memory label set through a
// symbol table and feeds raw input to its decoders, which must never panic.
func FuzzLabelSetEncoding(f *testing.F) {
	f.Add("__name__\xffup\xffjob\xffa", []byte{2, 0, 1, 2, 3})
	f.Add("", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, joined string, raw []byte) {
		syms := newSymbols()
		syms.internPair("x", "x")
		var b labels.ScratchBuilder
		_, _ = decodeLabelRefs(nil, string(raw))
		_, _ = syms.buildLabels(string(raw), &b)
		_ = syms.equalLabels(string(raw), labels.FromStrings("x", "x"), "")
		_, _ = labelValueRef(string(raw), 0)

		parts := strings.Split(joined, "\xff")
		if len(parts)%2 == 1 {
			parts = parts[:len(parts)-1]
		}
		ls := labels.FromStrings(parts...) // sorts; duplicates are kept as given
		refs := syms.internLabels(ls, nil)
		enc := string(appendLabelRefs(nil, refs))
		got, err := decodeLabelRefs(nil, enc)
		if err != nil || !slices.Equal(got, refs) {
			t.Fatalf("refs round trip: %v != %v (%v)", got, refs, err)
		}
		back, err := syms.buildLabels(enc, &b)
		if err != nil || !labels.Equal(back, ls) {
			t.Fatalf("labels round trip: %s != %s (%v)", back, ls, err)
		}
		if !syms.equalLabels(enc, ls, "") {
			t.Fatalf("equalLabels(%s) = false for its own encoding", ls)
		}
	})
}

// FuzzBitmapEdit decodes mutated postings values (seeded with real ones):
// never a panic or an unbounded allocation, and what decodes re-encodes to a
// value that decodes to the same sets.
func FuzzBitmapEdit(f *testing.F) {
	for _, seed := range [][2][]uint64{
		{nil, {1, 2, 3}},
		{{5}, {1 << 40, 1<<40 + 1}},
		{{1, 2}, nil},
	} {
		b, err := appendBitmapEdit(nil, roaring64.BitmapOf(seed[0]...), roaring64.BitmapOf(seed[1]...))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, a, err := decodeBitmapEdit(raw)
		if err != nil {
			return
		}
		b, err := appendBitmapEdit(nil, r, a)
		if err != nil {
			t.Fatal(err)
		}
		r2, a2, err := decodeBitmapEdit(b)
		if err != nil || !r.Equals(r2) || !a.Equals(a2) {
			t.Fatalf("re-encoded edit differs: %v", err)
		}
	})
}
