package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftdb/weft/gpuagent"
)

// Shape of the agent stream in TestAgentRemoteWriteAcrossWeftRestarts.
const (
	agentCollections = 60 // collections the in-process agent produces
	agentGPUs        = 8  // GPUs per collection (a DGX A100)
	agentStep        = time.Second
)

var (
	agentBuildOnce sync.Once
	agentBin       string
	agentBuildErr  error
)

// buildAgent builds ./cmd/weft-agent (cgo, go-nvml) once per test binary.
func buildAgent(tb testing.TB) string {
	tb.Helper()
	agentBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weft-e2e-agent-")
		if err != nil {
			agentBuildErr = err
			return
		}
		agentBin = filepath.Join(dir, "weft-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/weft-agent")
		cmd.Dir = repoRoot(tb)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBuildErr = fmt.Errorf("go build ./cmd/weft-agent: %w\n%s", err, out)
		}
	})
	if agentBuildErr != nil {
		tb.Fatal(agentBuildErr)
	}
	return agentBin
}

// startWeftAt starts weft on a fixed address and data dir, so that a
// restart serves the same data at the same URL.
func startWeftAt(tb testing.TB, name, addr, dataDir string) *process {
	tb.Helper()
	p := startProcess(tb, name, buildWeft(tb),
		"-data-dir", dataDir,
		"-http-addr", addr,
		"-otlp-grpc-addr", "",
		"-otlp-http-addr", "",
		"-log-level", "warn",
	)
	waitReady(tb, p, "http://"+addr+"/-/ready")
	return p
}

// staticContext attributes every GPU to one training run, as the agent's
// registry or /proc reader would.
type staticContext gpuagent.Context

func (s staticContext) Attribute(gpuagent.GPUInfo, []uint32) (gpuagent.Context, map[uint32]gpuagent.Context) {
	return gpuagent.Context(s), nil
}

// agentSnapshot is collection i of a DGX A100: GPU g reports utilization
// i*100+g, a value unique to (collection, GPU).
func agentSnapshot(ts time.Time, i int) gpuagent.Snapshot {
	snap := gpuagent.Snapshot{Time: ts, NVMLUp: true}
	for g := range agentGPUs {
		snap.GPUs = append(snap.GPUs, gpuagent.GPUSnapshot{
			Info: gpuagent.GPUInfo{
				Index: g, Minor: g,
				UUID:     fmt.Sprintf("GPU-e2e00000-0000-0000-0000-00000000000%d", g),
				PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x07+g),
				Model:    "NVIDIA A100-SXM4-40GB",
			},
			Samples: []gpuagent.Sample{{Def: gpuagent.MetricGPUUtil, Value: float64(i*100 + g)}},
		})
	}
	return snap
}

