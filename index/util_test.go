package index

import "github.com/RoaringBitmap/roaring/v2/roaring64"

func bitmapOf(ids ...ID) *roaring64.Bitmap {
	bm := roaring64.New()
	for _, id := range ids {
		bm.Add(uint64(id))
	}
	return bm
}
