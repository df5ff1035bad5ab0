package bench

import (
	"bufio"
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
	"time"
)

// TargetSpec says how to run one system under test and where its public
// HTTP APIs live.
type TargetSpec struct {
	Name   string
	Binary string
	// Args returns the command line for a data directory and a listen
	// address (host:port); it may write files (configs) into dir.
	Args      func(dir, dataDir, addr string) ([]string, error)
	ReadyPath string
	WritePath string // remote write 1.0 and 2.0
	OTLPPath  string // OTLP/HTTP metrics; "" if not served
	// FlushPath is requested (GET) after ingest so all data is searchable.
	FlushPath string
}

// PrometheusSpec runs Prometheus 3.x as a remote-write (1.0 and 2.0) and
// OTLP receiver with no scrape jobs.
func PrometheusSpec(bin string) TargetSpec {
	return TargetSpec{
		Name: "prometheus", Binary: bin,
		Args: func(dir, dataDir, addr string) ([]string, error) {
			cfg := filepath.Join(dir, "prometheus.yml")
			if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1h\n"), 0o644); err != nil {
				return nil, fmt.Errorf("write prometheus config: %w", err)
			}
			return []string{
				"--config.file=" + cfg,
				"--storage.tsdb.path=" + dataDir,
				"--web.listen-address=" + addr,
				// Accepts remote write 1.0 and 2.0 messages by default
				// (--web.remote-write-receiver.accepted-protobuf-messages).
				"--web.enable-remote-write-receiver",
				"--web.enable-otlp-receiver",
				"--web.enable-admin-api",
				"--log.level=warn",
			}, nil
		},
		ReadyPath: "/-/ready", WritePath: "/api/v1/write", OTLPPath: "/api/v1/otlp/v1/metrics",
	}
}

// VictoriaMetricsSpec runs single-node VictoriaMetrics.
func VictoriaMetricsSpec(bin string) TargetSpec {
	return TargetSpec{
		Name: "victoriametrics", Binary: bin,
		Args: func(_, dataDir, addr string) ([]string, error) {
			return []string{
				"-storageDataPath=" + dataDir,
				"-httpListenAddr=" + addr,
				"-retentionPeriod=10y",
				"-loggerLevel=WARN",
			}, nil
		},
		ReadyPath: "/health", WritePath: "/api/v1/write", OTLPPath: "/opentelemetry/v1/metrics",
		FlushPath: "/internal/force_flush",
	}
}

// WeftSpec runs weft. argTmpl is the command line with {data} and {addr}
// placeholders, split on spaces.
func WeftSpec(bin, argTmpl string) TargetSpec {
	return TargetSpec{
		Name: "weft", Binary: bin,
		Args: func(_, dataDir, addr string) ([]string, error) {
			r := strings.NewReplacer("{data}", dataDir, "{addr}", addr)
			return strings.Fields(r.Replace(argTmpl)), nil
		},
		ReadyPath: "/-/ready", WritePath: "/api/v1/write", OTLPPath: "/api/v1/otlp/v1/metrics",
	}
}

// DefaultWeftArgs is weft's command line for the harness. The OTLP listeners
// take free ports so that runs never collide on :4317/:4318; the harness
// sends OTLP to the main port.
const DefaultWeftArgs = "-data-dir {data} -http-addr {addr} -otlp-grpc-addr 127.0.0.1:0 -otlp-http-addr 127.0.0.1:0 -log-level warn"

