package ingest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/weftdb/weft/ingest/workload"
)

// TestWorkloadLabelsMatchAddCanonical: the label encoder merges the
// workload-context labels into a series as it encodes it; for random label
// sets (canonical names present or not, aliases of several ranks, empty
// values, names that sort before and after the canonical ones) every
// appended series has exactly the labels workload.Mapping.AddCanonical
// gives the plain label set, over remote write 1.0 and 2.0.
func TestWorkloadLabelsMatchAddCanonical(t *testing.T) {
	m := workload.MustDefault()
	o := DefaultOptions()
	o.Now = testDecoder().opts.Now
	o.Workload = m
	d := NewDecoder(o)
	// Names a series may carry: aliases of every rank, canonical names,
	// and others around them in sort order.
	names := []string{"Hostname", "UUID", "a", "container", "gpu", "gpu.uuid", "gpu_uuid", "host", "host.name",
		"hostname", "hw.id", "k8s_pod_name", "model", "modelName", "model_name", "pod", "rank", "run_id", "team", "z", "zz"}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		var v1 prompb.WriteRequest
		var v2 writev2.Request
		st := writev2.NewSymbolTable()
		var want []string
		for s := range 20 {
			b := labels.NewScratchBuilder(8)
			b.Add("__name__", "m")
			for _, n := range names {
				if rng.IntN(3) != 0 {
					continue
				}
				v := fmt.Sprintf("v%d", rng.IntN(4))
				if rng.IntN(8) == 0 {
					v = "" // an empty value is no label
				}
				b.Add(n, v)
			}
			b.Sort()
			raw := b.Labels()
			ts := prompb.TimeSeries{Samples: []prompb.Sample{{Value: float64(s), Timestamp: testNow.UnixMilli()}}}
			var plain labels.ScratchBuilder
			raw.Range(func(l labels.Label) {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
				if l.Value != "" {
					plain.Add(l.Name, l.Value)
				}
			})
			v1.Timeseries = append(v1.Timeseries, ts)
			v2.Timeseries = append(v2.Timeseries, writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(raw, nil), Samples: []writev2.Sample{{Value: float64(s), Timestamp: testNow.UnixMilli()}}})
			canon, _ := m.AddCanonical(plain.Labels())
			want = append(want, canon.String())
		}
		v2.Symbols = st.Symbols()
		for _, tc := range []struct {
			proto Protocol
			buf   []byte
		}{{ProtoV1, marshal(t, &v1)}, {ProtoV2, marshal(t, &v2)}} {
			calls, res, err := decodeAppend(t, d, tc.proto, tc.buf, false)
			if err != nil || res.RejectedTotal() > 0 {
				t.Fatalf("iteration %d, %v: err %v, %d rejected", iter, tc.proto, err, res.RejectedTotal())
			}
			got := make([]string, len(calls))
			for i, c := range calls {
				got[i] = c.ls.String()
			}
			if !slices.Equal(got, want) {
				for i := range want {
					if i >= len(got) || got[i] != want[i] {
						t.Fatalf("iteration %d, %v, series %d:\n got %v\nwant %s", iter, tc.proto, i, got[min(i, len(got)-1)], want[i])
					}
				}
				t.Fatalf("iteration %d, %v: %d series appended, want %d", iter, tc.proto, len(got), len(want))
			}
		}
	}
}
