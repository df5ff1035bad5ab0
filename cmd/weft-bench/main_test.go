package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftdb/weft/bench"
)

// TestRunFailsWhenEverySystemFailed runs the metrics and logs modes with no
// system able to start: the run must fail with ErrAllFailed and leave no
// results file behind.
func TestRunFailsWhenEverySystemFailed(t *testing.T) {
	for _, mode := range []string{"metrics", "logs"} {
		t.Run(mode, func(t *testing.T) {
			empty := t.TempDir()
			out := filepath.Join(t.TempDir(), "results")
			o := options{
				mode: mode, scale: "tiny", systems: defaultSystems, peerBin: empty,
				weftBin: filepath.Join(empty, "weft"), weftArgs: bench.DefaultWeftArgs,
				out: out, workDir: t.TempDir(), seed: 1, churn: -1, spike: -1, logLines: 2000,
			}
			runf := run
			if mode == "logs" {
				runf = runLogs
			}
			err := runf(context.Background(), o)
			if !errors.Is(err, bench.ErrAllFailed) {
				t.Fatalf("run = %v, want ErrAllFailed", err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Fatalf("results written although every system failed: %v", entries)
			}
		})
	}
}
