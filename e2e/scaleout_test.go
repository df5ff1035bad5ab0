package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/prometheus/prompb"
)

// Shape of the scale-out cluster of TestScaleOut.
const (
	clusterPartitions = 2
	// clusterTimeout bounds the whole test's waits beyond the comparisons'.
	clusterTimeout = 60 * time.Second
)

var (
	kfakeOnce sync.Once
	kfakeBin  string
	kfakeErr  error
)

// buildKfake builds ./cmd/weft-kfake once per test binary.
func buildKfake(tb testing.TB) string {
	tb.Helper()
	kfakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weft-e2e-kfake-")
		if err != nil {
			kfakeErr = err
			return
		}
		kfakeBin = filepath.Join(dir, "weft-kfake")
		cmd := exec.Command("go", "build", "-o", kfakeBin, "./cmd/weft-kfake")
		cmd.Dir = repoRoot(tb)
		if out, err := cmd.CombinedOutput(); err != nil {
			kfakeErr = fmt.Errorf("go build ./cmd/weft-kfake: %w\n%s", err, out)
		}
	})
	if kfakeErr != nil {
		tb.Fatal(kfakeErr)
	}
	return kfakeBin
}

// role is one weft process of the cluster, restartable on its data
// directory and ports.
type role struct {
	name, dir, addr string
	args            []string
	p               *process
}

func (r *role) url() string { return "http://" + r.addr }

// start starts (or restarts) the process and waits for /-/healthy, then
// for /-/ready unless noWait.
func (r *role) start(tb testing.TB, ready bool) {
	tb.Helper()
	args := append([]string{"-data-dir", r.dir, "-http-addr", r.addr, "-log-level", "warn"}, r.args...)
	bin := buildWeft(tb)
	release(r.addr)
	r.p = startProcess(tb, r.name, bin, args...)
	path := "/-/healthy"
	if ready {
		path = "/-/ready"
	}
	waitReady(tb, r.p, r.url()+path)
}

// kill sends SIGKILL and waits for the exit.
func (r *role) kill() {
	_ = r.p.cmd.Process.Signal(syscall.SIGKILL)
	<-r.p.done
}

// scaleCluster is the cluster of TestScaleOut and the single node fed
// the same data.
type scaleCluster struct {
	kfakeArgs []string
	kfake     *process
	brokers   string
	single    *role
	dist      *role
	ingesters []*role // partition 0, its replica, partition 1
	builder   *role
	querier   *role
	s3        *process
	s3Addr    string
	// rulesFile holds clusterRules; querierCfg is the querier's -config.
	rulesFile, querierCfg string
	// tmp is the cluster's directory; querierArgs start another querier.
	tmp         string
	querierArgs []string
}

// S3 credentials of the test's versitygw.
const (
	s3Key    = "weft-e2e-key"
	s3Secret = "weft-e2e-secret"
	s3Bucket = "weft-blocks"
)

