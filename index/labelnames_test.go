package index

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func TestLabelNamesAndValues(t *testing.T) {
	ix, _, _ := testIndex(t, Options{PartitionDuration: time.Hour})
	mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "gpu_util", "pod", "p1", "gpu", "0"), 0)
	mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "gpu_util", "pod", "p2", "gpu", "1"), 0)
	mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "node_load", "host", "h1"), 2*hourMs)
	mustCreate(t, ix, KindLog, labels.FromStrings("pod", "p3", "stream", "stdout"), 0)
	pod := func(v string) *labels.Matcher { return mustMatcher(t, labels.MatchEqual, "pod", v) }

	names := []struct {
		name       string
		kind       Kind
		mint, maxt int64
		ms         []*labels.Matcher
		want       []string
	}{
		{"all metric names hour 0", KindMetric, 0, 0, nil, []string{"__name__", "gpu", "pod"}},
		{"any kind hour 0", KindAny, 0, 0, nil, []string{"__name__", "gpu", "pod", "stream"}},
		{"metric all hours", KindMetric, 0, 3 * hourMs, nil, []string{"__name__", "gpu", "host", "pod"}},
		{"logs", KindLog, 0, 0, nil, []string{"pod", "stream"}},
		{"with matcher", KindAny, 0, 3 * hourMs, []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "node_load")}, []string{"__name__", "host"}},
		{"no match", KindAny, 0, 0, []*labels.Matcher{pod("nope")}, []string{}},
		{"empty range", KindAny, 5 * hourMs, 6 * hourMs, nil, []string{}},
	}
	for _, tc := range names {
		t.Run("names/"+tc.name, func(t *testing.T) {
			got, err := ix.LabelNames(t.Context(), tc.kind, tc.mint, tc.maxt, tc.ms...)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("LabelNames = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	values := []struct {
		name  string
		kind  Kind
		label string
		ms    []*labels.Matcher
		want  []string
	}{
		{"pods any", KindAny, "pod", nil, []string{"p1", "p2", "p3"}},
		{"pods metric", KindMetric, "pod", nil, []string{"p1", "p2"}},
		{"gpu of p2", KindAny, "gpu", []*labels.Matcher{pod("p2")}, []string{"1"}},
		{"unknown label", KindAny, "nope", nil, []string{}},
		{"metric names", KindMetric, "__name__", nil, []string{"gpu_util"}},
	}
	for _, tc := range values {
		t.Run("values/"+tc.name, func(t *testing.T) {
			got, err := ix.LabelValues(t.Context(), tc.kind, tc.label, 0, hourMs-1, tc.ms...)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("LabelValues = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestLabelValuesManyValues exercises the path that reads values off the
// selected streams when they are far fewer than the label's values.
func TestLabelValuesManyValues(t *testing.T) {
	ix, _, _ := testIndex(t, DefaultOptions())
	for i := 0; i < 200; i++ {
		team := "a"
		if i%50 == 0 {
			team = "b"
		}
		mustCreate(t, ix, KindMetric, labels.FromStrings("team", team, "uid", string(rune('A'+i%26))+string(rune('a'+i/26))), 0)
	}
	got, err := ix.LabelValues(t.Context(), KindMetric, "uid", 0, 0, mustMatcher(t, labels.MatchEqual, "team", "b"))
	if err != nil {
		t.Fatal(err)
	}
	// i = 0, 50, 100, 150
	want := []string{"Aa", "Yb", "Wd", "Uf"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("LabelValues(uid | team=b) = %v, want %v", got, want)
	}
}
