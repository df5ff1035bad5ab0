package gpuagent

import (
	"testing"
	"time"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

func TestDefaultInstance(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{":9400", "gpu-node-7:9400"},
		{"0.0.0.0:9400", "gpu-node-7:9400"},
		{"[::]:9401", "gpu-node-7:9401"},
		{"127.0.0.1:9400", "gpu-node-7:9400"},
		{"localhost:9400", "gpu-node-7:9400"},
		{"10.1.2.3:9400", "10.1.2.3:9400"},
		{"[fd00::7]:9400", "[fd00::7]:9400"},
		{"node7.cluster:9400", "node7.cluster:9400"},
		{"", "gpu-node-7"},
		{"no-port", "gpu-node-7"},
	} {
		if got := defaultInstance(tc.listen, "gpu-node-7"); got != tc.want {
			t.Errorf("defaultInstance(%q) = %q, want %q", tc.listen, got, tc.want)
		}
	}
}

// TestEncodeRW2Labels checks that extra labels are merged into each
// series' sorted labels and that a series' own label wins.
func TestEncodeRW2Labels(t *testing.T) {
	series := []Series{
		{Name: "a", Labels: []Label{{"Hostname", "h"}, {"gpu", "0"}, {"pod", "p"}}, Value: 1},
		{Name: "b", Labels: []Label{{"instance", "own:1"}, {"zz", "z"}}, Value: 2},
		{Name: "c", Value: 3},
	}
	data, err := EncodeRW2Labels(series, time.Unix(10, 0), []Label{{"instance", "node:9400"}})
	if err != nil {
		t.Fatal(err)
	}
	var req writev2.Request
	if err := req.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"__name__", "a", "Hostname", "h", "gpu", "0", "instance", "node:9400", "pod", "p"},
		{"__name__", "b", "instance", "own:1", "zz", "z"},
		{"__name__", "c", "instance", "node:9400"},
	}
	for i, ts := range req.Timeseries {
		var got []string
		for _, r := range ts.LabelsRefs {
			got = append(got, req.Symbols[r])
		}
		if len(got) != len(want[i]) {
			t.Fatalf("series %d labels %v, want %v", i, got, want[i])
		}
		for j := range got {
			if got[j] != want[i][j] {
				t.Fatalf("series %d labels %v, want %v", i, got, want[i])
			}
		}
	}
}
