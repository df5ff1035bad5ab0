package index

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// TestValueTable inserts values under real and forced hashes (all equal,
// equal modulo every table size) across several growths and finds each
// one, and no value it does not hold, through the dictionary's pages.
func TestValueTable(t *testing.T) {
	seed := maphash.MakeSeed()
	tests := []struct {
		name string
		hash func(v string, i int) uint32
	}{
		{"maphash", func(v string, _ int) uint32 { return valueHash(seed, v) }},
		{"all colliding", func(string, int) uint32 { return 7 }},
		{"same home", func(_ string, i int) uint32 { return uint32(i%3) << 24 }},
		{"near the end", func(_ string, i int) uint32 { return ^uint32(i % 5) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3000
			var tab valueTable
			pages := []*[symPageSize]string{}
			for i := range n {
				v := fmt.Sprintf("value-%d", i)
				if int(uint32(i)>>symPageBits) >= len(pages) {
					pages = append(pages, new([symPageSize]string))
				}
				pages[i>>symPageBits][i&symPageMask] = v
				if _, ok := tab.find(tc.hash(v, i), v, pages); ok {
					t.Fatalf("%q found before its insert", v)
				}
				tab.insert(tc.hash(v, i), uint32(i))
				if tab.n != i+1 {
					t.Fatalf("n = %d after %d inserts", tab.n, i+1)
				}
				if i%97 == 0 || i == n-1 {
					for j := 0; j <= i; j++ {
						w := fmt.Sprintf("value-%d", j)
						if ref, ok := tab.find(tc.hash(w, j), w, pages); !ok || ref != uint32(j) {
							t.Fatalf("after %d inserts: find(%q) = %d, %v; want %d", i+1, w, ref, ok, j)
						}
					}
				}
			}
			if len(tab.slots)*valueTableMaxLoad < tab.n*8 {
				t.Fatalf("%d values in %d slots: above the maximum load", tab.n, len(tab.slots))
			}
			for _, v := range []string{"", "value-", "value-3000", "other"} {
				if ref, ok := tab.find(tc.hash(v, 1), v, pages); ok {
					t.Fatalf("find(%q) = %d, want absent", v, ref)
				}
			}
		})
	}
}

// TestSymbolsValueRefs interns many values of one name and checks that
// refs are dense in order of first appearance and resolve both ways.
func TestSymbolsValueRefs(t *testing.T) {
	s := newSymbols()
	const n = 5000
	for round := range 2 {
		for i := range n {
			v := fmt.Sprintf("pod-%d", i)
			nr, vr := s.internPair("pod", v)
			if nr != 0 || vr != uint32(i) {
				t.Fatalf("round %d: internPair(pod, %q) = %d, %d; want 0, %d", round, v, nr, vr, i)
			}
		}
	}
	for i := range n {
		v := fmt.Sprintf("pod-%d", i)
		if vr, ok := s.lookupValue(0, v); !ok || vr != uint32(i) {
			t.Fatalf("lookupValue(%q) = %d, %v; want %d", v, vr, ok, i)
		}
		if got, ok := s.value(0, uint32(i)); !ok || got != v {
			t.Fatalf("value(%d) = %q, %v; want %q", i, got, ok, v)
		}
	}
	if _, ok := s.lookupValue(0, "pod-x"); ok {
		t.Fatal("lookupValue found a value never interned")
	}
}
