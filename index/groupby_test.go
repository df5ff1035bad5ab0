package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"
)

func TestGroupBy(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	var ids []uint64
	for _, ls := range []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "a", "team", "x"),
		labels.FromStrings("__name__", "up", "job", "b", "team", "x"),
		labels.FromStrings("__name__", "up", "job", "a"),
		labels.FromStrings("__name__", "up", "job", "a", "team", "y"),
		labels.FromStrings("__name__", "down", "job", "b", "team", "x"),
		labels.FromStrings("__name__", "down", "job", "c", "team", "y"),
	} {
		ids = append(ids, uint64(mustCreate(t, ix, KindMetric, ls, 1000)))
	}
	// The last stream is deleted: GroupBy leaves it out.
	if err := ix.Delete(context.Background(), roaring64.BitmapOf(ids[5])); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		by   []string
		want string
	}{
		{nil, `{}:[0 1 2 3 4]`},
		{[]string{"team"}, `{team="x"}:[0 1 4] {}:[2] {team="y"}:[3]`},
		{[]string{"team", "__name__"}, `{__name__="up", team="x"}:[0 1] {__name__="up"}:[2] {__name__="up", team="y"}:[3] {__name__="down", team="x"}:[4]`},
		{[]string{"__name__", "team", "team"}, `{__name__="up", team="x"}:[0 1] {__name__="up"}:[2] {__name__="up", team="y"}:[3] {__name__="down", team="x"}:[4]`},
		{[]string{"nope"}, `{}:[0 1 2 3 4]`},
		{[]string{"job", "nope"}, `{job="a"}:[0 2 3] {job="b"}:[1 4]`},
	} {
		t.Run(fmt.Sprint(tc.by), func(t *testing.T) {
			gs, err := ix.GroupBy(context.Background(), ids, tc.by)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for i, g := range gs {
				if i > 0 {
					got += " "
				}
				var pos []int
				for _, id := range g.IDs {
					for j, x := range ids {
						if x == id {
							pos = append(pos, j)
						}
					}
				}
				got += fmt.Sprintf("%s:%v", g.Labels, pos)
			}
			if got != tc.want {
				t.Errorf("GroupBy(%v)\n got %s\nwant %s", tc.by, got, tc.want)
			}
		})
	}
}