// startS3 starts versitygw over a directory and creates the bucket.
func (c *scaleCluster) startS3(t *testing.T, dir string) {
	t.Helper()
	t.Setenv("ROOT_ACCESS_KEY", s3Key)
	t.Setenv("ROOT_SECRET_KEY", s3Secret)
	t.Setenv("AWS_ACCESS_KEY_ID", s3Key) // what weft's S3 client reads
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3Secret)
	for _, d := range []string{"iam", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.s3Addr = freeAddr(t)
	c.s3 = startProcess(t, "versitygw", peerBinary(t, "versitygw"), "--port", c.s3Addr, "--iam-dir", filepath.Join(dir, "iam"), "posix", filepath.Join(dir, "data"))
	cl, err := minio.New(c.s3Addr, &minio.Options{Creds: credentials.NewStaticV4(s3Key, s3Secret, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{})
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create bucket on versitygw: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func startScaleCluster(t *testing.T) *scaleCluster {
	t.Helper()
	tmp := t.TempDir()
	ports := []string{freePort(t), freePort(t), freePort(t)}
	c := &scaleCluster{kfakeArgs: []string{"-data-dir", filepath.Join(tmp, "kafka"), "-ports", strings.Join(ports, ","),
		"-partitions", itoa(clusterPartitions)}}
	for i, p := range ports {
		if i > 0 {
			c.brokers += ","
		}
		c.brokers += "127.0.0.1:" + p
	}
	c.startKafka(t)
	c.startS3(t, filepath.Join(tmp, "s3"))
	bucket := []string{"-blocks.backend", "s3", "-blocks.s3.endpoint", c.s3Addr, "-blocks.s3.bucket", s3Bucket, "-blocks.s3.insecure"}

	noOTLP := []string{"-otlp-grpc-addr", "", "-otlp-http-addr", ""}
	kafka := []string{"-kafka.brokers", c.brokers, "-kafka.partitions", itoa(clusterPartitions)}
	// A cluster derives no span metrics (docs/scale-out.md): the single node
	// it is compared with derives none either.
	singleCfg := filepath.Join(tmp, "single.yml")
	if err := os.WriteFile(singleCfg, []byte("traces:\n  span_metrics: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.single = &role{name: "single", dir: filepath.Join(tmp, "single"), addr: holdAddr(t), args: append([]string{"-config", singleCfg}, noOTLP...)}
	c.dist = &role{name: "distributor", dir: filepath.Join(tmp, "dist"), addr: holdAddr(t),
		args: append([]string{"-target", "distributor", "-otlp-grpc-addr", "", "-otlp-http-addr", ""}, kafka...)}
	for i, part := range []string{"0", "0", "1"} {
		id := fmt.Sprintf("ingester-%d", i)
		c.ingesters = append(c.ingesters, &role{name: id, dir: filepath.Join(tmp, id), addr: holdAddr(t),
			args: append(append([]string{"-target", "ingester", "-partitions", part, "-ingester.id", id}, kafka...), noOTLP...)})
	}
	var ing []string
	for _, r := range c.ingesters {
		ing = append(ing, r.url())
	}
	c.builder = &role{name: "block-builder", dir: filepath.Join(tmp, "builder"), addr: holdAddr(t),
		args: slices.Concat([]string{"-target", "block-builder", "-block-builder.window", "5s", "-block-builder.grace", "1s", "-block-builder.compaction-range", "20s"}, kafka, bucket, noOTLP)}
	// The querier evaluates rules over the cluster; what they record goes
	// through the ingest log to the ingesters.
	c.rulesFile, c.querierCfg = filepath.Join(tmp, "cluster-rules.yml"), filepath.Join(tmp, "querier.yml")
	if err := os.WriteFile(c.rulesFile, []byte(clusterRules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.querierCfg, []byte("rule_files: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.tmp = tmp
	c.querierArgs = slices.Concat([]string{"-target", "querier", "-querier.ingesters", strings.Join(ing, ",")}, kafka, noOTLP)
	c.querier = &role{name: "querier", dir: filepath.Join(tmp, "querier"), addr: holdAddr(t),
		args: slices.Concat(c.querierArgs, []string{"-config", c.querierCfg, "-querier.query-ingesters-within", "1h", "-blocks.sync-interval", "1s",
			// A one-byte cache bound: nothing is prefetched, every read
			// downloads its blocks and they are evicted once it ends.
			"-blocks.cache-max-bytes", "1"}, bucket)}
	for _, r := range append([]*role{c.single, c.dist, c.builder, c.querier}, c.ingesters...) {
		r.start(t, true)
	}
	return c
}

func freePort(tb testing.TB) string {
	a := freeAddr(tb)
	return a[strings.LastIndexByte(a, ':')+1:]
}

func (c *scaleCluster) startKafka(t *testing.T) {
	t.Helper()
	c.kfake = startProcess(t, "weft-kfake", buildKfake(t), c.kfakeArgs...)
	deadline := time.Now().Add(startTimeout)
	for !strings.Contains(c.kfake.out.String(), "127.0.0.1") {
		select {
		case <-c.kfake.done:
			t.Fatalf("weft-kfake exited: %v\n%s", c.kfake.err, c.kfake.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("weft-kfake did not listen")
		}
	}
}

// strongGet is get with read-after-write asked of the querier.
func strongGet(base, path string, params url.Values) (envelope, http.Header, error) {
	var env envelope
	req, err := http.NewRequest(http.MethodGet, base+path+"?"+params.Encode(), nil)
	if err != nil {
		return env, nil, err
	}
	req.Header.Set("X-Weft-Read-Consistency", "strong")
	resp, err := httpClient.Do(req)
	if err != nil {
		return env, nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &env); err != nil {
		return env, resp.Header, fmt.Errorf("status %d, body %q: %w", resp.StatusCode, body, err)
	}
	if env.Status != "success" {
		return env, resp.Header, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return env, resp.Header, nil
}

// lokiPusher pushes numbered lines of a few streams to every target and
// counts the pushes every target acknowledged. Unacknowledged pushes (a
// 503 while a broker restarts) are retried, as Loki clients do.
type lokiPusher struct {
	targets []string
	acked   atomic.Int64 // lines acknowledged by every target
	stop    chan struct{}
	done    chan struct{}
	fail    atomic.Value // string: first non-retryable failure
}

func startLokiPusher(targets ...string) *lokiPusher {
	lp := &lokiPusher{targets: targets, stop: make(chan struct{}), done: make(chan struct{})}
	go lp.run()
	return lp
}

func (lp *lokiPusher) run() {
	defer close(lp.done)
	n := 0
	for {
		select {
		case <-lp.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		ts := time.Now().UnixNano()
		var streams []string
		for s := range 4 {
			streams = append(streams, fmt.Sprintf(`{"stream":{"job":"scaleout","rank":"%d"},"values":[["%d","line %d rank %d level=%s"]]}`,
				s, ts, n, s, []string{"info", "error"}[(n+s)%2]))
		}
		body := `{"streams":[` + strings.Join(streams, ",") + `]}`
		for _, target := range lp.targets {
			for attempt := 0; ; attempt++ {
				resp, err := httpClient.Post(target+"/loki/api/v1/push", "application/json", strings.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusNoContent {
						break
					}
					if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusInternalServerError {
						lp.fail.CompareAndSwap(nil, fmt.Sprintf("push to %s: %s", target, resp.Status))
					}
				}
				select {
				case <-lp.stop:
					return // this push is not acknowledged by every target
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
		lp.acked.Add(4)
		n++
	}
}

func (lp *lokiPusher) halt(t *testing.T) int64 {
	close(lp.stop)
	<-lp.done
	if f, ok := lp.fail.Load().(string); ok {
		t.Fatalf("loki pusher: %s", f)
	}
	return lp.acked.Load()
}

// teeOTLP is an OTLP/HTTP endpoint that forwards every request to each of
// targets' /otlp/v1/<signal> and answers what the last answered, so that
// telemetrygen's one stream of data reaches the single node and the
// distributor byte for byte.
func teeOTLP(t *testing.T, targets ...string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var code int
		var out []byte
		for _, target := range targets {
			req, _ := http.NewRequest(http.MethodPost, target+"/otlp"+r.URL.Path, bytes.NewReader(body))
			req.Header = r.Header.Clone()
			resp, err := httpClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			out, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
			if code != http.StatusOK {
				break
			}
		}
		w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
		w.WriteHeader(code)
		_, _ = w.Write(out)
	})
	addr := freeAddr(t)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
	t.Cleanup(func() { _ = srv.Close() })
	return addr
}

// lokiChecks are the log queries compared between the single node and the
// querier over [start, end].
func compareLoki(t *testing.T, single, querier string, start, end time.Time) {
	t.Helper()
	ns := func(x time.Time) string { return fmt.Sprint(x.UnixNano()) }
	w := url.Values{"start": {ns(start)}, "end": {ns(end)}}
	with := func(kv ...string) url.Values {
		v := url.Values{"start": w["start"], "end": w["end"]}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, c := range []struct {
		path   string
		params url.Values
	}{
		{"/loki/api/v1/query_range", with("query", `{job="scaleout"}`, "limit", "5000", "direction", "forward")},
		{"/loki/api/v1/query_range", with("query", `{job="scaleout"} |= "level=error"`, "limit", "100")},
		{"/loki/api/v1/query_range", with("query", `sum by (rank) (count_over_time({job="scaleout"}[5s]))`, "step", "5s")},
		{"/loki/api/v1/query_range", with("query", `sum(count_over_time({service_name="telemetrygen"}[1m]))`, "step", "10s")},
		{"/loki/api/v1/series", with("match[]", `{job="scaleout"}`)},
		{"/loki/api/v1/label/rank/values", with()},
		{"/loki/api/v1/index/stats", with("query", `{job="scaleout"}`)},
	} {
		want, err := lokiGet(single, c.path, c.params)
		if err != nil {
			t.Fatalf("single %s %v: %v", c.path, c.params, err)
		}
		got, err := lokiGet(querier, c.path, c.params)
		if err != nil {
			t.Fatalf("querier %s %v: %v", c.path, c.params, err)
		}
		if d := diffLoki(want, got); d != "" {
			t.Errorf("%s %s: %s", c.path, c.params.Get("query"), d)
		}
	}
}

// lokiGet asks for read-after-write and returns the answer's data, or the
// whole body for answers without an envelope (index/stats).
func lokiGet(base, path string, params url.Values) (json.RawMessage, error) {
	env, _, err := strongGet(base, path, params)
	if err == nil {
		return env.Data, nil
	}
	req, _ := http.NewRequest(http.MethodGet, base+path+"?"+params.Encode(), nil)
	req.Header.Set("X-Weft-Read-Consistency", "strong")
	resp, herr := httpClient.Do(req)
	if herr != nil {
		return nil, herr
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !json.Valid(body) {
		return nil, err
	}
	return body, nil
}

// diffLoki compares Loki answers: data.result when there is one (the
// stats beside it hold timings), else data.
func diffLoki(wantRaw, gotRaw json.RawMessage) string {
	pick := func(raw json.RawMessage) any {
		var v any
		_ = json.Unmarshal(raw, &v)
		if m, ok := v.(map[string]any); ok {
			if r, ok := m["result"]; ok {
				return r
			}
		}
		return v
	}
	w, g := pick(wantRaw), pick(gotRaw)
	if reflect.DeepEqual(w, g) {
		return ""
	}
	wb, _ := json.Marshal(w)
	gb, _ := json.Marshal(g)
	return fmt.Sprintf("\n single:  %s\n querier: %s", tail(string(wb), 1500), tail(string(gb), 1500))
}

// waitLines waits until the querier (read-after-write, complete) holds
// want lines of the pusher's streams, or at least want when the pusher is
// still running (exact false).
func waitLines(t *testing.T, c *scaleCluster, want int64, exact bool) {
	t.Helper()
	q := url.Values{"query": {`sum(count_over_time({job="scaleout"}[1h]))`}, "time": {fmt.Sprint(time.Now().Add(time.Second).UnixNano())}}
	deadline := time.Now().Add(clusterTimeout)
	var last string
	for time.Now().Before(deadline) {
		got, hdr, err := strongGet(c.querier.url(), "/loki/api/v1/query", q)
		if err == nil && hdr.Get("X-Weft-Partial-Response") == "" {
			if n := vectorCount(got.Data); n == want || (!exact && n > want) {
				return
			} else {
				last = fmt.Sprintf("%d lines", n)
			}
		} else {
			last = fmt.Sprint(err, hdr.Get("X-Weft-Partial-Response"))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("querier does not hold the %d acknowledged lines within %s: %s", want, clusterTimeout, last)
}

// vectorCount reads the single value of a one-sample vector answer (0 when
// empty).
// resultCount is the number of series of a vector or matrix answer.
func resultCount(raw json.RawMessage) int {
	var d struct {
		Result []json.RawMessage `json:"result"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return -1
	}
	return len(d.Result)
}

func vectorCount(raw json.RawMessage) int64 {
	var d struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if json.Unmarshal(raw, &d) != nil || len(d.Result) != 1 {
		return 0
	}
	var n int64
	fmt.Sscan(fmt.Sprint(d.Result[0].Value[1]), &n)
	return n
}

// clusterRules are the querier's rules: a recording rule over every
// partition's series and an alert that fires at once.
const clusterRules = `groups:
  - name: cluster
    interval: 1s
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: ClusterRulesRun
        expr: count(up) > 0
        labels: {severity: info}
        annotations: {summary: "{{ $value }} targets up"}
`

// scaleTraces is how many traces (of 1+3 spans) telemetrygen sends
// TestScaleOut.
const scaleTraces = 40

// TestScaleOut starts a cluster — a kfake broker process (3 brokers,
// persisted), one distributor, two ingesters of partition 0 and one of
// partition 1, and a querier — beside a single-node weft, feeds both the
// same data from a real Prometheus (remote write), telemetrygen (OTLP
// metrics, logs and traces through a tee) and Loki pushes, and checks that
// the querier answers the Prometheus, Loki and Tempo APIs as the single
// node does.
// Then it SIGKILLs the ingester of partition 1 while writes go on (the
// answers are flagged partial meanwhile; after its restart every
// acknowledged line is there, once) and restarts the broker.
func TestScaleOut(t *testing.T) {
	promBin := peerBinary(t, "prometheus")
	genBin := peerBinary(t, "telemetrygen")
	c := startScaleCluster(t)
	started := time.Now()

	// Prometheus scrapes itself and the single node and remote-writes
	// everything to both the single node and the distributor.
	promAddr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: [%[2]q]}]
  - job_name: weft
    static_configs: [{targets: [%[3]q]}]
remote_write:
  - name: single
    url: %[4]s/api/v1/write
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
  - name: cluster
    url: %[5]s/api/v1/write
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
`, scrapeInterval, promAddr, c.single.addr, c.single.url(), c.dist.url())
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, "prometheus", promBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	waitReady(t, prom, "http://"+promAddr+"/-/ready")

	pusher := startLokiPusher(c.single.url(), c.dist.url())
	tee := teeOTLP(t, c.single.url(), c.dist.url())
	for _, sig := range []string{"metrics", "logs", "traces"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		args := []string{sig, "--otlp-http", "--otlp-insecure", "--otlp-endpoint", tee, "--rate", "20", "--service", "telemetrygen", "--workers", "1"}
		switch sig {
		case "metrics":
			args = append(args, "--metrics", "40", "--metric-type", "Sum")
		case "logs":
			args = append(args, "--logs", "40")
		case "traces":
			args = append(args, "--traces", strconv.Itoa(scaleTraces), "--child-spans", "3")
		}
		out, err := exec.CommandContext(ctx, genBin, args...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
		}
	}
	for time.Since(started) < dataSpan {
		time.Sleep(200 * time.Millisecond)
	}
	t0 := time.Now().Add(-settle).Truncate(time.Millisecond)
	evalTimes := []time.Time{t0, t0.Add(-2500 * time.Millisecond), t0.Add(-7123 * time.Millisecond)}
	t.Run("equal to single node", func(t *testing.T) {
		waitSame(t, "http://"+promAddr, c.single.url(), `{job=~"prometheus|weft"}[1m]`, t0)
		waitSame(t, c.single.url(), c.querier.url(), `{__name__=~".+"}[1m]`, t0)
		compareAll(t, c.single.url(), c.querier.url(), t0, evalTimes)
		gen := url.Values{"query": {`count_over_time({__name__=~"gen.*"}[10m])`}, "time": {fsec(t0)}}
		want, err1 := get(c.single.url(), "/api/v1/query", gen)
		got, err2 := get(c.querier.url(), "/api/v1/query", gen)
		if err1 != nil || err2 != nil || len(want.Data) < 50 {
			t.Fatalf("telemetrygen series: %v %v %s", err1, err2, want.Data)
		}
		if d := diffResults(want.Data, got.Data); d != "" {
			t.Errorf("telemetrygen metrics: %s", d)
		}
		// status/tsdb over the ingesters (partition 0's replica counted
		// once): telemetrygen's metrics have the single node's series counts.
		genCounts := func(base string) map[string]float64 {
			t.Helper()
			r, err := get(base, "/api/v1/status/tsdb", url.Values{"limit": {"1000"}})
			if err != nil {
				t.Fatalf("status/tsdb of %s: %v", base, err)
			}
			var st struct {
				ByName []struct {
					Name  string  `json:"name"`
					Value float64 `json:"value"`
				} `json:"seriesCountByMetricName"`
			}
			if err := json.Unmarshal(r.Data, &st); err != nil {
				t.Fatalf("status/tsdb of %s: %s: %v", base, r.Data, err)
			}
			out := map[string]float64{}
			for _, e := range st.ByName {
				if strings.HasPrefix(e.Name, "gen") {
					out[e.Name] = e.Value
				}
			}
			return out
		}
		if want, got := genCounts(c.single.url()), genCounts(c.querier.url()); len(want) == 0 || !maps.Equal(want, got) {
			t.Errorf("status/tsdb series of telemetrygen's metrics: single %v, querier %v", want, got)
		}
		// Lines still being pushed are not compared: the window ends before them.
		compareLoki(t, c.single.url(), c.querier.url(), started.Add(-time.Minute), time.Now().Add(-2*time.Second))
		compareTempo(t, c.single.url(), c.querier.url(), started.Add(-time.Minute), time.Now(), scaleTraces)
		// weft's own investigation API, over the querier's fan-out index,
		// on telemetrygen's finished data (a single node's index answers
		// by time partition, so series still appearing after the window's
		// end would count there and not on the querier).
		for _, sel := range []string{`{__name__=~"gen.*"}`, `{service_name="telemetrygen", __name__=""}`} {
			p := url.Values{"match": {sel}, "start": {fsec(started.Add(-time.Minute))}, "end": {fsec(t0)}}
			want, err1 := get(c.single.url(), "/weft/api/v1/context", p)
			got, err2 := get(c.querier.url(), "/weft/api/v1/context", p)
			if err1 != nil || err2 != nil || !bytes.Contains(want.Data, []byte(`"series":`)) {
				t.Fatalf("context %s: single %s %v, querier %v", sel, want.Data, err1, err2)
			}
			if !bytes.Equal(want.Data, got.Data) {
				t.Errorf("context %s:\n single  %s\n querier %s", sel, want.Data, got.Data)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("rules on the querier", func(t *testing.T) {
		// Rules loaded by a reload (after the comparisons: what they
		// record is the cluster's alone). Recorded series and ALERTS come
		// back through the log and the ingesters; the rules and alerts
		// APIs show the group healthy.
		if err := os.WriteFile(c.querierCfg, []byte("rule_files: ["+strconv.Quote(c.rulesFile)+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Post(c.querier.url()+"/-/reload", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("reload: %s", resp.Status)
		}
		deadline := time.Now().Add(clusterTimeout)
		for {
			rec, err1 := get(c.querier.url(), "/api/v1/query", url.Values{"query": {`job:up:sum{job="prometheus"}`}})
			alerts, err2 := get(c.querier.url(), "/api/v1/query", url.Values{"query": {`ALERTS{alertname="ClusterRulesRun",alertstate="firing"}`}})
			if err1 == nil && err2 == nil && vectorCount(rec.Data) == 1 && resultCount(alerts.Data) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("recorded series %s / %v and ALERTS %s / %v within %s", rec.Data, err1, alerts.Data, err2, clusterTimeout)
			}
			time.Sleep(500 * time.Millisecond)
		}
		rules, err := get(c.querier.url(), "/api/v1/rules", nil)
		if err != nil || !strings.Contains(string(rules.Data), `"health":"ok"`) || strings.Contains(string(rules.Data), `"health":"err"`) {
			t.Fatalf("rules API: %s, %v", rules.Data, err)
		}
		firing, err := get(c.querier.url(), "/api/v1/alerts", nil)
		if err != nil || !strings.Contains(string(firing.Data), `"state":"firing"`) {
			t.Fatalf("alerts API: %s, %v", firing.Data, err)
		}
	})
	t.Run("rule groups shared by two queriers", func(t *testing.T) { checkRuleSharding(t, c) })
	t.Run("tail", func(t *testing.T) { checkClusterTail(t, c) })

	// SIGKILL the only ingester of partition 1 while writes go on.
	victim := c.ingesters[2]
	victim.kill()
	time.Sleep(3 * time.Second) // the querier's status poll notices
	_, hdr, err := strongGet(c.querier.url(), "/loki/api/v1/query", url.Values{"query": {`sum(count_over_time({job="scaleout"}[1h]))`}})
	if err != nil || hdr.Get("X-Weft-Partial-Response") != "true" {
		t.Errorf("with partition 1's ingester killed: err %v, partial %q; want a flagged partial answer", err, hdr.Get("X-Weft-Partial-Response"))
	}
	time.Sleep(2 * time.Second)
	victim.start(t, true) // replays from its offsets
	t.Run("after ingester SIGKILL", func(t *testing.T) {
		// Every line acknowledged before the kill is there (more are
		// being pushed meanwhile).
		waitLines(t, c, pusher.acked.Load(), false)
	})

	// Restart the brokers (state persisted in their directory, same ports).
	_ = c.kfake.stop()
	time.Sleep(time.Second)
	c.startKafka(t)
	time.Sleep(3 * time.Second) // writes resume through the distributor
	acked := pusher.halt(t)
	t.Run("after broker restart", func(t *testing.T) {
		// Exactly the acknowledged lines: none lost, none stored twice
		// by the replay.
		waitLines(t, c, acked, true)
		compareLoki(t, c.single.url(), c.querier.url(), started.Add(-time.Minute), time.Now())
		// The killed ingester replayed its partition's spans: each once.
		compareTempo(t, c.single.url(), c.querier.url(), started.Add(-time.Minute), time.Now(), scaleTraces)
	})
	t.Logf("acknowledged %d log lines through the cluster", acked)

	// A window served only from the bucket: data two hours old (samples,
	// log lines and spans, one trace's spans in two windows' blocks), older
	// than the querier's -querier.query-ingesters-within=1h, reaches the
	// bucket through the block builder; then every ingester is killed and
	// the querier still answers for it, as the single node does.
	old := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	writeOld(t, old, c.single.url(), c.dist.url())
	writeOldTraces(t, old, 5*time.Second, c.single.url(), c.dist.url())
	oldChecks := []struct {
		path   string
		params url.Values
	}{
		{"/api/v1/query_range", url.Values{"query": {`sum by (gpu) (rate(e2e_old_joules_total[30s]))`}, "start": {fsec(old)}, "end": {fsec(old.Add(time.Minute))}, "step": {"5"}}},
		{"/api/v1/query", url.Values{"query": {`e2e_old_joules_total[2m]`}, "time": {fsec(old.Add(time.Minute))}}},
		{"/api/v1/series", url.Values{"match[]": {`e2e_old_joules_total`}, "start": {fsec(old)}, "end": {fsec(old.Add(time.Minute))}}},
		{"/loki/api/v1/query_range", url.Values{"query": {`{job="e2e-old"}`}, "start": {fmt.Sprint(old.UnixNano())}, "end": {fmt.Sprint(old.Add(time.Minute).UnixNano())}, "limit": {"1000"}}},
		{"/loki/api/v1/query_range", url.Values{"query": {`sum by (rank) (count_over_time({job="e2e-old"}[20s]))`}, "start": {fmt.Sprint(old.UnixNano())}, "end": {fmt.Sprint(old.Add(time.Minute).UnixNano())}, "step": {"10s"}}},
	}
	compareOld := func() string {
		for _, ch := range oldChecks {
			want, err1 := lokiGet(c.single.url(), ch.path, ch.params)
			got, err2 := lokiGet(c.querier.url(), ch.path, ch.params)
			if err1 != nil || err2 != nil {
				return fmt.Sprint(ch.path, err1, err2)
			}
			if d := diffLoki(want, got); d != "" || string(want) == "" {
				return ch.path + " " + ch.params.Get("query") + d
			}
		}
		return compareOldTempo(c.single.url(), c.querier.url(), old)
	}
	t.Run("bucket-only window", func(t *testing.T) {
		deadline := time.Now().Add(2 * clusterTimeout)
		for d := compareOld(); d != ""; d = compareOld() {
			if time.Now().After(deadline) {
				t.Fatalf("the querier does not serve the old window from the bucket within %s: %s", 2*clusterTimeout, d)
			}
			time.Sleep(500 * time.Millisecond)
		}
		for _, in := range c.ingesters {
			in.kill()
		}
		if d := compareOld(); d != "" {
			t.Fatalf("with every ingester killed: %s", d)
		}
		reads := scrape(t, c.querier.url(), "weft_querier_block_reads_total")
		if reads <= 0 {
			t.Fatalf("weft_querier_block_reads_total = %v: the old window did not come from the bucket", reads)
		}
		t.Logf("block reads by the querier: %v; blocks uploaded: %v, %v bytes", reads,
			scrape(t, c.builder.url(), "weft_block_builder_blocks_uploaded_total"), scrape(t, c.builder.url(), "weft_block_builder_uploaded_bytes_total"))
	})
	// The builder merges each closed 20 s span's 5 s blocks: once the span
	// of the old data's records is merged, the querier answers the same
	// from the merged block.
	t.Run("after compaction", func(t *testing.T) {
		deadline := time.Now().Add(2 * clusterTimeout)
		settled := time.Now().Add(30 * time.Second) // the old data's span: closed, merged
		for time.Now().Before(settled) || scrape(t, c.builder.url(), "weft_block_compactor_blocks_written_total") < 1 {
			if time.Now().After(deadline) {
				t.Fatalf("no block merged within %s", 2*clusterTimeout)
			}
			time.Sleep(time.Second)
		}
		time.Sleep(3 * time.Second) // the querier's sync
		if d := compareOld(); d != "" {
			t.Fatalf("after compaction: %s", d)
		}
		t.Logf("blocks merged: %v from %v sources", scrape(t, c.builder.url(), "weft_block_compactor_blocks_written_total"),
			scrape(t, c.builder.url(), "weft_block_compactor_sources_merged_total"))
		downloads, evictions := scrape(t, c.querier.url(), "weft_blocks_downloads_total"), scrape(t, c.querier.url(), "weft_blocks_evictions_total")
		if downloads <= 0 || evictions <= 0 {
			t.Fatalf("querier: %v block downloads, %v evictions; want both, with a one-byte cache", downloads, evictions)
		}
		t.Logf("querier: %v block downloads, %v evictions, %v bytes cached", downloads, evictions, scrape(t, c.querier.url(), "weft_blocks_cache_bytes"))
	})
}

// writeOld remote-writes a few series and pushes a few log lines at old
// timestamps to every target.
func writeOld(t *testing.T, old time.Time, targets ...string) {
	t.Helper()
	var req prompb.WriteRequest
	for g := range 4 {
		ts := prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "e2e_old_joules_total"}, {Name: "gpu", Value: itoa(g)}, {Name: "job", Value: "e2e-old"}}}
		for i := range 13 {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: old.Add(time.Duration(i) * 5 * time.Second).UnixMilli(), Value: float64(i*100 + g)})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	raw, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var streams []string
	for r := range 3 {
		var vals []string
		for i := range 6 {
			vals = append(vals, fmt.Sprintf(`["%d","old line %d of rank %d"]`, old.Add(time.Duration(i)*10*time.Second).UnixNano(), i, r))
		}
		streams = append(streams, fmt.Sprintf(`{"stream":{"job":"e2e-old","rank":"%d"},"values":[%s]}`, r, strings.Join(vals, ",")))
	}
	push := `{"streams":[` + strings.Join(streams, ",") + `]}`
	for _, target := range targets {
		hreq, _ := http.NewRequest(http.MethodPost, target+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
		hreq.Header.Set("Content-Encoding", "snappy")
		hreq.Header.Set("Content-Type", "application/x-protobuf")
		hreq.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
		resp, err := httpClient.Do(hreq)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("remote write to %s: %s %s", target, resp.Status, body)
		}
		resp, err = httpClient.Post(target+"/loki/api/v1/push", "application/json", strings.NewReader(push))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("loki push to %s: %s %s", target, resp.Status, body)
		}
	}
}

// scrape returns the sum of a metric's samples on base's /metrics.
func scrape(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := httpClient.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			var v float64
			fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(fields) > 0 {
				fmt.Sscan(fields[0], &v)
			}
			sum += v
		}
	}
	return sum
}
