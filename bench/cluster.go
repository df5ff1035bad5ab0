package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClusterSpec describes a scale-out weft cluster on one machine: a kfake
// broker process, one distributor, one ingester per partition, a block
// builder writing to a filesystem bucket, a querier over the ingesters and
// a second querier that reads only the bucket (docs/scale-out.md).
type ClusterSpec struct {
	Name       string // the result's system name; default "weft-cluster"
	WeftBin    string
	KafkaBin   string // cmd/weft-kfake
	Partitions int    // default 2
	// Window is the block builder's window (default 30s: blocks cover the
	// primary segment soon after it is written).
	Window time.Duration
}

// RunCluster benchmarks the cluster like RunTarget does a single process:
// writes go to the distributor, the query suite to the querier, CPU and
// memory are the sum over every process. The suite also runs on the
// bucket-only querier once the blocks cover the primary segment; that run is
// the second result (Name+"-bucket"), so its answers are compared with the
// others'.
func RunCluster(ctx context.Context, spec ClusterSpec, w *Workload, o RunOptions) []SystemResult {
	if spec.Name == "" {
		spec.Name = "weft-cluster"
	}
	if spec.Partitions <= 0 {
		spec.Partitions = 2
	}
	if spec.Window <= 0 {
		spec.Window = 30 * time.Second
	}
	var c *Cluster
	res := runSystem(ctx, spec.Name, "/api/v1/write", "/api/v1/otlp/v1/metrics", func(ctx context.Context, dir string) (system, error) {
		var err error
		c, err = StartCluster(ctx, spec, dir, o.ReadyTimeout)
		if err != nil {
			return nil, err
		}
		return c, nil
	}, w, o)
	out := []SystemResult{res}
	if c != nil && c.bucketRun != nil {
		out = append(out, *c.bucketRun)
	}
	return out
}

// Cluster is a running ClusterSpec. Kill must be called.
type Cluster struct {
	spec      ClusterSpec
	dir       string
	kafka     *exec.Cmd
	kafkaDone chan struct{}
	procs     []*Process // distributor, ingesters, block builder, queriers
	dist      *Process
	querier   *Process
	bucketQ   *Process
	bucketDir string
	// bucketRun is the suite's run on the bucket-only querier.
	bucketRun *SystemResult
}

