package gpuagent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

const procRoot = "testdata/proc"

func TestReadProc(t *testing.T) {
	hex := func(s string) string { return strings.Repeat(s, 32) }
	tests := []struct {
		name string
		pid  uint32
		want Context
		rt   string
	}{
		{"containerd systemd driver", 1001, Context{KeyRunID: "run-llama-7", KeyModel: "llama-3-8b", KeyDataset: "c4", KeyRank: "3", KeyLocalRank: "1", KeyContainerID: hex("a1"), KeyPodUID: "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"}, "containerd"},
		{"containerd cgroupfs driver v1", 1002, Context{KeyRunID: "mlflow-123", KeyRank: "0", KeyContainerID: hex("b2"), KeyPodUID: "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f902"}, "containerd"},
		{"cri-o", 1003, Context{KeyRunID: "wandb-xyz", KeyContainerID: hex("c3"), KeyPodUID: "0a0b0c0d-1111-2222-3333-444455556666"}, "cri-o"},
		{"docker", 1004, Context{KeyRunID: "elastic-9", KeyModel: "resnet50", KeyContainerID: hex("d4")}, "docker"},
		{"slurm cgroup v1", 1005, Context{KeySlurmJobID: "4242", KeyRank: "7", KeyLocalRank: "3"}, ""},
		{"slurm cgroup v2, unreadable environ", 1006, Context{KeySlurmJobID: "5151"}, ""},
		{"plain host process", 1007, Context{KeyDataset: "imagenet"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ReadProc(procRoot, tc.pid)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Context(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("context = %v, want %v", got, tc.want)
			}
			if info.Cgroup.Runtime != tc.rt {
				t.Errorf("runtime = %q, want %q", info.Cgroup.Runtime, tc.rt)
			}
			if info.StartTime != uint64(tc.pid)*10 {
				t.Errorf("start time = %d", info.StartTime)
			}
		})
	}
	t.Run("pod uid", func(t *testing.T) {
		for pid, want := range map[uint32]string{1001: "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901", 1002: "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f902", 1007: ""} {
			info, _ := ReadProc(procRoot, pid)
			if info.Cgroup.PodUID != want {
				t.Errorf("pid %d pod uid = %q, want %q", pid, info.Cgroup.PodUID, want)
			}
		}
	})
	t.Run("unreadable environ is not an error", func(t *testing.T) {
		info, err := ReadProc(procRoot, 1006)
		if err != nil || info.Env != nil {
			t.Errorf("env=%v err=%v", info.Env, err)
		}
	})
	t.Run("vanished pid", func(t *testing.T) {
		if _, err := ReadProc(procRoot, 1008); !errors.Is(err, ErrProcessGone) {
			t.Errorf("err = %v, want ErrProcessGone", err)
		}
	})
}

func FuzzParseCgroup(f *testing.F) {
	for _, pid := range []string{"1001", "1002", "1003", "1005"} {
		b, _ := os.ReadFile(filepath.Join(procRoot, pid, "cgroup"))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ci := ParseCgroup(b)
		if ci.ContainerID != "" && len(ci.ContainerID) != 64 {
			t.Errorf("container id %q", ci.ContainerID)
		}
		ContextFromEnviron(b)
	})
}

// fakeKubelet serves the pod-resources List API on a unix socket.
type fakeKubelet struct {
	podresourcesapi.UnimplementedPodResourcesListerServer
	resp *podresourcesapi.ListPodResourcesResponse
}

func (k *fakeKubelet) List(context.Context, *podresourcesapi.ListPodResourcesRequest) (*podresourcesapi.ListPodResourcesResponse, error) {
	return k.resp, nil
}

func startFakeKubelet(tb testing.TB, resp *podresourcesapi.ListPodResourcesResponse) string {
	tb.Helper()
	// Unix socket paths are limited to ~108 bytes; TempDir paths can be long.
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "kubelet.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesapi.RegisterPodResourcesListerServer(srv, &fakeKubelet{resp: resp})
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	tb.Cleanup(func() { srv.Stop(); <-done })
	return sock
}

func gpuPod(ns, pod, container, resource string, ids ...string) *podresourcesapi.PodResources {
	return &podresourcesapi.PodResources{Namespace: ns, Name: pod, Containers: []*podresourcesapi.ContainerResources{{
		Name: container, Devices: []*podresourcesapi.ContainerDevices{{ResourceName: resource, DeviceIds: ids}},
	}}}
}

