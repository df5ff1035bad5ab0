package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSmokeCluster builds cmd/weft and cmd/weft-kfake and runs the harness
// against a scale-out cluster at the tiny scale: every sample accepted and
// found by the generator's expectations through the querier, the suite
// answering, and the bucket-only querier answering the suite as the
// querier over the ingesters does.
func TestSmokeCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, pkg := range []string{"cmd/weft", "cmd/weft-kfake"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "github.com/weftdb/weft/"+pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}
	o := tinyOptions(t)
	o.Start = time.Now().Add(-o.Duration - 2*time.Minute).Truncate(5 * time.Minute).Add(-2 * time.Minute)
	o.Segments = []Segment{{RW1, 0.5}, {RW2, 0.5}}
	o.SpikeSeries = 0
	w, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	ro := DefaultRunOptions()
	ro.WorkDir = t.TempDir()
	ro.QueryRepeats = 1
	ro.Step.MaxSteps = 1
	res := RunCluster(ctx, ClusterSpec{WeftBin: filepath.Join(dir, "weft"), KafkaBin: filepath.Join(dir, "weft-kfake"), Window: 10 * time.Second}, w, ro)
	if len(res) != 2 {
		t.Fatalf("%d results, want the cluster's and the bucket-only querier's: %+v", len(res), res)
	}
	for _, r := range res {
		if r.Error != "" {
			t.Fatalf("%s: %s", r.System, r.Error)
		}
		if len(r.Queries) == 0 {
			t.Fatalf("%s ran no queries", r.System)
		}
		for _, q := range r.Queries {
			if q.Error != "" {
				t.Errorf("%s: query %s: %s", r.System, q.Name, q.Error)
			}
		}
	}
	c := res[0]
	if c.SamplesAccepted != w.TotalSamples() || !c.GracefulStop || c.BucketBytes == 0 || c.LogBytes == 0 {
		t.Fatalf("cluster: accepted %d of %d, graceful %v, bucket %d bytes, log %d bytes", c.SamplesAccepted, w.TotalSamples(), c.GracefulStop, c.BucketBytes, c.LogBytes)
	}
	for _, p := range c.Protocols {
		if !p.Stored {
			t.Errorf("%s: the querier did not find the segment's samples: %s", p.Protocol, p.LastError)
		}
	}
	if ref := CompareAnswers(res); ref == "" {
		t.Fatal("no reference for the answers")
	}
	for _, q := range res[1].Queries {
		if len(q.Diffs) > 0 {
			t.Errorf("bucket-only query %s differs from the ingesters': %v", q.Name, q.Diffs)
		}
	}
}