// StartCluster starts every process of spec under dir.
func StartCluster(ctx context.Context, spec ClusterSpec, dir string, readyTimeout time.Duration) (_ *Cluster, err error) {
	c := &Cluster{spec: spec, dir: dir, bucketDir: filepath.Join(dir, "bucket")}
	defer func() {
		if err != nil {
			c.Kill()
		}
	}()
	brokers, err := c.startKafka(ctx, readyTimeout)
	if err != nil {
		return nil, err
	}
	n := strconv.Itoa(spec.Partitions)
	role := func(name string, args ...string) TargetSpec {
		base := []string{"-data-dir", "{data}", "-http-addr", "{addr}", "-otlp-grpc-addr", "", "-otlp-http-addr", "", "-log-level", "warn",
			"-kafka.brokers", brokers, "-kafka.partitions", n}
		return TargetSpec{Name: name, Binary: spec.WeftBin, ReadyPath: "/-/ready", Args: func(_, dataDir, addr string) ([]string, error) {
			out := append(append([]string{}, base...), args...)
			for i, a := range out {
				out[i] = strings.NewReplacer("{data}", dataDir, "{addr}", addr).Replace(a)
			}
			return out, nil
		}}
	}
	start := func(name string, args ...string) (*Process, error) {
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		p, err := Start(ctx, role(name, args...), sub, readyTimeout)
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		return p, nil
	}
	var ingesters []string
	for i := range spec.Partitions {
		p, err := start(fmt.Sprintf("ingester-%d", i), "-target", "ingester", "-partitions", strconv.Itoa(i), "-ingester.id", strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		ingesters = append(ingesters, p.Base)
	}
	if c.dist, err = start("distributor", "-target", "distributor"); err != nil {
		return nil, err
	}
	bucket := []string{"-blocks.backend", "filesystem", "-blocks.dir", c.bucketDir}
	if _, err = start("block-builder", append([]string{"-target", "block-builder", "-block-builder.window", spec.Window.String(),
		"-block-builder.grace", (spec.Window / 6).String()}, bucket...)...); err != nil {
		return nil, err
	}
	ing := strings.Join(ingesters, ",")
	if c.querier, err = start("querier", "-target", "querier", "-querier.ingesters", ing); err != nil {
		return nil, err
	}
	// Everything older than a millisecond comes from the bucket.
	if c.bucketQ, err = start("querier-bucket", append([]string{"-target", "querier", "-querier.ingesters", ing,
		"-querier.query-ingesters-within", "1ms", "-blocks.sync-interval", "1s"}, bucket...)...); err != nil {
		return nil, err
	}
	return c, nil
}

// errKafkaExited: the broker exited before it listened, most often because
// a port FreeAddr found was taken again before the broker bound it.
var errKafkaExited = errors.New("weft-kfake exited")

// startKafka starts the broker process on three free ports and returns
// their addresses; a broker that exits before listening is started again
// on other ports, twice at most.
func (c *Cluster) startKafka(ctx context.Context, timeout time.Duration) (string, error) {
	for attempt := 0; ; attempt++ {
		addrs, err := c.startKafkaOnce(ctx, timeout)
		if err == nil || !errors.Is(err, errKafkaExited) || attempt == 2 {
			return addrs, err
		}
	}
}

func (c *Cluster) startKafkaOnce(ctx context.Context, timeout time.Duration) (string, error) {
	var ports []string
	for range 3 {
		a, err := FreeAddr()
		if err != nil {
			return "", err
		}
		ports = append(ports, a[strings.LastIndexByte(a, ':')+1:])
	}
	logPath := filepath.Join(c.dir, "kafka.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	bin, err := filepath.Abs(c.spec.KafkaBin)
	if err != nil {
		return "", err
	}
	c.kafka = exec.Command(bin, "-data-dir", filepath.Join(c.dir, "kafka"), "-ports", strings.Join(ports, ","), "-partitions", strconv.Itoa(c.spec.Partitions))
	c.kafka.Stdout, c.kafka.Stderr = logf, logf
	c.kafka.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.kafka.Start(); err != nil {
		logf.Close()
		return "", fmt.Errorf("start weft-kfake: %w", err)
	}
	// This start's own process and channel: a retry replaces c.kafka.
	cmd, done := c.kafka, make(chan struct{})
	c.kafkaDone = done
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(logPath)
		if strings.Count(string(b), "127.0.0.1:") >= 3 {
			break
		}
		select {
		case <-c.kafkaDone:
			b, _ = os.ReadFile(logPath) // what it wrote before exiting
			return "", fmt.Errorf("%w: %s", errKafkaExited, b)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", errors.New("weft-kfake did not listen")
		}
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, "127.0.0.1:"+p)
	}
	return strings.Join(addrs, ","), nil
}

func (c *Cluster) WriteBase() string { return c.dist.Base }
func (c *Cluster) QueryBase() string { return c.querier.Base }

// CPUSeconds sums every process's CPU time.
func (c *Cluster) CPUSeconds() float64 {
	var sum float64
	if c.kafka != nil && c.kafka.Process != nil {
		s, _ := ReadCPUSeconds(c.kafka.Process.Pid)
		sum += s
	}
	for _, p := range c.procs {
		sum += p.CPUSeconds()
	}
	return sum
}