func TestPodResources(t *testing.T) {
	sock := startFakeKubelet(t, &podresourcesapi.ListPodResourcesResponse{PodResources: []*podresourcesapi.PodResources{
		gpuPod("ml", "trainer-0", "pytorch", "nvidia.com/gpu", "GPU-a", "GPU-b"),
		gpuPod("ml", "infer-1", "triton", "nvidia.com/mig-1g.5gb", "MIG-c"),
		gpuPod("net", "sriov", "app", "intel.com/sriov", "0000:3b:00.1"),
	}})
	pr := NewPodResources(sock)
	defer pr.Close()
	m, err := pr.DeviceMap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PodRef{
		"GPU-a": {"ml", "trainer-0", "pytorch"},
		"GPU-b": {"ml", "trainer-0", "pytorch"},
		"MIG-c": {"ml", "infer-1", "triton"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("device map = %v, want %v", m, want)
	}
	missing := NewPodResources(filepath.Join(t.TempDir(), "absent.sock"))
	if m, err := missing.DeviceMap(context.Background()); err != nil || len(m) != 0 {
		t.Errorf("missing socket: %v %v", m, err)
	}
}

func TestWorkloadsAttribution(t *testing.T) {
	sock := startFakeKubelet(t, &podresourcesapi.ListPodResourcesResponse{PodResources: []*podresourcesapi.PodResources{
		gpuPod("ml", "trainer-0", "pytorch", "nvidia.com/gpu", "GPU-0"),
	}})
	pr := NewPodResources(sock)
	defer pr.Close()
	clk := newTestClock()
	reg := NewRegistry(time.Minute, clk.Now)
	w := NewWorkloads(procRoot, reg, pr, nil)
	if err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}

	t.Run("pod gpu with one process", func(t *testing.T) {
		gctx, per := w.Attribute(GPUInfo{UUID: "GPU-0"}, []uint32{1001})
		for k, v := range map[string]string{KeyNamespace: "ml", KeyPod: "trainer-0", KeyContainer: "pytorch", KeyRunID: "run-llama-7", KeyRank: "3"} {
			if gctx[k] != v {
				t.Errorf("gpu ctx %s = %q, want %q (%v)", k, gctx[k], v, gctx)
			}
		}
		if per[1001][KeyModel] != "llama-3-8b" || per[1001][KeyPod] != "trainer-0" {
			t.Errorf("process ctx = %v", per[1001])
		}
	})
	t.Run("shared gpu keeps only agreed keys", func(t *testing.T) {
		gctx, per := w.Attribute(GPUInfo{UUID: "GPU-9"}, []uint32{1001, 1002})
		if _, ok := gctx[KeyRunID]; ok {
			t.Errorf("disagreeing run_id on the shared GPU: %v", gctx)
		}
		if per[1001][KeyRunID] != "run-llama-7" || per[1002][KeyRunID] != "mlflow-123" {
			t.Errorf("per-process contexts = %v", per)
		}
	})
	t.Run("registration overrides and expires", func(t *testing.T) {
		rank := 5
		if err := reg.Register(Registration{PID: 1007, RunID: "reg-run", Model: "gpt", Rank: &rank, TTLSeconds: 30}); err != nil {
			t.Fatal(err)
		}
		_, per := w.Attribute(GPUInfo{UUID: "GPU-1"}, []uint32{1007})
		if per[1007][KeyRunID] != "reg-run" || per[1007][KeyRank] != "5" || per[1007][KeyDataset] != "imagenet" {
			t.Errorf("registered ctx = %v", per[1007])
		}
		clk.Advance(31 * time.Second)
		_, per = w.Attribute(GPUInfo{UUID: "GPU-1"}, []uint32{1007})
		if per[1007][KeyRunID] != "" {
			t.Errorf("expired registration still applied: %v", per[1007])
		}
	})
	t.Run("vanished pid and cache pruning", func(t *testing.T) {
		w.EndRound()
		_, per := w.Attribute(GPUInfo{UUID: "GPU-1"}, []uint32{1008, 1005})
		if len(per[1008]) != 0 {
			t.Errorf("vanished pid has context %v", per[1008])
		}
		if per[1005][KeySlurmJobID] != "4242" {
			t.Errorf("slurm ctx = %v", per[1005])
		}
		w.EndRound()
		if w.CachedPIDs() != 1 {
			t.Errorf("cache holds %d pids, want 1 (only 1005 was seen)", w.CachedPIDs())
		}
		w.EndRound()
		if w.CachedPIDs() != 0 {
			t.Errorf("cache holds %d pids after a round without them", w.CachedPIDs())
		}
	})
}

