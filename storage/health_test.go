package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// walFailChildEnv makes the test binary act as the child of
// TestPebbleWALWriteFailure: the value is the data directory. A failed
// store keeps Pebble's goroutines (and its commit pipeline) stuck for good,
// so it runs in a process of its own.
const walFailChildEnv = "WEFT_STORAGE_WALFAIL_CHILD"

// TestPebbleWALWriteFailure: once a write to Pebble's own WAL fails (ENOSPC
// with the free-space guard off), the next commit panics inside Pebble
// (db.go commitWrite) with the commit pipeline's lock held. The commit must
// come back as ErrStoreFailed instead of a panic through the caller, the
// store must close Failed (the owner exits 70), and later writes are
// refused with the reason.
func TestPebbleWALWriteFailure(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), walFailChildEnv+"="+t.TempDir())
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("child hung on a failed Pebble WAL:\n%s", out)
	}
	if err != nil || !strings.Contains(string(out), "walfail: ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

func runWALFailChild() int {
	fail := func(format string, args ...any) int {
		fmt.Printf("walfail: "+format+"\n", args...)
		return 1
	}
	var armed atomic.Bool
	wrapPebbleFS = func(fs vfs.FS) vfs.FS {
		return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
			if armed.Load() && op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") {
				return fmt.Errorf("write %s: %w", op.Path, syscall.ENOSPC)
			}
			return nil
		}))
	}
	opts := DefaultOptions()
	opts.CheckpointInterval = -1
	opts.RetentionInterval = -1
	opts.Logs.MaintenanceInterval = -1
	opts.DiskReserve = -1
	sub, err := OpenSubstrate(context.Background(), os.Getenv(walFailChildEnv), opts)
	if err != nil {
		return fail("open: %v", err)
	}
	ls := labels.FromStrings("app", "a")
	push := func(line string) error {
		return sub.Logs().Push(context.Background(), []logstore.PushStream{{Labels: ls, Entries: []logentry.Entry{{Timestamp: time.Now().UnixNano(), Line: line}}}})
	}
	if err := push("before"); err != nil {
		return fail("push before the failure: %v", err)
	}
	armed.Store(true)
	// Unsynced commits return before Pebble's WAL writer flushes their
	// full blocks and fails; a later one meets the failed writer and Pebble
	// panics inside it.
	var cerr error
	value := make([]byte, 64<<10)
	for i := 0; i < 1000 && cerr == nil; i++ {
		b := sub.pdb.NewBatch()
		_ = b.Set(fmt.Appendf(nil, "walfail/%d", i), value, nil)
		cerr = sub.ix.Commit(b, pebble.NoSync)
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(cerr, ErrStoreFailed) || !errors.Is(cerr, ErrUnavailable) {
		return fail("commit on a failed Pebble WAL: %v, want ErrStoreFailed (unavailable)", cerr)
	}
	select {
	case <-sub.Failed():
	case <-time.After(10 * time.Second):
		return fail("the store is not marked failed")
	}
	if err := push("after"); !errors.Is(err, ErrStoreFailed) || !errors.Is(err, ErrUnavailable) {
		return fail("push after the failure: %v, want ErrStoreFailed (unavailable)", err)
	}
	if err := sub.Close(); err != nil {
		fmt.Printf("walfail: close of the failed store: %v\n", err)
	}
	fmt.Printf("walfail: ok: %v\n", cerr)
	return 0
}
