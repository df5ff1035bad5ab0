package storage

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// durabilityChildEnv makes the test binary act as the writer child of
// TestDurabilityKill9: the value is the data directory.
const durabilityChildEnv = "WEFT_STORAGE_DURABILITY_CHILD"

const (
	durabilitySeries = 50
	durabilityStepMs = 15_000
)

func durabilityLabels(i int) labels.Labels {
	return labels.FromStrings("__name__", "durable", "series", strconv.Itoa(i))
}

// durabilityValue is the exact value series i has at step t; it uses every
// bit of the mantissa so a lossy path would show.
func durabilityValue(i int, t int64) float64 {
	return math.Float64frombits(uint64(0x3ff0000000000000) | (uint64(t)*2654435761+uint64(i)*40503)&0x000fffffffffffff)
}

// runDurabilityChild appends batches forever, printing "ack <step>" after
// each Commit returns; the parent kills it with SIGKILL.
func runDurabilityChild() int {
	dir := os.Getenv(durabilityChildEnv)
	opts := DefaultOptions()
	opts.CheckpointInterval = 150 * time.Millisecond
	opts.CompactionInterval = 100 * time.Millisecond
	opts.Now = func() time.Time { return time.UnixMilli(0) }
	opts.FutureWindow = -1
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	lss := make([]labels.Labels, durabilitySeries)
	for i := range lss {
		lss[i] = durabilityLabels(i)
	}
	for step := int64(0); ; step++ {
		app := db.Appender(context.Background())
		t := step * durabilityStepMs
		for i, ls := range lss {
			if _, err := app.Append(0, ls, t, durabilityValue(i, t)); err != nil {
				fmt.Fprintln(os.Stderr, "append:", err)
				return 2
			}
		}
		if err := app.Commit(); err != nil {
			fmt.Fprintln(os.Stderr, "commit:", err)
			return 2
		}
		// Exercise WAL truncation deterministically while acknowledging.
		switch {
		case step == 600:
			err = db.Flush(context.Background())
		case step%250 == 100:
			err = db.Checkpoint(context.Background())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "maintenance:", err)
			return 2
		}
		fmt.Fprintf(out, "ack %d\n", step)
		out.Flush()
	}
}

// TestDurabilityKill9 kills a writer mid-stream and checks that every batch
// it acknowledged (printed after Commit returned) is there after reopening,
// with its exact value.
func TestDurabilityKill9(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), durabilityChildEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	acked := int64(-1)
	const killAfter = 1000 // > 8 chunks of 120 per series, checkpoints and a flush
	for sc.Scan() {
		var step int64
		if _, err := fmt.Sscanf(sc.Text(), "ack %d", &step); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		acked = step
		if step == killAfter {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = cmd.Wait()
	if acked < killAfter {
		t.Fatalf("child stopped after %d acks: %s", acked, stderr.String())
	}
	if cps, _ := filepath.Glob(filepath.Join(dir, "wal", "checkpoint.*")); len(cps) == 0 {
		t.Fatal("child wrote no WAL checkpoint")
	}

	opts := testOptions()
	opts.Retention = -1
	opts.FutureWindow = -1
	db, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	res := queryAll(t, db, 0, math.MaxInt64)
	for i := 0; i < durabilitySeries; i++ {
		samples := res[durabilityLabels(i).String()]
		if int64(len(samples)) < acked+1 {
			t.Fatalf("series %d has %d samples, %d acknowledged", i, len(samples), acked+1)
		}
		for step := int64(0); step <= acked; step++ {
			g := samples[step]
			want := durabilityValue(i, step*durabilityStepMs)
			if g.T != step*durabilityStepMs || !sameBits(g.V, want) {
				t.Fatalf("series %d step %d = (%d, %v), want (%d, %v)", i, step, g.T, g.V, step*durabilityStepMs, want)
			}
		}
	}
	t.Logf("%d acknowledged batches of %d series survived SIGKILL", acked+1, durabilitySeries)
}
