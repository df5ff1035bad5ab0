package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The smoke tests run the harness at the tiny scale against a real target:
// replay over remote write 1.0 and 2.0, run the query suite, and check the
// answers against what the generator knows it sent. They are not timed.

// TestSmokeWeft builds cmd/weft and runs the harness against it. It fails
// (never skips) when weft does not build.
func TestSmokeWeft(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "weft")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/weftdb/weft/cmd/weft")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/weft: %v\n%s", err, out)
	}
	args := os.Getenv("WEFT_BENCH_WEFT_ARGS")
	if args == "" {
		args = DefaultWeftArgs
	}
	runSmoke(t, WeftSpec(bin, args))
}

// TestSmokePrometheus runs the same smoke test against the pinned Prometheus
// from $WEFT_PEER_BIN (`make peers`), which keeps the harness honest against
// the reference implementation.
func TestSmokePrometheus(t *testing.T) {
	dir := os.Getenv("WEFT_PEER_BIN")
	if dir == "" {
		t.Fatal("WEFT_PEER_BIN is not set; run the tests with `make test` (it installs the peers)")
	}
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("prometheus binary: %v; run `make peers`", err)
	}
	runSmoke(t, PrometheusSpec(bin))
}

func runSmoke(t *testing.T, spec TargetSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	o := tinyOptions(t)
	// Start 2m before a 5m boundary, so the 24h range query (5m steps,
	// aligned) has a point with minutes of data before it at the end of the
	// first segment, whatever the wall clock says.
	o.Start = time.Now().Add(-o.Duration - 2*time.Minute).Truncate(5 * time.Minute).Add(-2 * time.Minute)
	o.Segments = []Segment{{RW1, 0.5}, {RW2, 0.5}}
	o.SpikeSeries = 0
	w, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}

	p, err := Start(ctx, spec, t.TempDir(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	client := newClient(o.Workers)
	t.Cleanup(client.CloseIdleConnections)
	qc := &QueryClient{Client: client, Base: p.Base}

	for i, seg := range w.Segments {
		st := NewReplayer(client, p.Base+spec.WritePath, seg, o.Workers).Run(ctx, Limits{})
		if st.Rejections != 0 || st.AcceptedSamples != seg.Samples {
			t.Fatalf("%s: accepted %d of %d samples, %d rejections, last error %q", seg.Protocol, st.AcceptedSamples, seg.Samples, st.Rejections, st.LastError)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		checkExpectations(ctx, t, qc, seg, o.ScrapeInterval)
		if i == 0 {
			// The whole suite must answer after the first segment.
			for _, qr := range runSuite(ctx, qc, Suite(), seg.Expect.EvalTime, 1, 0) {
				if qr.Error != "" {
					t.Errorf("suite query %s: %s", qr.Name, qr.Error)
				} else if qr.answer == nil || len(qr.answer.Keys) == 0 {
					t.Errorf("suite query %s: empty answer", qr.Name)
				}
			}
		}
	}
	if !p.Stop(time.Minute) {
		t.Errorf("%s did not stop gracefully on SIGTERM", spec.Name)
	}
}

// checkExpectations compares a target's answers after seg with the
// generator's own accounting.
func checkExpectations(ctx context.Context, t *testing.T, qc *QueryClient, seg *SegmentData, iv time.Duration) {
	t.Helper()
	ex := seg.Expect
	scalar := func(expr string) float64 {
		t.Helper()
		r, err := qc.Do(ctx, Query{Name: expr, Kind: Instant, Expr: expr}, ex.EvalTime)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if len(r.Keys) != 1 || len(r.Points[r.Keys[0]]) != 1 {
			t.Fatalf("%s: %d series, want 1", expr, len(r.Keys))
		}
		return r.Points[r.Keys[0]][0][1]
	}
	list := func(q Query) int {
		t.Helper()
		r, err := qc.Do(ctx, q, ex.EvalTime)
		if err != nil {
			t.Fatalf("%s: %v", q.Name, err)
		}
		return len(r.Keys)
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		{"active GPU util series", scalar(`count(DCGM_FI_DEV_GPU_UTIL)`), float64(ex.ActiveGPUs)},
		{"active runs", scalar(`count(count by (run_id) (DCGM_FI_DEV_GPU_UTIL))`), float64(ex.ActiveRuns)},
		{"sum of FB used", scalar(`sum(DCGM_FI_DEV_FB_USED)`), ex.FBUsedSum},
		{"GPU util samples in the segment", func() float64 {
			var pr ProtocolResult
			if !verifySegment(ctx, qc, seg, iv, &pr) {
				t.Error(pr.LastError)
			}
			return float64(ex.UtilSamples)
		}(), float64(ex.UtilSamples)},
		{"GPU util series ever written", float64(list(Query{Name: "series", Kind: Series, Expr: `DCGM_FI_DEV_GPU_UTIL`, Range: 24 * time.Hour})), float64(ex.Created["DCGM_FI_DEV_GPU_UTIL"])},
		{"e2e bucket series", float64(list(Query{Name: "buckets", Kind: Series, Expr: `vllm:e2e_request_latency_seconds_bucket`, Range: 24 * time.Hour})), float64(ex.Created["vllm:e2e_request_latency_seconds_bucket"])},
		{"run ids", float64(list(Query{Name: "runs", Kind: LabelValues, Label: "run_id", Expr: `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`, Range: 24 * time.Hour})), float64(ex.Runs)},
	}
	for _, tc := range tests {
		t.Run(string(seg.Protocol)+"/"+tc.name, func(t *testing.T) {
			if !closeEnough(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
