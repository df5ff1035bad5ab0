package index

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPostMap runs random sets and deletions against a Go map model, with
// refs drawn from one block, a few blocks and a wide range, so the map goes
// from none to one block (no block map), to many and back.
func TestPostMap(t *testing.T) {
	tests := []struct {
		name string
		ref  func(rng *rand.Rand) uint32
	}{
		{"one block", func(rng *rand.Rand) uint32 { return 64 + rng.Uint32N(64) }},
		{"few blocks", func(rng *rand.Rand) uint32 { return rng.Uint32N(200) }},
		{"wide", func(rng *rand.Rand) uint32 { return rng.Uint32() }},
		{"sequential", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			var m postMap
			model := map[uint32]postList{}
			next := uint32(0)
			for step := 0; step < 4000; step++ {
				var ref uint32
				if tc.ref == nil {
					ref = next
					next++
				} else {
					ref = tc.ref(rng)
				}
				if rng.IntN(3) == 0 && len(model) > 0 {
					// Delete a present ref (or, a quarter of the time, the drawn one).
					if rng.IntN(4) != 0 {
						ks := slices.Sorted(maps.Keys(model))
						ref = ks[rng.IntN(len(ks))]
					}
					m.del(ref)
					delete(model, ref)
				} else {
					pl := postList{one: uint64(step)}
					m.set(ref, pl)
					model[ref] = pl
				}
				if m.len() != len(model) {
					t.Fatalf("step %d: len = %d, want %d", step, m.len(), len(model))
				}
				if m.blocks != nil && len(m.blocks) < 2 {
					t.Fatalf("step %d: block map with %d blocks", step, len(m.blocks))
				}
				if step%100 == 0 || step < 200 {
					checkPostMap(t, step, &m, model)
				}
			}
			checkPostMap(t, -1, &m, model)
			// filter: drop odd refs, rewrite the rest.
			m.filter(func(ref uint32, pl postList) (postList, bool) {
				return postList{one: pl.one + 1}, ref%2 == 0
			})
			for ref, pl := range model {
				if ref%2 == 1 {
					delete(model, ref)
				} else {
					model[ref] = postList{one: pl.one + 1}
				}
			}
			checkPostMap(t, -2, &m, model)
		})
	}
}

func checkPostMap(t *testing.T, step int, m *postMap, model map[uint32]postList) {
	t.Helper()
	for ref, want := range model {
		if got, ok := m.get(ref); !ok || got != want {
			t.Fatalf("step %d: get(%d) = %v, %v; want %v", step, ref, got, ok, want)
		}
	}
	got := map[uint32]postList{}
	for ref, pl := range m.all() {
		if _, dup := got[ref]; dup {
			t.Fatalf("step %d: all yields %d twice", step, ref)
		}
		got[ref] = pl
	}
	if !maps.Equal(got, model) {
		t.Fatalf("step %d: all yields %d refs, want %d", step, len(got), len(model))
	}
	for _, ref := range []uint32{1<<32 - 1, 1 << 31, 12345678} {
		if _, in := model[ref]; in {
			continue
		}
		if _, ok := m.get(ref); ok {
			t.Fatalf("step %d: get(%d) found an absent ref", step, ref)
		}
	}
}
