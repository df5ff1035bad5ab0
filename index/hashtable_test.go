package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// idsUnder returns the IDs t stores under h, sorted.
func idsUnder(t *idTable, h uint64) []ID {
	var out []ID
	if len(t.slots) == 0 {
		return out
	}
	mask := len(t.slots) - 1
	for i := t.home(h); t.slots[i].id != 0; i = (i + 1) & mask {
		if t.slots[i].h == h {
			out = append(out, t.slots[i].id)
		}
	}
	slices.Sort(out)
	return out
}

// TestIDTable runs random inserts and removals against a map model. Few
// distinct hashes, some equal modulo every table size and some near the
// table's end, make long runs that wrap around, equal hashes and
// backward shifts across the wrap.
func TestIDTable(t *testing.T) {
	tests := []struct {
		name   string
		hashes []uint64
	}{
		{"distinct", nil},
		{"colliding", []uint64{42}},
		{"same home", []uint64{0, 1 << 32, 2 << 32, 3 << 32}},
		{"wrapping", []uint64{15, 31, 63, 1<<40 | 15, 1<<41 | 14, 13, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			var tab idTable
			model := map[uint64][]ID{}
			next := ID(1)
			hashOf := func() uint64 {
				if tc.hashes == nil {
					return rng.Uint64()
				}
				return tc.hashes[rng.IntN(len(tc.hashes))]
			}
			var live []idSlot
			for step := 0; step < 3000; step++ {
				if len(live) > 0 && rng.IntN(5) < 2 {
					k := rng.IntN(len(live))
					s := live[k]
					live = append(live[:k], live[k+1:]...)
					if !tab.remove(s.h, s.id) {
						t.Fatalf("step %d: remove(%d, %d) found nothing", step, s.h, s.id)
					}
					model[s.h] = slices.DeleteFunc(model[s.h], func(id ID) bool { return id == s.id })
					if tab.remove(s.h, s.id) {
						t.Fatalf("step %d: second remove(%d, %d) found it again", step, s.h, s.id)
					}
				} else {
					h := hashOf()
					tab.insert(h, next)
					model[h] = append(model[h], next)
					live = append(live, idSlot{h, next})
					next++
				}
				if tab.n != len(live) {
					t.Fatalf("step %d: n = %d, want %d", step, tab.n, len(live))
				}
				if step%50 == 0 || tc.hashes != nil {
					for h, want := range model {
						want = slices.Sorted(slices.Values(want))
						if got := idsUnder(&tab, h); !slices.Equal(got, want) {
							t.Fatalf("step %d: ids under %d = %v, want %v", step, h, got, want)
						}
					}
				}
			}
			if got := idsUnder(&tab, 12345); len(got) != 0 && tc.hashes == nil {
				t.Fatalf("unknown hash has ids %v", got)
			}
		})
	}
}