// Process is a running target. Stop or Kill must be called; Kill is safe to
// call more than once and after Stop.
type Process struct {
	Spec    TargetSpec
	Base    string // http://addr
	DataDir string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	mu      sync.Mutex
	peakRSS int64
	stopS   chan struct{}
	samplWG sync.WaitGroup
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start launches spec with its data under dir, waits until its ready path
// answers 200 (bounded by ctx and readyTimeout), and starts sampling its RSS.
func Start(ctx context.Context, spec TargetSpec, dir string, readyTimeout time.Duration) (*Process, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	p := &Process{Spec: spec, Base: "http://" + addr, DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, spec.Name+".log"), done: make(chan struct{}), stopS: make(chan struct{})}
	if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	args, err := spec.Args(dir, p.DataDir, addr)
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(p.LogPath)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	bin, err := filepath.Abs(spec.Binary) // the command runs in dir
	if err != nil {
		return nil, fmt.Errorf("binary path: %w", err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Own process group, and killed with us if we die first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	p.samplWG.Add(1)
	go p.sampleRSS()
	if err := p.waitReady(ctx, readyTimeout); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s not ready: %w (log tail: %s)", spec.Name, err, p.LogTail(800))
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+p.Spec.ReadyPath, nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited: %v", p.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid is the target's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// WriteBase is the target's base URL.
func (p *Process) WriteBase() string { return p.Base }

// QueryBase is the target's base URL.
func (p *Process) QueryBase() string { return p.Base }

// CPUSeconds is the CPU time the process used so far (0 when unreadable).
func (p *Process) CPUSeconds() float64 {
	c, _ := ReadCPUSeconds(p.Pid())
	return c
}

// DiskBytes measures the data directory.
func (p *Process) DiskBytes() (allocated, apparent int64, err error) { return DirSize(p.DataDir) }

// Flush asks the target to make everything written searchable (no-op when
// the target has no such API).
func (p *Process) Flush(ctx context.Context) error {
	if p.Spec.FlushPath == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+p.Spec.FlushPath, nil)
	if err != nil {
		return fmt.Errorf("new flush request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("flush: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Stop sends SIGTERM (a graceful stop that flushes), waits up to timeout and
// then kills. It returns whether the stop was graceful.
func (p *Process) Stop(timeout time.Duration) bool {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		p.stopSampling()
		return true
	case <-time.After(timeout):
		p.Kill()
		return false
	}
}

// Kill kills the target's process group and waits for it. Once the target
// has exited nothing is signalled (its ids may belong to others by then).
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.stopSampling()
}

func (p *Process) stopSampling() {
	p.mu.Lock()
	select {
	case <-p.stopS:
	default:
		close(p.stopS)
	}
	p.mu.Unlock()
	p.samplWG.Wait()
}

// rssSampleEvery is how often RSS is sampled for the peak (VmHWM is read
// too, so short peaks are not missed).
const rssSampleEvery = 250 * time.Millisecond

func (p *Process) sampleRSS() {
	defer p.samplWG.Done()
	t := time.NewTicker(rssSampleEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stopS:
			return
		case <-p.done:
			return
		case <-t.C:
			if st, err := ReadProcStatus(p.Pid()); err == nil {
				p.mu.Lock()
				p.peakRSS = max(p.peakRSS, st.RSS, st.HWM)
				p.mu.Unlock()
			}
		}
	}
}

// PeakRSS is the highest resident set size seen so far.
func (p *Process) PeakRSS() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakRSS
}

// LogTail returns the last n bytes of the target's log.
func (p *Process) LogTail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// ProcStatus is what /proc/<pid>/status says about memory.
type ProcStatus struct {
	RSS, HWM int64 // bytes
}

// ReadProcStatus reads VmRSS and VmHWM of pid.
func ReadProcStatus(pid int) (ProcStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcStatus{}, fmt.Errorf("open status: %w", err)
	}
	defer f.Close()
	var st ProcStatus
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &st.RSS
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &st.HWM
		default:
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			*dst = kb * 1024
		}
	}
	return st, sc.Err()
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// ReadCPUSeconds returns user+system CPU seconds of pid from /proc/<pid>/stat.
func ReadCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read stat: %w", err)
	}
	// comm may contain spaces; fields resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	fs := strings.Fields(string(b[i+1:]))
	// fs[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fs) < 13 {
		return 0, errors.New("short stat")
	}
	ut, err1 := strconv.ParseFloat(fs[11], 64)
	stt, err2 := strconv.ParseFloat(fs[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed cpu times")
	}
	return (ut + stt) / clockTicks, nil
}

// ballastName is weft's disk ballast (storage/diskspace.BallastName): a
// preallocated reserve of up to 512 MiB, released on a full disk, not data.
const ballastName = "disk-ballast"

// DirSize returns the allocated (du-style) and apparent byte sizes of every
// file under dir but weft's disk ballast, whose fixed size would otherwise
// count as bytes per sample.
func DirSize(dir string) (allocated, apparent int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || d.Name() == ballastName {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		} else {
			allocated += fi.Size()
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("walk %s: %w", dir, err)
	}
	return allocated, apparent, err
}
