//go:build cgo

package gpuagent

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// BenchmarkCollectRenderEncode measures one 8-GPU collection over the mock,
// rendered with workload context and encoded as exposition text and a remote
// write 2.0 request: the agent's per-interval CPU cost minus the driver's.
func BenchmarkCollectRenderEncode(b *testing.B) {
	n := newMockNode(b, "dgxh100")
	c := newTestCollector(b, n, nil)
	w := NewWorkloads(procRoot, NewRegistry(0, nil), nil, nil)
	r := &Renderer{Naming: NamingDCGM, Hostname: "node-1", Attr: w}
	ctx := context.Background()
	var series []Series
	var rw []byte
	b.ReportAllocs()
	for b.Loop() {
		snap := c.Collect(ctx)
		series = r.Render(snap)
		w.EndRound()
		if err := WriteText(io.Discard, series); err != nil {
			b.Fatal(err)
		}
		var err error
		if rw, err = EncodeRW2(series, snap.Time); err != nil {
			b.Fatal(err)
		}
	}
	var text bytes.Buffer
	WriteText(&text, series)
	b.ReportMetric(float64(len(series)), "series/op")
	b.ReportMetric(float64(len(rw)), "rw2_bytes/op")
	b.ReportMetric(float64(len(snappyEncode(rw))), "rw2_snappy_bytes/op")
	b.ReportMetric(float64(text.Len()), "text_bytes/op")
}
