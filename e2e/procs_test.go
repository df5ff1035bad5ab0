package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of the test's waits; generous for a loaded CI machine, and none of
// them is an assertion about speed.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

var (
	buildOnce sync.Once
	weftBin   string
	buildErr  error
)

// repoRoot is the module root (this package lives one level below it).
func repoRoot(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Dir(wd)
}

// buildWeft builds ./cmd/weft once per test binary into a temporary
// directory, or uses $WEFT_BIN when set.
func buildWeft(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("WEFT_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weft-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		weftBin = filepath.Join(dir, "weft")
		keyOnSources(repoRoot(tb))
		cmd := exec.Command("go", "build", "-o", weftBin, "./cmd/weft")
		cmd.Dir = repoRoot(tb)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/weft: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return weftBin
}

// keyOnSources reads every Go source and module file of the repository
// (and the UI's built assets, which the binary embeds): go test keys its
// cached result of this package on the files the tests open, and the
// binaries the tests build in subprocesses are otherwise invisible to it,
// so a change to weft's code would replay a stale pass.
func keyOnSources(root string) {
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".build", "node_modules", "weft-data", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext == ".go" || ext == ".mod" || ext == ".sum" || strings.Contains(path, "/web/dist/") {
			if f, err := os.Open(path); err == nil {
				_ = f.Close()
			}
		}
		return nil
	})
}

// peerBinary returns the path of a pinned peer binary installed by
// `make peers` ($WEFT_PEER_BIN, else .build/bin under the repository).
func peerBinary(tb testing.TB, name string) string {
	tb.Helper()
	dir := os.Getenv("WEFT_PEER_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(tb), ".build", "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("peer binary %s not installed: run `make peers` (or `make test`), which installs it: %v", p, err)
	}
	return p
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// held are the listeners of holdAddr, by address.
var held sync.Map // string → net.Listener

// holdAddr is freeAddr for a process started later: the port stays bound
// until release(addr), just before the process binds it, so that no other
// test's freeAddr is handed it meanwhile (a cluster's roles get their
// ports long before they start, and each knows the others' addresses).
func holdAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	held.Store(addr, ln)
	tb.Cleanup(func() { release(addr) })
	return addr
}

// release closes the listener holdAddr keeps for addr, if any.
func release(addr string) {
	if ln, ok := held.LoadAndDelete(addr); ok {
		_ = ln.(net.Listener).Close()
	}
}

// process is a child process whose output is kept for failure reports.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // exit error, valid after done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProcess starts bin with args; on cleanup it is sent SIGTERM, then
// killed if it has not exited within stopTimeout. Its output is logged if
// the test failed.
func startProcess(tb testing.TB, name, bin string, args ...string) *process {
	tb.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		_ = p.stop()
		if tb.Failed() {
			tb.Logf("--- output of %s ---\n%s", name, tail(p.out.String(), 8000))
		}
	})
	return p
}

// stop sends SIGTERM and waits for the exit, killing after stopTimeout. It
// returns the exit error (nil for exit code 0).
func (p *process) stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New(p.name + " did not stop within " + stopTimeout.String() + " of SIGTERM")
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// waitReady polls url until it answers 200, the process exits, or
// startTimeout passes.
func waitReady(tb testing.TB, p *process, url string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			tb.Fatalf("%s exited before ready: %v\n%s", p.name, p.err, tail(p.out.String(), 4000))
		case <-ctx.Done():
			tb.Fatalf("%s not ready at %s within %s", p.name, url, startTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startWeft starts the real weft binary on a loopback port with its data in
// a temporary directory and waits until it is ready. It returns the process
// and its base URL.
func startWeft(tb testing.TB, name string) (*process, string) {
	tb.Helper()
	addr := freeAddr(tb)
	p := startProcess(tb, name, buildWeft(tb),
		"-data-dir", filepath.Join(tb.TempDir(), "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", freeAddr(tb),
		"-otlp-http-addr", freeAddr(tb),
		"-log-level", "warn",
	)
	base := "http://" + addr
	waitReady(tb, p, base+"/-/ready")
	return p, base
}

// itoa is strconv.Itoa, for building configs.
func itoa(n int) string { return strconv.Itoa(n) }