// PeakRSS sums the processes' peaks (an upper bound of the cluster's).
func (c *Cluster) PeakRSS() int64 {
	var sum int64
	if c.kafka != nil && c.kafka.Process != nil {
		if st, err := ReadProcStatus(c.kafka.Process.Pid); err == nil {
			sum += st.HWM
		}
	}
	for _, p := range c.procs {
		sum += p.PeakRSS()
	}
	return sum
}

// Flush returns once the ingesters applied everything produced so far: a
// strongly consistent read through the querier.
func (c *Cluster) Flush(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.querier.Base+"/api/v1/labels", nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Weft-Read-Consistency", "strong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read-after-write through the querier: %s", resp.Status)
	}
	return nil
}

// Stop stops the processes (queriers first, the broker last).
func (c *Cluster) Stop(timeout time.Duration) bool {
	ok := true
	for i := len(c.procs) - 1; i >= 0; i-- {
		ok = c.procs[i].Stop(timeout) && ok
	}
	if c.kafka != nil && c.kafka.Process != nil {
		_ = c.kafka.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.kafkaDone:
		case <-time.After(timeout):
			ok = false
		}
	}
	return ok
}

// Kill kills every process.
func (c *Cluster) Kill() {
	for _, p := range c.procs {
		p.Kill()
	}
	if c.kafka != nil && c.kafka.Process != nil {
		_ = c.kafka.Process.Kill()
		<-c.kafkaDone
	}
}

// DiskBytes is what the ingesters store (one copy of the data, as the
// single node's directory); BucketBytes and the broker's log are reported
// apart.
func (c *Cluster) DiskBytes() (allocated, apparent int64, err error) {
	for _, p := range c.procs {
		if strings.HasPrefix(p.Spec.Name, "ingester-") {
			a, b, err := DirSize(p.DataDir)
			if err != nil {
				return 0, 0, err
			}
			allocated, apparent = allocated+a, apparent+b
		}
	}
	return allocated, apparent, nil
}

// LogTail returns the end of every process's log.
func (c *Cluster) LogTail(n int) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "[%s] %s\n", p.Spec.Name, p.LogTail(n/len(c.procs)+1))
	}
	return b.String()
}

// extraSuites runs the suite on the bucket-only querier once it answers
// like the ingesters' querier at evalTime (the blocks cover the data).
func (c *Cluster) extraSuites(ctx context.Context, client *http.Client, res *SystemResult, evalTime int64, o RunOptions) {
	lg := o.log().With("system", res.System)
	x := &SystemResult{System: res.System + "-bucket", ActiveSeries: res.ActiveSeries}
	c.bucketRun = x
	q := Query{Name: "bucket_covers", Kind: Instant, Expr: `count(count_over_time(DCGM_FI_DEV_GPU_UTIL[1h]))`}
	want, err := (&QueryClient{Client: client, Base: c.querier.Base}).Do(ctx, q, evalTime)
	if err != nil {
		x.Error = "reference count: " + err.Error()
		return
	}
	bq := &QueryClient{Client: client, Base: c.bucketQ.Base}
	deadline := time.Now().Add(o.SpikeVisibleTimeout + 2*c.spec.Window)
	lg.Info("waiting for the blocks")
	for {
		got, err := bq.Do(ctx, q, evalTime)
		if err == nil && len(Diff(want, got)) == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			x.Error = fmt.Sprintf("the bucket did not cover the primary segment in time (%v)", err)
			return
		}
		time.Sleep(time.Second)
	}
	x.BucketBytes, _, _ = DirSize(c.bucketDir)
	lg.Info("queries", "reader", "bucket")
	x.Queries = runSuite(ctx, bq, Suite(), evalTime, o.QueryRepeats, o.QueryBudget)
	x.QueryP50S, x.QueryP99S = pctS(allLatencies(x.Queries), 0.5), pctS(allLatencies(x.Queries), 0.99)
	res.BucketBytes = x.BucketBytes
	if a, _, err := DirSize(filepath.Join(c.dir, "kafka")); err == nil {
		res.LogBytes = a
	}
}
