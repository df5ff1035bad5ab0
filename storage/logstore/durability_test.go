package logstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

const childEnv = "WEFT_LOGSTORE_KILL_CHILD"

// TestKillNine re-executes the test binary as a child that pushes from
// several goroutines and prints every acknowledged line, kills it with
// SIGKILL mid-stream, reopens the store and checks that every acknowledged
// line is there, exactly once.
func TestKillNine(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		killChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillNine$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	sc := bufio.NewScanner(out)
	const wantAcks = 2000
	for sc.Scan() && len(acked) < wantAcks {
		if line, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked[line] = true
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Drain what the child printed before it died: those are acknowledged too.
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked[line] = true
		}
	}
	cmd.Wait()
	if len(acked) < wantAcks {
		t.Fatalf("child acknowledged only %d lines", len(acked))
	}

	db := openTestDB(t, dir)
	defer db.close(t)
	s := openTestStore(t, db, testOptions())
	seen := map[string]int{}
	for _, e := range selectAll(t, s, all()) {
		seen[e.Line]++
	}
	for line := range acked {
		if seen[line] != 1 {
			t.Errorf("acknowledged line %q found %d times", line, seen[line])
		}
	}
	for line, n := range seen {
		if n != 1 {
			t.Errorf("line %q stored %d times", line, n)
		}
	}
	t.Logf("%d acknowledged, %d stored", len(acked), len(seen))
}

// killChild pushes until killed. Small seals make chunks get written while
// pushes go on.
func killChild(dir string) {
	db, err := openPebbleForChild(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o := testOptions()
	o.SealEntries = 25
	s, err := Open(context.Background(), db.db, db.ix, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ls := labels.FromStrings("g", strconv.Itoa(g), "s", strconv.Itoa(i%3))
				es := []logentry.Entry{
					{Timestamp: int64(i) * 1e6, Line: fmt.Sprintf("g%d-%d-a", g, i)},
					{Timestamp: int64(i)*1e6 + 1, Line: fmt.Sprintf("g%d-%d-b", g, i), Metadata: labels.FromStrings("trace_id", strconv.Itoa(i))},
				}
				if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: es}}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				for _, e := range es {
					fmt.Fprintf(w, "ack %s\n", e.Line)
				}
				w.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func openPebbleForChild(dir string) (*testDB, error) {
	tb := &childTB{}
	db := openTestDB(tb, dir)
	return db, tb.err
}

// childTB is the testing.TB the child process uses outside a test.
type childTB struct {
	testing.TB
	err error
}

func (c *childTB) Helper()                   {}
func (c *childTB) Fatal(args ...any)         { fmt.Fprintln(os.Stderr, args...); os.Exit(2) }
func (c *childTB) Fatalf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...); os.Exit(2) }
