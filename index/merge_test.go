package index

import (
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func edit(tb testing.TB, remove, add []uint64) []byte {
	tb.Helper()
	b, err := appendBitmapEdit(nil, roaring64.BitmapOf(remove...), roaring64.BitmapOf(add...))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestMergerComposition checks that merging operands in any grouping (as
// compactions do, with or without the base) gives the same set as applying
// them one by one.
func TestMergerComposition(t *testing.T) {
	key := appendPairKey(nil, 0, KindMetric, "a", "b")
	ops := [][]byte{
		edit(t, nil, []uint64{1, 2, 3}),
		edit(t, []uint64{2}, nil),
		edit(t, nil, []uint64{2, 9}),
		edit(t, []uint64{1, 9}, []uint64{7}),
	}
	want := []uint64{2, 3, 7}
	merge := func(ops [][]byte, includesBase bool) []byte {
		t.Helper()
		vm, err := Merger().Merge(key, ops[len(ops)-1])
		if err != nil {
			t.Fatal(err)
		}
		for i := len(ops) - 2; i >= 0; i-- {
			if err := vm.MergeOlder(ops[i]); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := vm.Finish(includesBase)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	tests := []struct {
		name  string
		split int // ops[:split] partially merged without base, then the rest
	}{{"all at once", 0}, {"split 1", 1}, {"split 2", 2}, {"split 3", 3}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var final []byte
			if tc.split == 0 {
				final = merge(ops, true)
			} else {
				partial := merge(ops[tc.split:], false) // newer operands, no base
				final = merge([][]byte{merge(ops[:tc.split], true), partial}, true)
			}
			bm, err := decodeBitmapValue(final)
			if err != nil {
				t.Fatal(err)
			}
			if got := bm.ToArray(); !slices.Equal(got, want) {
				t.Fatalf("merged set = %v, want %v", got, want)
			}
		})
	}
}

func TestMergerOtherKeysConcatenate(t *testing.T) {
	vm, err := Merger().Merge([]byte{0x02, 'x'}, []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.MergeOlder([]byte("a")); err != nil {
		t.Fatal(err)
	}
	out, _, err := vm.Finish(true)
	if err != nil || string(out) != "ab" {
		t.Fatalf("Finish = %q, %v; want \"ab\"", out, err)
	}
	if Merger().Name != MergerName {
		t.Fatalf("merger name %q", Merger().Name)
	}
}

func TestMergerRejectsCorruptOperand(t *testing.T) {
	vm, err := Merger().Merge(appendKindKey(nil, 0, KindLog), []byte{0x01, 0x05, 0xff})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := vm.Finish(true); err == nil {
		t.Fatal("corrupt operand merged without error")
	}
}
