//go:build cgo

package gpuagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The agent runs on the GPU hosts it observes, so its footprint is part of
// its contract (issue 19): under footprintMaxRSS resident and under
// footprintMaxCPU of one core with 8 GPUs at the default interval, pushing.
const (
	footprintMaxRSS = 50 << 20
	footprintMaxCPU = 0.01
)

// Environment of BenchmarkAgentFootprint.
const (
	footprintEnv          = "WEFT_AGENT_FOOTPRINT"           // "1" runs the benchmark
	footprintIntervalsEnv = "WEFT_AGENT_FOOTPRINT_INTERVALS" // collections measured (default 30)
	footprintIntervalEnv  = "WEFT_AGENT_FOOTPRINT_INTERVAL"  // Go duration (default: the agent's default)
	footprintProfileEnv   = "WEFT_AGENT_FOOTPRINT_PROFILE"   // directory for the child's cpu.pprof and heap.pprof
	footprintChildEnv     = "WEFT_AGENT_FOOTPRINT_CHILD"     // internal: the child's config, JSON
)

// footprintConfig is what the benchmark tells its child process.
type footprintConfig struct {
	Node       string        `json:"node"`
	Intervals  int           `json:"intervals"`
	Interval   time.Duration `json:"interval"`
	URL        string        `json:"url"`
	QueueDir   string        `json:"queue_dir"`
	ProfileDir string        `json:"profile_dir,omitempty"`
}

// footprintResult is what the child measured of itself.
type footprintResult struct {
	CPUSeconds  float64 `json:"cpu_seconds"` // user + system (getrusage), agent start to stop
	WallSeconds float64 `json:"wall_seconds"`
	PeakRSS     int64   `json:"peak_rss_bytes"` // VmHWM: the high-water mark of resident memory
	RSS         int64   `json:"rss_bytes"`      // VmRSS at the end
	Series      int     `json:"series"`         // series per collection
}

const footprintResultPrefix = "FOOTPRINT "

// BenchmarkAgentFootprint measures the agent's resident memory and CPU
// share as it would run on a GPU host: 8 mocked H100s (GPM on, one training
// process per GPU attributed from a fake /proc), the default 10 s interval,
// remote write to a loopback receiver. The agent runs in a child process (this
// test binary re-executed) so the receiver and the test framework count
// neither against its RSS nor its CPU time, which comes from getrusage, not
// wall time. NVML calls are the mock's, so the driver's own cost is not in
// the figures. It fails when a goal is missed.
//
//	WEFT_AGENT_FOOTPRINT=1 CGO_ENABLED=1 go test ./gpuagent -run XXX -bench AgentFootprint -benchtime 1x
func BenchmarkAgentFootprint(b *testing.B) {
	if os.Getenv(footprintEnv) == "" {
		b.Skip("set " + footprintEnv + "=1 to run (it runs the agent for 30 intervals of 10 s)")
	}
	cfg := footprintConfig{Node: "dgxh100", Intervals: 30, Interval: DefaultOptions().Interval, ProfileDir: os.Getenv(footprintProfileEnv)}
	if v := os.Getenv(footprintIntervalsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive integer", footprintIntervalsEnv, v)
		}
		cfg.Intervals = n
	}
	if v := os.Getenv(footprintIntervalEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive duration", footprintIntervalEnv, v)
		}
		cfg.Interval = d
	}
	var res footprintResult
	var recv *testReceiver
	for b.Loop() {
		recv = &testReceiver{}
		srv := httptest.NewServer(recv)
		cfg.URL = srv.URL + "/api/v1/write"
		cfg.QueueDir = b.TempDir()
		res = runFootprintChild(b, cfg)
		srv.Close()
	}
	cpuPerInterval := res.CPUSeconds / float64(cfg.Intervals)
	share := res.CPUSeconds / res.WallSeconds
	b.Logf("%d intervals of %v, %d series each: peak RSS %.1f MiB (now %.1f MiB), CPU %.3f s in %.1f s = %.3f%% of one core, %.1f ms per interval",
		cfg.Intervals, cfg.Interval, res.Series, float64(res.PeakRSS)/(1<<20), float64(res.RSS)/(1<<20),
		res.CPUSeconds, res.WallSeconds, 100*share, 1000*cpuPerInterval)
	b.ReportMetric(float64(res.PeakRSS), "peak_rss_bytes")
	b.ReportMetric(float64(res.RSS), "rss_bytes")
	b.ReportMetric(cpuPerInterval, "cpu_s/interval")
	b.ReportMetric(100*share, "cpu_%_of_core")
	b.ReportMetric(float64(res.Series), "series/interval")

	// The pushes really happened: every collection's series arrived.
	got := recv.samples()
	if want := (cfg.Intervals + 1) * res.Series; len(got) < want-res.Series {
		b.Errorf("receiver got %d samples, want about %d (%d collections of %d series)", len(got), want, cfg.Intervals+1, res.Series)
	}
	if res.PeakRSS > footprintMaxRSS {
		b.Errorf("peak RSS %d bytes, goal under %d", res.PeakRSS, footprintMaxRSS)
	}
	if share > footprintMaxCPU {
		b.Errorf("CPU %.3f%% of one core, goal under %.1f%%", 100*share, 100*footprintMaxCPU)
	}
}