// TestAgentRemoteWriteAcrossWeftRestarts drives the agent's remote-write path
// (renderer, RW2 encoder, on-disk queue, sender) in-process into a real weft
// on loopback, SIGKILLs weft mid-stream and later SIGTERMs it, restarting it
// on the same address and data dir each time while collections go on. Every
// sample must be queryable exactly once with its workload context, RW2 must
// have been used, and an XID line pushed through the agent's Loki pusher
// must be found by its run_id. The real weft-agent binary (no GPU driver
// here) also remote-writes its gpu_agent_nvml_up 0 into the same weft.
func TestAgentRemoteWriteAcrossWeftRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	addr := freeAddr(t)
	base := "http://" + addr
	dataDir := filepath.Join(t.TempDir(), "data")
	weft := startWeftAt(t, "weft#1", addr, dataDir)

	runID := "run-e2e-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	wctx := staticContext{gpuagent.KeyRunID: runID, gpuagent.KeyModel: "llama-3-8b", gpuagent.KeyTeam: "infra"}
	render := &gpuagent.Renderer{Naming: gpuagent.NamingDCGM, Hostname: "e2e-node", Attr: wctx}

	q, err := gpuagent.OpenQueue(filepath.Join(t.TempDir(), "queue"), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	sender := gpuagent.NewSender(q, gpuagent.SenderOptions{
		URL:     base + "/api/v1/write",
		Client:  &http.Client{Timeout: 5 * time.Second},
		MinWait: 50 * time.Millisecond,
		MaxWait: 500 * time.Millisecond,
	})
	sctx, stopSender := context.WithCancel(ctx)
	senderDone := make(chan struct{})
	go func() { defer close(senderDone); sender.Run(sctx) }()
	defer func() { stopSender(); <-senderDone }()

	// The real agent binary: no driver here, so it serves nvml_up 0, and
	// remote-writes that through its own queue into the same weft.
	startProcess(t, "weft-agent", buildAgent(t),
		"-remote-write-url", base+"/api/v1/write",
		"-listen-addr", freeAddr(t),
		"-interval", "200ms",
		"-queue-dir", filepath.Join(t.TempDir(), "agent-queue"),
		"-hostname", "e2e-agent",
		"-pod-resources-socket", filepath.Join(t.TempDir(), "none.sock"),
		"-log-level", "warn",
	)

	start := time.Now().Add(-5 * time.Minute).Truncate(time.Second)
	collect := func(i int) {
		t.Helper()
		ts := start.Add(time.Duration(i) * agentStep)
		series := render.Render(agentSnapshot(ts, i))
		body, err := gpuagent.EncodeRW2(series, ts)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Push(body); err != nil {
			t.Fatal(err)
		}
	}
	// waitFailures waits until the sender has seen weft down (so the outage
	// really is in the middle of the stream), bounded by ctx.
	waitFailures := func(than uint64) {
		t.Helper()
		for sender.Failures() <= than {
			select {
			case <-ctx.Done():
				t.Fatal("sender never saw weft down")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	// xidLine is an XID event on GPU g through the agent's Loki path, with
	// the labels of that GPU's series (context included) plus source, event
	// and xid, as Agent.EventLine builds them.
	xidLine := func(g int, at time.Time) gpuagent.EventLine {
		info := agentSnapshot(at, 0).GPUs[g].Info
		var labels []gpuagent.Label
		for _, s := range render.Render(agentSnapshot(at, 0)) {
			if s.Name == "DCGM_FI_DEV_GPU_UTIL" && hasLabel(s.Labels, "UUID", info.UUID) {
				labels = append(labels, s.Labels...)
			}
		}
		labels = append(labels, gpuagent.Label{Name: "source", Value: "weft-agent"},
			gpuagent.Label{Name: "event", Value: "xid"}, gpuagent.Label{Name: "xid", Value: "79"})
		ev := gpuagent.Event{Time: at, Kind: gpuagent.EventXID, Code: 79, GPU: info}
		return gpuagent.EventLine{Labels: labels, Time: at, Line: ev.Message()}
	}
	loki := gpuagent.NewLokiPusher(base, &http.Client{Timeout: 5 * time.Second})
	var outageXID gpuagent.EventLine
	outageErr := make(chan error, 1)

	restarts := 0
	for i := range agentCollections {
		switch i {
		case 20, 45: // take weft down: SIGKILL first (crash), SIGTERM later (rollout)
			sig := syscall.SIGKILL
			if i == 45 {
				sig = syscall.SIGTERM
			}
			f := sender.Failures()
			if err := weft.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			<-weft.done
			collect(i)
			waitFailures(f)
			if i == 45 { // an XID while weft is down: the pusher's retries must bridge it
				outageXID = xidLine(1, time.Now())
				go func() { outageErr <- loki.Push(ctx, []gpuagent.EventLine{outageXID}) }()
			}
		case 32, 52: // bring it back on the same address and data dir
			restarts++
			weft = startWeftAt(t, "weft#"+strconv.Itoa(restarts+1), addr, dataDir)
			collect(i)
		default:
			collect(i)
		}
		time.Sleep(30 * time.Millisecond) // a stream, not one burst
	}

	// Drain: the queue empties once weft acknowledged everything.
	for {
		segs, _, dropped, _ := q.Stats()
		if dropped != 0 {
			t.Fatalf("queue dropped %d segments", dropped)
		}
		if segs == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("queue not drained: %d segments left", segs)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if sender.Failures() == 0 {
		t.Fatal("sender saw no failures: weft was never down while it sent")
	}
	if sender.UsingV1() {
		t.Fatal("sender fell back to remote write 1.0; weft accepts 2.0")
	}

	// Every series that carries the run's context has exactly one sample per
	// collection.
	end := start.Add(time.Duration(agentCollections-1) * agentStep)
	names := map[string]int{} // series per collection that carry the run, by name
	for _, s := range render.Render(agentSnapshot(end, 0)) {
		for _, l := range s.Labels {
			if l.Name == gpuagent.KeyRunID {
				names[s.Name]++
			}
		}
	}
	if len(names) < 2 || names["DCGM_FI_DEV_GPU_UTIL"] != agentGPUs {
		t.Fatalf("renderer: series with run_id by name %v; want utilization and more, %d GPUs each", names, agentGPUs)
	}
	for name, want := range names {
		// count_over_time drops the name, so one query per name.
		counts := promQuery(t, base, fmt.Sprintf(`count_over_time(%s{run_id=%q}[10m])`, name, runID), end)
		if len(counts) != want {
			t.Fatalf("count_over_time(%s): %d series with run_id, want %d: %v", name, len(counts), want, counts)
		}
		for _, s := range counts {
			if s.Value != strconv.Itoa(agentCollections) {
				t.Errorf("%s%v: %s samples, want %d", name, s.Metric, s.Value, agentCollections)
			}
			for k, v := range map[string]string{"run_id": runID, "model": "llama-3-8b", "team": "infra", "Hostname": "e2e-node"} {
				if s.Metric[k] != v {
					t.Errorf("%s%v: label %s=%q, want %q", name, s.Metric, k, s.Metric[k], v)
				}
			}
		}
	}

	// And each sample holds the value collected for it (a lost sample would
	// show the previous one through the lookback).
	rng := promQueryRange(t, base, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{run_id=%q}`, runID), start, end, agentStep)
	if len(rng) != agentGPUs {
		t.Fatalf("query_range: %d series, want %d", len(rng), agentGPUs)
	}
	for _, s := range rng {
		g, err := strconv.Atoi(s.Metric["gpu"])
		if err != nil || s.Metric["UUID"] == "" || s.Metric["gpu_uuid"] != s.Metric["UUID"] {
			t.Fatalf("series without GPU identity: %v", s.Metric)
		}
		if len(s.Values) != agentCollections {
			t.Fatalf("gpu %d: %d points, want %d", g, len(s.Values), agentCollections)
		}
		for i, p := range s.Values {
			wantT := float64(start.Add(time.Duration(i)*agentStep).UnixMilli()) / 1000
			if p.T != wantT || p.V != strconv.Itoa(i*100+g) {
				t.Errorf("gpu %d point %d: (%v, %s), want (%v, %d)", g, i, p.T, p.V, wantT, i*100+g)
			}
		}
	}

	// weft counted only RW2 requests since its last restart, and some.
	v2, v1 := rwRequests(t, base)
	if v2 == 0 || v1 != 0 {
		t.Errorf("weft_remote_write_requests_total: protocol 2.0 = %v, 1.0 = %v; want 2.0 > 0 and no 1.0", v2, v1)
	}

	// Two XIDs through the agent's Loki path: one pushed while weft was down
	// (above), one now; both are found by the run's label.
	if err := <-outageErr; err != nil {
		t.Fatalf("loki push during the outage: %v", err)
	}
	nowXID := xidLine(0, time.Now())
	if err := loki.Push(ctx, []gpuagent.EventLine{nowXID}); err != nil {
		t.Fatalf("loki push: %v", err)
	}
	got := lokiQueryRange(t, base, fmt.Sprintf(`{run_id=%q}`, runID), outageXID.Time.Add(-time.Minute), nowXID.Time.Add(time.Minute))
	byUUID := map[string]lokiStreamResult{}
	for _, st := range got {
		byUUID[st.Stream["UUID"]] = st
	}
	for _, want := range []gpuagent.EventLine{outageXID, nowXID} {
		uuid := ""
		for _, l := range want.Labels {
			if l.Name == "UUID" {
				uuid = l.Value
			}
		}
		st, ok := byUUID[uuid]
		if len(got) != 2 || !ok || len(st.Values) != 1 || st.Values[0][1] != want.Line ||
			st.Values[0][0] != strconv.FormatInt(want.Time.UnixNano(), 10) ||
			st.Stream["xid"] != "79" || st.Stream["model"] != "llama-3-8b" || st.Stream["event"] != "xid" {
			t.Fatalf("loki query_range {run_id=%q}: %+v, want one stream per XID, the one of %s with the line %q", runID, got, uuid, want.Line)
		}
	}

	// The agent binary's own no-driver series reached weft too. Agent-level
	// series carry no Hostname; the in-process stream wrote nvml_up 1 (and
	// minutes in the past), so the binary's is the only 0.
	up := waitQuery(ctx, t, base, `gpu_agent_nvml_up == 0`)
	if up.Metric["__name__"] != "gpu_agent_nvml_up" {
		t.Errorf("weft-agent binary: got %v, want gpu_agent_nvml_up", up.Metric)
	}
}

type promSample struct {
	Metric map[string]string
	Value  string
}

type promPoint struct {
	T float64
	V string
}

type promSeries struct {
	Metric map[string]string
	Values []promPoint
}

func promGet(tb testing.TB, u string, data any) {
	tb.Helper()
	resp, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %s: %s", u, resp.Status, body)
	}
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "success" {
		tb.Fatalf("GET %s: %v: %s", u, err, body)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		tb.Fatalf("GET %s: decode data: %v: %s", u, err, body)
	}
}

func promQuery(tb testing.TB, base, query string, at time.Time) []promSample {
	tb.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	promGet(tb, base+"/api/v1/query?"+url.Values{"query": {query}, "time": {strconv.FormatInt(at.Unix(), 10)}}.Encode(), &data)
	out := make([]promSample, 0, len(data.Result))
	for _, r := range data.Result {
		v, _ := r.Value[1].(string)
		out = append(out, promSample{Metric: r.Metric, Value: v})
	}
	return out
}

func promQueryRange(tb testing.TB, base, query string, start, end time.Time, step time.Duration) []promSeries {
	tb.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		} `json:"result"`
	}
	promGet(tb, base+"/api/v1/query_range?"+url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}.Encode(), &data)
	out := make([]promSeries, 0, len(data.Result))
	for _, r := range data.Result {
		s := promSeries{Metric: r.Metric}
		for _, p := range r.Values {
			t, _ := p[0].(float64)
			v, _ := p[1].(string)
			s.Values = append(s.Values, promPoint{T: t, V: v})
		}
		out = append(out, s)
	}
	return out
}

// waitQuery polls an instant query at now until it returns one series.
func waitQuery(ctx context.Context, tb testing.TB, base, query string) promSample {
	tb.Helper()
	for {
		if r := promQuery(tb, base, query, time.Now()); len(r) == 1 {
			return r[0]
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("no result for %s", query)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type lokiStreamResult struct {
	Stream map[string]string `json:"stream"`
	Values [][2]string       `json:"values"`
}

func lokiQueryRange(tb testing.TB, base, query string, start, end time.Time) []lokiStreamResult {
	tb.Helper()
	var data struct {
		ResultType string             `json:"resultType"`
		Result     []lokiStreamResult `json:"result"`
	}
	promGet(tb, base+"/loki/api/v1/query_range?"+url.Values{
		"query": {query},
		"start": {strconv.FormatInt(start.UnixNano(), 10)},
		"end":   {strconv.FormatInt(end.UnixNano(), 10)},
		"limit": {"100"},
	}.Encode(), &data)
	return data.Result
}

// rwRequests sums weft_remote_write_requests_total by protocol from /metrics.
func rwRequests(tb testing.TB, base string) (v2, v1 float64) {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "weft_remote_write_requests_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			tb.Fatalf("parse %q: %v", line, err)
		}
		switch {
		case strings.Contains(line, `protocol="2.0"`):
			v2 += v
		case strings.Contains(line, `protocol="1.0"`):
			v1 += v
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return v2, v1
}

func hasLabel(ls []gpuagent.Label, name, value string) bool {
	for _, l := range ls {
		if l.Name == name && l.Value == value {
			return true
		}
	}
	return false
}