func TestRegistryHTTP(t *testing.T) {
	clk := newTestClock()
	reg := NewRegistry(time.Minute, clk.Now)
	srv := httptest.NewServer(reg)
	defer srv.Close()
	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, method, path, body string
		code                     int
	}{
		{"register", "POST", "/", `{"pid":42,"run_id":"r1","model":"m","dataset":"d","rank":0,"labels":{"team":"vision","bad-name":"x"}}`, 204},
		{"missing pid", "POST", "/", `{"run_id":"r1"}`, 400},
		{"bad json", "POST", "/", `{"pid":`, 400},
		{"wrong method", "GET", "/", ``, 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := do(tc.method, tc.path, tc.body); got != tc.code {
				t.Errorf("status %d, want %d", got, tc.code)
			}
		})
	}
	want := Context{KeyRunID: "r1", KeyModel: "m", KeyDataset: "d", KeyRank: "0", KeyTeam: "vision"}
	if got := reg.Lookup(42); !reflect.DeepEqual(got, want) {
		t.Errorf("lookup = %v, want %v", got, want)
	}
	clk.Advance(time.Minute)
	if reg.Lookup(42) != nil {
		t.Error("entry outlived its default TTL")
	}
	do("POST", "/", `{"pid":43,"run_id":"r2"}`)
	if code := do("DELETE", "/?pid=43", ""); code != 204 || reg.Lookup(43) != nil {
		t.Errorf("delete: %d %v", code, reg.Lookup(43))
	}
}

type testClock struct{ t time.Time }

func newTestClock() *testClock               { return &testClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }
func (c *testClock) Now() time.Time          { return c.t }
func (c *testClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func TestMIGDeviceAttribution(t *testing.T) {
	sock := startFakeKubelet(t, &podresourcesapi.ListPodResourcesResponse{PodResources: []*podresourcesapi.PodResources{
		gpuPod("ml", "infer-1", "triton", "nvidia.com/mig-1g.5gb", "MIG-bbbb"),
	}})
	pr := NewPodResources(sock)
	defer pr.Close()
	w := NewWorkloads(procRoot, nil, pr, nil)
	if err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := Snapshot{NVMLUp: true, GPUs: []GPUSnapshot{{
		Info: GPUInfo{UUID: "GPU-0", Model: "A100"},
		Samples: []Sample{
			{Def: MetricMIGInstance, Value: 1, Labels: []Label{{"GPU_I_ID", "1"}, {"mig_uuid", "MIG-aaaa"}}},
			{Def: MetricMIGInstance, Value: 1, Labels: []Label{{"GPU_I_ID", "2"}, {"mig_uuid", "MIG-bbbb"}}},
		},
		Processes: []ProcessSample{{PID: 1007, Samples: []Sample{{Def: MetricProcessMemory, Value: 100, Labels: []Label{{"GPU_I_ID", "2"}}}}}},
	}}}
	r := &Renderer{Naming: NamingDCGM, Hostname: "h", Attr: w}
	var got []string
	for _, s := range r.Render(snap) {
		if s.Name == MetricMIGInstance.DCGM || s.Name == MetricProcessMemory.DCGM {
			got = append(got, s.Name+" "+labelValue(s.Labels, "GPU_I_ID")+" pod="+labelValue(s.Labels, KeyPod)+" dataset="+labelValue(s.Labels, KeyDataset))
		}
	}
	want := []string{
		"weft_gpu_mig_instance_info 1 pod= dataset=imagenet", // the only process agrees with itself
		"weft_gpu_mig_instance_info 2 pod=infer-1 dataset=imagenet",
		"weft_gpu_process_memory_used 2 pod=infer-1 dataset=imagenet",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// A process in a container registers with the PID it sees (7); NVML reports
// its host PID (2001, NSpid "2001 7"). The match needs the GPU it named.
func TestRegistrationFromContainerPIDNamespace(t *testing.T) {
	info, err := ReadProc(procRoot, 2001)
	if err != nil || info.NSPID != 7 {
		t.Fatalf("NSPID = %d, %v; want 7", info.NSPID, err)
	}
	if info, _ := ReadProc(procRoot, 1001); info.NSPID != 1001 {
		t.Errorf("no status file: NSPID = %d, want the PID itself", info.NSPID)
	}
	tests := []struct {
		name string
		reg  Registration
		gpu  string
		want string
	}{
		{"namespaced pid with its gpu", Registration{PID: 7, RunID: "in-container", GPUUUIDs: []string{"GPU-a"}}, "GPU-a", "in-container"},
		{"namespaced pid on another gpu", Registration{PID: 7, RunID: "in-container", GPUUUIDs: []string{"GPU-b"}}, "GPU-a", ""},
		{"namespaced pid without gpus is ambiguous", Registration{PID: 7, RunID: "in-container"}, "GPU-a", ""},
		{"host pid", Registration{PID: 2001, RunID: "host-pid"}, "GPU-a", "host-pid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := NewRegistry(time.Minute, nil)
			if err := reg.Register(tc.reg); err != nil {
				t.Fatal(err)
			}
			w := NewWorkloads(procRoot, reg, nil, nil)
			_, per := w.Attribute(GPUInfo{UUID: tc.gpu}, []uint32{2001})
			if got := per[2001][KeyRunID]; got != tc.want {
				t.Errorf("run_id = %q, want %q", got, tc.want)
			}
		})
	}
}
