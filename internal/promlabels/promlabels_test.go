//go:build !slicelabels && !dedupelabels

package promlabels

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestFromEncodedMatchesFromStrings(t *testing.T) {
	for _, pairs := range [][]string{
		{"__name__", "up"},
		{"__name__", "DCGM_FI_DEV_GPU_UTIL", "gpu", "0", "UUID", "GPU-1", "x", strings.Repeat("v", 254)},
		{"__name__", "m", "a", strings.Repeat("z", 255), "b", strings.Repeat("y", 70000)},
		{"__name__", "température", "lieu", "Zürich ☃"},
	} {
		want := labels.FromStrings(pairs...)
		var buf []byte
		want.Range(func(l labels.Label) {
			buf = AppendString(buf, l.Name)
			buf = AppendString(buf, l.Value)
		})
		got, ok := FromEncoded(string(buf))
		if !ok {
			t.Fatal("FromEncoded refused in the stringlabels build")
		}
		if labels.Compare(got, want) != 0 || got.String() != want.String() || got.Hash() != want.Hash() || got.Len() != want.Len() {
			t.Fatalf("got %s, want %s", got, want)
		}
		want.Range(func(l labels.Label) {
			if got.Get(l.Name) != l.Value {
				t.Fatalf("label %s: got %d bytes, want %d", l.Name, len(got.Get(l.Name)), len(l.Value))
			}
		})
	}
}
