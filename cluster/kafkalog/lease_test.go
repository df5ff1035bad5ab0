package kafkalog

import (
	"slices"
	"testing"
	"time"
)

// TestLeaseSharesPartitions: the members of a lease group hold disjoint
// partitions that together are all of them; a member that leaves gives
// its partitions to the others, and one that joins takes some.
func TestLeaseSharesPartitions(t *testing.T) {
	c := newCluster(t)
	defer c.Close()
	o := testOpts(c)
	changed := make(chan struct{}, 1)
	newLease := func() *Lease {
		l, err := NewLease(o, "weft-test-lease", 6*time.Second, func([]int32) {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// await waits until every member holds some partitions and together
	// they hold each partition once.
	await := func(members ...*Lease) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			var all []int32
			empty := false
			for _, l := range members {
				h := l.Held()
				empty = empty || len(h) == 0
				all = append(all, h...)
			}
			slices.Sort(all)
			if !empty && slices.Equal(all, []int32{0, 1, 2, 3}) {
				return
			}
			select {
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				var got [][]int32
				for _, l := range members {
					got = append(got, l.Held())
				}
				t.Fatalf("holdings %v, want each of the %d partitions held once by members that all hold some", got, testPartitions)
			}
		}
	}
	a := newLease()
	await(a)
	b := newLease()
	await(a, b)
	a.Close()
	await(b)
	b.Close()
}
