package index

import (
	"context"
	"fmt"
	"slices"
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
			g, err := ix.GroupBy(context.Background(), roaring64.BitmapOf(ids[:5]...), 0, 2000, tc.by)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(g.IDs, ids[:5]) {
				t.Fatalf("IDs %v, want %v", g.IDs, ids[:5])
			}
			got := ""
			for gi, ls := range g.Groups {
				if gi > 0 {
					got += " "
				}
				var pos []int
				for j, x := range g.GroupOf {
					if int(x) == gi {
						pos = append(pos, j)
					}
				}
				got += fmt.Sprintf("%s:%v", ls, pos)
			}
			if got != tc.want {
				t.Errorf("GroupBy(%v)\n got %s\nwant %s", tc.by, got, tc.want)
			}
		})
	}
}

// TestGroupByPostings checks that grouping by postings, over two
// partitions and with deletions, gives what grouping by records gives, and
// that it is chosen for few-valued labels only.
func TestGroupByPostings(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	ctx := context.Background()
	sel := roaring64.New()
	for i := range 3000 {
		b := labels.NewScratchBuilder(3)
		b.Add(labels.MetricName, fmt.Sprintf("m%d", i%2))
		b.Add("pod", fmt.Sprint(i))
		if i%4 != 0 {
			b.Add("team", fmt.Sprintf("t%d", i%3))
		}
		// Two partitions (days) hold the streams, some both.
		id := mustCreate(t, ix, KindMetric, b.Labels(), int64(i%2)*dayMs+1000)
		if i%5 == 0 {
			mustCreate(t, ix, KindMetric, b.Labels(), 2*dayMs+1000)
		}
		sel.Add(uint64(id))
	}
	del := roaring64.BitmapOf(7, 8, 9, 2000)
	if err := ix.Delete(ctx, del); err != nil {
		t.Fatal(err)
	}
	sel.AndNot(del)
	dump := func(g Grouping) string {
		out := ""
		for i, id := range g.IDs {
			out += fmt.Sprintf("%d:%s ", id, g.Groups[g.GroupOf[i]])
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		postings bool
	}{{labels.MetricName, true}, {"team", true}, {"pod", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ref, _ := ix.syms.lookupName(tc.name)
			byPostings, ok, err := ix.groupByPostings(ctx, sel, 0, 3*dayMs, tc.name, ref)
			if err != nil || ok != tc.postings {
				t.Fatalf("groupByPostings: ok %v, err %v; want ok %v", ok, err, tc.postings)
			}
			byRecords, err := ix.groupByRecords(ctx, sel, []string{tc.name}, []uint32{ref})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ix.GroupBy(ctx, sel, 0, 3*dayMs, []string{tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if dump(got) != dump(byRecords) {
				t.Errorf("GroupBy differs from grouping by records:\n%s\nvs\n%s", dump(got), dump(byRecords))
			}
			if ok && dump(byPostings) != dump(byRecords) {
				t.Errorf("postings and records group differently")
			}
		})
	}
}