func runFootprintChild(tb testing.TB, cfg footprintConfig) footprintResult {
	tb.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), footprintChildEnv+"="+string(js))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("footprint child: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), footprintResultPrefix); ok {
			var res footprintResult
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				tb.Fatal(err)
			}
			return res
		}
	}
	tb.Fatalf("footprint child printed no result:\n%s\n%s", stdout.String(), stderr.String())
	return footprintResult{}
}

// footprintChild runs the agent as configured and prints what it measured
// of itself; the exit code is the child's.
func footprintChild(cfgJSON string) int {
	if err := runFootprint(cfgJSON); err != nil {
		fmt.Fprintln(os.Stderr, "footprint child:", err)
		return 1
	}
	return 0
}

func runFootprint(cfgJSON string) error {
	var cfg footprintConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return err
	}
	n, err := newMockNodeKind(cfg.Node)
	if err != nil {
		return err
	}
	// The driver blocks in Wait for the time asked; so does this mock.
	n.eventWait = func(ms uint32) time.Duration { return time.Duration(ms) * time.Millisecond }
	// One training process per GPU, with the cgroups and environments of
	// the fake /proc, so attribution runs as on a busy node.
	pids := []uint32{1001, 1002, 1003, 1004, 1005, 1006, 1007, 2001}
	for i, f := range n.gpus {
		pid := pids[i%len(pids)]
		f.procs = []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 20 << 30, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF}}
		f.procUtil = []nvml.ProcessUtilizationSample{{Pid: pid, TimeStamp: 1, SmUtil: 90, MemUtil: 40}}
	}
	opts := DefaultOptions()
	opts.Interval = cfg.Interval
	opts.ListenAddr = "127.0.0.1:0"
	opts.Hostname = "footprint-node"
	opts.RemoteWriteURL = cfg.URL
	opts.QueueDir = cfg.QueueDir
	opts.ProcRoot = procRoot
	opts.PodResourcesSocket = filepath.Join(cfg.QueueDir, "no-kubelet.sock")
	a, err := newAgent(opts, NewCollector(n.srv, nil, nil))
	if err != nil {
		return err
	}
	if cfg.ProfileDir != "" {
		f, err := os.Create(filepath.Join(cfg.ProfileDir, "cpu.pprof"))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	before, err := cpuSeconds()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := a.Start(context.Background()); err != nil {
		return err
	}
	// Collections run at 0, 1, ..., Intervals intervals; the slack lets
	// the last one be pushed.
	time.Sleep(time.Duration(cfg.Intervals)*cfg.Interval + cfg.Interval/4)
	a.mu.Lock()
	series := len(a.last)
	a.mu.Unlock()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	after, err := cpuSeconds()
	if err != nil {
		return err
	}
	if cfg.ProfileDir != "" {
		f, err := os.Create(filepath.Join(cfg.ProfileDir, "heap.pprof"))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return err
		}
	}
	hwm, rss, err := residentBytes()
	if err != nil {
		return err
	}
	out, err := json.Marshal(footprintResult{CPUSeconds: after - before, WallSeconds: wall, PeakRSS: hwm, RSS: rss, Series: series})
	if err != nil {
		return err
	}
	fmt.Println(footprintResultPrefix + string(out))
	return nil
}

// cpuSeconds is the process's user plus system CPU time (getrusage).
func cpuSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), nil
}

// residentBytes reads VmHWM (peak) and VmRSS (now) of this process.
func residentBytes() (hwm, rss int64, err error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmHWM" && k != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse %s: %w", k, err)
		}
		if k == "VmHWM" {
			hwm = kb << 10
		} else {
			rss = kb << 10
		}
	}
	return hwm, rss, nil
}
