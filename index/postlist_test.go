package index

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// TestPostList checks postList against a roaring64 bitmap fed the same
// operations, across the small-to-bitmap conversion.
func TestPostList(t *testing.T) {
	tests := []struct {
		name string
		ids  []uint64
	}{
		{"one", []uint64{7}},
		{"ascending to limit", []uint64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"past limit", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"out of order with duplicates", []uint64{9, 3, 3, 1 << 40, 5, 9, 0, 2, 8, 1, 6, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := emptyPostList()
			want := roaring64.New()
			check := func(step string) {
				t.Helper()
				if got := pl.bitmap(); !got.Equals(want) {
					t.Fatalf("%s: got %v, want %v", step, got.ToArray(), want.ToArray())
				}
				if pl.card() != want.GetCardinality() || pl.empty() != want.IsEmpty() {
					t.Fatalf("%s: card %d empty %v, want %d %v", step, pl.card(), pl.empty(), want.GetCardinality(), want.IsEmpty())
				}
				if ids := pl.appendIDs(nil); pl.big() == nil && (len(ids) > smallPostings || !slices.IsSorted(ids)) {
					t.Fatalf("%s: small list %v not sorted or too long", step, ids)
				}
			}
			for _, id := range tc.ids {
				if bm := pl.big(); bm != nil {
					bm.Add(id)
				} else if pl.empty() {
					pl = postList{one: id}
				} else {
					pl = pl.add(id)
				}
				want.Add(id)
				check("add")
			}
			probe := roaring64.BitmapOf(tc.ids[0], 1<<50)
			if !pl.intersects(probe) {
				t.Fatal("intersects: want true")
			}
			if pl.intersects(roaring64.BitmapOf(1 << 50)) {
				t.Fatal("intersects: want false")
			}
			keep := roaring64.BitmapOf(tc.ids[len(tc.ids)-1])
			kept := postListOf(pl.bitmap().Clone()).and(keep)
			if !kept.bitmap().Equals(keep) || kept.big() != nil {
				t.Fatalf("and: got %v, want small %v", kept.bitmap().ToArray(), keep.ToArray())
			}
			for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(tc.ids)) {
				pl = pl.remove(tc.ids[i])
				want.Remove(tc.ids[i])
				check("remove")
			}
		})
	}
}
