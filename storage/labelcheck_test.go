package storage

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// unsortedLabels builds a label set in the given order, without sorting or
// deduplicating, as a careless caller's ScratchBuilder would.
func unsortedLabels(pairs ...string) labels.Labels {
	b := labels.NewScratchBuilder(len(pairs) / 2)
	for i := 0; i+1 < len(pairs); i += 2 {
		b.Add(pairs[i], pairs[i+1])
	}
	return b.Labels()
}

// TestCheckNewLabels runs checkNewLabels and its reference checkLabelsRange
// over valid and invalid label sets; they must agree, and the fast path must
// decide the plain ASCII cases itself.
func TestCheckNewLabels(t *testing.T) {
	long := strings.Repeat("v", 300) // a size of 255 or more takes four bytes
	mid := strings.Repeat("m", 200)  // a size byte of 128..254 is not ASCII
	tests := []struct {
		name     string
		ls       labels.Labels
		want     error // nil, errEmptyValue or ErrInvalidLabels
		wantFast bool  // the stringlabels fast path decides it
	}{
		{"valid", labels.FromStrings("__name__", "m", "job", "a"), nil, true},
		{"one label", labels.FromStrings("a", "b"), nil, true},
		{"empty value", labels.FromStrings("__name__", "m", "job", ""), errEmptyValue, true},
		{"empty value with empty name", unsortedLabels("", "", "a", "1"), errEmptyValue, true},
		{"only empty values", labels.FromStrings("a", "", "b", ""), errEmptyValue, true},
		{"long value", labels.FromStrings("__name__", "m", "v", long), nil, false},
		{"mid-size value", labels.FromStrings("__name__", "m", "v", mid), nil, false},
		{"utf8 value", labels.FromStrings("__name__", "m", "city", "Zürich"), nil, false},
		{"bad utf8 value", labels.FromStrings("__name__", "m", "a", "\xff"), ErrInvalidLabels, false},
		{"bad utf8 name", labels.FromStrings("__name__", "m", "\xffa", "1"), ErrInvalidLabels, false},
		{"bad utf8 beside an empty value", labels.FromStrings("a", "\xfe", "b", ""), ErrInvalidLabels, false},
		{"empty name", unsortedLabels("", "x", "a", "1"), ErrInvalidLabels, false},
		{"unsorted", unsortedLabels("b", "1", "a", "2"), ErrInvalidLabels, false},
		{"duplicate name", unsortedLabels("a", "1", "a", "2"), ErrInvalidLabels, false},
		{"duplicate name, one empty", unsortedLabels("a", "1", "a", ""), errEmptyValue, true},
		{"empty set", labels.EmptyLabels(), ErrInvalidLabels, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := checkNewLabels(tc.ls)
			ref := checkLabelsRange(tc.ls)
			if !sameCheck(got, tc.want) || !sameCheck(ref, tc.want) {
				t.Fatalf("checkNewLabels = %v, checkLabelsRange = %v; want %v", got, ref, tc.want)
			}
			if v := checkLabelsFast(tc.ls); tc.wantFast && v == labelsUnknown {
				t.Fatalf("fast path left %s undecided", tc.ls)
			}
		})
	}
}

// TestCheckNewLabelsRandom compares the fast path with the reference on
// random label sets mixing ASCII, multi-byte, invalid and long strings, in
// sorted and unsorted order.
func TestCheckNewLabelsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"", "a", "b", "job", "__name__", "é", "\xff", "zz", strings.Repeat("x", 130), strings.Repeat("y", 260)}
	for i := 0; i < 5000; i++ {
		n := 1 + rng.IntN(6)
		pairs := make([]string, 0, 2*n)
		for range n {
			pairs = append(pairs, pieces[rng.IntN(len(pieces))]+pieces[rng.IntN(len(pieces))], pieces[rng.IntN(len(pieces))])
		}
		var ls labels.Labels
		if rng.IntN(2) == 0 {
			ls = labels.FromStrings(pairs...)
		} else {
			ls = unsortedLabels(pairs...)
		}
		if got, ref := checkNewLabels(ls), checkLabelsRange(ls); !sameCheck(got, ref) {
			t.Fatalf("%q: checkNewLabels = %v, checkLabelsRange = %v", pairs, got, ref)
		}
	}
}

// sameCheck reports whether two check results are the same verdict.
func sameCheck(a, b error) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case errors.Is(a, ErrInvalidLabels):
		return errors.Is(b, ErrInvalidLabels)
	}
	return a == b
}

func BenchmarkCheckNewLabels(b *testing.B) {
	sets := make([]labels.Labels, 1000)
	for i := range sets {
		sets[i] = benchLabels(i)
	}
	for _, f := range []struct {
		name string
		fn   func(labels.Labels) error
	}{{"fast", checkNewLabels}, {"range", checkLabelsRange}} {
		b.Run(f.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := f.fn(sets[i%len(sets)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
