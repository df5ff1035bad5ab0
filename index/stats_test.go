package index

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

func TestStats(t *testing.T) {
	ix, _, _ := testIndex(t, Options{PartitionDuration: time.Hour})
	a := mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "gpu_util", "gpu", "0", "pod", "p1"), 0)
	mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "gpu_util", "gpu", "1", "pod", "p1"), 0)
	mustCreate(t, ix, KindMetric, labels.FromStrings("__name__", "gpu_temp", "gpu", "0", "pod", "p1"), hourMs)
	mustCreate(t, ix, KindLog, labels.FromStrings("pod", "p1"), 0)
	ix.Touch(a, hourMs) // in both partitions: counted once

	st, err := ix.Stats(t.Context(), KindMetric, 0, 2*hourMs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumStreams != 3 {
		t.Errorf("NumStreams = %d, want 3", st.NumStreams)
	}
	if st.NumLabelPairs != 5 { // __name__ x2, gpu x2, pod x1
		t.Errorf("NumLabelPairs = %d, want 5", st.NumLabelPairs)
	}
	check := func(name string, got, want []Stat) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("SeriesCountByMetricName", st.SeriesCountByMetricName, []Stat{{"gpu_util", 2}, {"gpu_temp", 1}})
	check("LabelValueCountByLabelName", st.LabelValueCountByLabelName, []Stat{{"__name__", 2}, {"gpu", 2}})
	check("SeriesCountByLabelValuePair", st.SeriesCountByLabelValuePair, []Stat{{"pod=p1", 3}, {"__name__=gpu_util", 2}}) // ties by name
	// __name__: (1+8+1+8)*2 + (1+8+1+8)*1; pod: (1+3+1+2)*3; gpu: (1+3+1+1)*3.
	check("MemoryInBytesByLabelName", st.MemoryInBytesByLabelName, []Stat{{"__name__", 54}, {"pod", 21}})

	st, err = ix.Stats(t.Context(), KindAny, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumStreams != 3 { // hour 0: two metrics + one log
		t.Errorf("any kind hour 0: NumStreams = %d, want 3", st.NumStreams)
	}
	check("any kind pairs", st.SeriesCountByLabelValuePair, []Stat{
		{"pod=p1", 3}, {"__name__=gpu_util", 2}, {"gpu=0", 1}, {"gpu=1", 1},
	})
}
