//go:build cgo

package gpuagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// lokiReceiver records Loki JSON pushes.
type lokiReceiver struct {
	mu      sync.Mutex
	streams []lokiStream
}

func (l *lokiReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/loki/api/v1/push" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", 400)
		return
	}
	var p lokiPush
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	l.mu.Lock()
	l.streams = append(l.streams, p.Streams...)
	l.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (l *lokiReceiver) get() []lokiStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]lokiStream(nil), l.streams...)
}

func httpGet(tb testing.TB, url string) string {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestAgentEndToEnd(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	uuid0 := n.srv.Devices[0].(interface{ GetUUID() (string, nvml.Return) })
	u0, _ := uuid0.GetUUID()
	n.gpus[0].procs = []nvml.ProcessInfo{{Pid: 1001, UsedGpuMemory: 4 << 30, GpuInstanceId: 0xFFFFFFFF}}
	n.gpus[1].procs = []nvml.ProcessInfo{{Pid: 1007, UsedGpuMemory: 1 << 30, GpuInstanceId: 0xFFFFFFFF}}
	sock := startFakeKubelet(t, &podresourcesapi.ListPodResourcesResponse{PodResources: []*podresourcesapi.PodResources{
		gpuPod("ml", "trainer-0", "pytorch", "nvidia.com/gpu", u0),
	}})
	rw := &testReceiver{}
	rwSrv := httptest.NewServer(rw)
	defer rwSrv.Close()
	loki := &lokiReceiver{}
	lokiSrv := httptest.NewServer(loki)
	defer lokiSrv.Close()

	opts := DefaultOptions()
	opts.ListenAddr = "127.0.0.1:0"
	opts.Interval = time.Hour // collections are driven by Start and the test
	opts.Hostname = "node-1"
	opts.ProcRoot = procRoot
	opts.PodResourcesSocket = sock
	opts.QueueDir = t.TempDir()
	opts.RemoteWriteURL = rwSrv.URL + "/api/v1/write"
	opts.LokiURL = lokiSrv.URL
	clk := newClock()
	a, err := newAgent(opts, NewCollector(n.srv, nil, clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	base := "http://" + a.Addr()

	waitFor(t, "first collection", func() bool { return strings.Contains(httpGet(t, base+"/metrics"), "gpu_agent_nvml_up 1") })
	body := httpGet(t, base+"/metrics")
	for _, want := range []string{
		"# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
		"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
		// GPU 0 carries the pod from the kubelet and the run from /proc.
		`container="pytorch",container_id="` + strings.Repeat("a1", 32) + `",dataset="c4",device="nvidia0",gpu="0",gpu_uuid="` + u0 + `",local_rank="1",model="llama-3-8b",modelName=`,
		`namespace="ml",pci_bus_id="00000000:10:00.0",pod="trainer-0",pod_uid="1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901",rank="3",run_id="run-llama-7"} 5`,
		`weft_gpu_process_memory_used{DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="node-1",`,
		"gpu_agent_queue_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s\n%s", want, grep(body, `gpu="0"`)[:min(3000, len(grep(body, `gpu="0"`)))])
		}
	}

	// Remote write delivered the same series.
	waitFor(t, "remote write", func() bool { return len(rw.samples()) > 0 })
	found := false
	for _, s := range rw.samples() {
		if s.labels["__name__"] == "DCGM_FI_DEV_GPU_UTIL" && s.labels["gpu"] == "0" {
			found = s.labels["run_id"] == "run-llama-7" && s.labels["pod"] == "trainer-0"
		}
	}
	if !found {
		t.Error("remote-written GPU 0 utilization lacks its workload context")
	}
	// Pushed series carry instance as a scrape of the agent would name it
	// (loopback listener: the hostname and the bound port); /metrics does
	// not, a scraper adds its own.
	_, port, _ := strings.Cut(a.Addr(), ":")
	for _, s := range rw.samples() {
		if s.labels["instance"] != "node-1:"+port {
			t.Fatalf("pushed %s has instance %q, want node-1:%s", s.labels["__name__"], s.labels["instance"], port)
		}
	}
	if strings.Contains(body, "instance=") {
		t.Error("/metrics carries an instance label")
	}

	// A training process registers its context over HTTP.
	resp, err := http.Post(base+"/v1/register", "application/json", bytes.NewBufferString(`{"pid":1007,"run_id":"reg-run","model":"gpt-neo"}`))
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("register: %v %v", resp, err)
	}
	resp.Body.Close()
	a.CollectOnce(context.Background())
	body = httpGet(t, base+"/metrics")
	if !strings.Contains(body, `model="gpt-neo"`) || !strings.Contains(body, `run_id="reg-run"`) {
		t.Errorf("registered context missing:\n%s", grep(body, `gpu="1"`)[:2000])
	}

	// An XID lands in the log stream of the run on that GPU.
	n.waitRegistered(t)
	n.events <- nvml.EventData{Device: n.srv.Devices[0], EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	waitFor(t, "loki push", func() bool { return len(loki.get()) > 0 })
	st := loki.get()[0]
	if st.Stream["run_id"] != "run-llama-7" || st.Stream["pod"] != "trainer-0" || st.Stream["xid"] != "79" || st.Stream["gpu_uuid"] != u0 || st.Stream["event"] != "xid" {
		t.Errorf("loki stream labels = %v", st.Stream)
	}
	if len(st.Values) != 1 || len(st.Values[0]) != 3 || !strings.Contains(fmt.Sprint(st.Values[0][1]), "XID 79") || !strings.Contains(fmt.Sprint(st.Values[0][2]), "UUID:"+u0) {
		t.Errorf("loki values = %v", st.Values)
	}
}

func TestAgentNoDriver(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	n.srv.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	opts := DefaultOptions()
	opts.ListenAddr = "127.0.0.1:0"
	opts.Interval = time.Hour
	opts.PodResourcesSocket = ""
	a, err := newAgent(opts, NewCollector(n.srv, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	waitFor(t, "nvml down served", func() bool {
		return nvmlUpRe(0).MatchString(httpGet(t, "http://"+a.Addr()+"/metrics"))
	})
	if body := httpGet(t, "http://"+a.Addr()+"/metrics"); strings.Contains(body, "DCGM_FI_DEV") {
		t.Errorf("GPU series without a driver:\n%s", body)
	}
}

func TestRunOnce(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			n := newMockNode(t, "dgxh100")
			opts := DefaultOptions()
			opts.Once = true
			opts.Output = format
			opts.Hostname = "h"
			opts.PodResourcesSocket = ""
			a, err := newAgent(opts, NewCollector(n.srv, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			a.Stdout = &out
			a.onceWindow = 2 * gpmMinWindow
			if err := a.run(context.Background()); err != nil {
				t.Fatal(err)
			}
			// On Hopper -once waits for a GPM window, so the profiling
			// figures are in its output.
			if !strings.Contains(out.String(), "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE") {
				t.Errorf("-once output lacks the GPM figures:\n%s", grep(out.String(), "PROF"))
			}
			switch format {
			case "text":
				if !strings.Contains(out.String(), "# TYPE DCGM_FI_DEV_FB_USED gauge") {
					t.Errorf("text output:\n%s", out.String()[:500])
				}
			case "json":
				first, _, _ := strings.Cut(out.String(), "\n")
				var v map[string]any
				if err := json.Unmarshal([]byte(first), &v); err != nil || v["name"] == nil {
					t.Errorf("json line %q: %v", first, err)
				}
			}
		})
	}
	if _, err := newAgent(Options{Naming: "bogus"}, nil); err == nil {
		t.Error("bad naming accepted")
	}
}
