package gputelemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/gpuagent"
)

// ctxAttributor gives every GPU and process the same workload context.
type ctxAttributor gpuagent.Context

func (a ctxAttributor) Attribute(_ gpuagent.GPUInfo, pids []uint32) (gpuagent.Context, map[uint32]gpuagent.Context) {
	per := map[uint32]gpuagent.Context{}
	for _, p := range pids {
		per[p] = gpuagent.Context(a)
	}
	return gpuagent.Context(a), per
}

// fleetSample is one generated sample with what identifies its series.
type fleetSample struct {
	dev   *Device
	kind  Kind
	extra []Label
	value float64
}

// agentFleet steps a fleet that exercises every family once: H100 (one
// with MIG), A100 and V100 GPUs running a process, an XID, a lost GPU, and
// one node whose NVML reports no driver version.
func agentFleet(t *testing.T) (gpuSamples []fleetSample, host HostReading) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	devs := []*Device{NewDevice(rng, 0, H100), NewDevice(rng, 1, H100), NewDevice(rng, 2, A100), NewDevice(rng, 3, V100), NewDevice(rng, 4, H100)}
	devs[1].EnableMIG(2, "3g.40gb")
	devs[2].DriverVersion = ""
	for step := 0; step < 3; step++ {
		for i, d := range devs {
			f := Faults{}
			if i == 0 && step == 1 {
				f.XID = []int{79}
			}
			if i == 4 && step == 2 {
				f.Lost = true
			}
			a := Activity{Phase: PhaseTraining, Step: 30 + step, Warm: 10, Level: 95, Tensor: 0.4, FBMiB: 60_000, PID: 1234 + i}
			r := d.Step(rng, 15_000, a, f)
			if step < 2 {
				continue
			}
			EmitGPU(AllKinds(), r, EmitterFunc(func(k Kind, v float64, extra []Label) {
				gpuSamples = append(gpuSamples, fleetSample{d, k, append([]Label(nil), extra...), v})
			}))
		}
	}
	host = HostReading{NVMLUp: 1, Queue: true, Loki: true, Errors: []CallErrors{NewCallErrors("GetPcieThroughput")}}
	return gpuSamples, host
}

// TestAgentParity checks the generator against weft-agent's metric set:
// every family of gpuagent.AllMetrics is generated with the agent's type,
// nothing else is generated under DCGM_, weft_gpu_ or gpu_agent_ names, and
// each GPU series' label set is exactly what the agent's renderer gives the
// same sample.
func TestAgentParity(t *testing.T) {
	samples, host := agentFleet(t)
	got := map[string]Type{}
	for _, s := range samples {
		got[s.kind.MetricName()] = s.kind.Family().Type
	}
	EmitHost(AllKinds(), &host, EmitterFunc(func(k Kind, _ float64, _ []Label) { got[k.MetricName()] = k.Family().Type }))

	want := map[string]gpuagent.MetricType{}
	for _, d := range gpuagent.AllMetrics {
		want[d.Name(gpuagent.NamingDCGM)] = d.TypeFor(gpuagent.NamingDCGM)
	}
	for name, typ := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("agent family %s is not generated: add it to the family table in families.go", name)
		case g.String() != typ.String():
			t.Errorf("%s: generated as %s, the agent exports a %s", name, g, typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && (strings.HasPrefix(name, "DCGM_") || strings.HasPrefix(name, "weft_gpu") || strings.HasPrefix(name, "gpu_agent_")) {
			t.Errorf("%s is generated but weft-agent does not export it", name)
		}
	}

	// Label sets, through the agent's own renderer.
	ctx := gpuagent.Context{"run_id": "r42", "pod": "trainer-0", "namespace": "pretrain", "rank": "3"}
	r := gpuagent.Renderer{Naming: gpuagent.NamingDCGM, Hostname: "node-6", Attr: ctxAttributor(ctx)}
	defs := map[string]*gpuagent.MetricDef{}
	for _, d := range gpuagent.AllMetrics {
		defs[d.DCGM] = d
	}
	var ctxLabels []Label
	for k, v := range ctx {
		ctxLabels = append(ctxLabels, Label{k, v})
	}
	checked := map[string]bool{}
	for _, s := range samples {
		name := s.kind.MetricName()
		def := defs[name]
		if def == nil {
			continue
		}
		info := gpuagent.GPUInfo{Index: s.dev.Index, Minor: s.dev.Minor, UUID: s.dev.UUID, PCIBusID: s.dev.PCIBusID, Model: s.dev.Model.Name,
			DriverVersion: s.dev.DriverVersion}
		snap := gpuagent.GPUSnapshot{Info: info}
		var extra []gpuagent.Label
		pid := ""
		for _, l := range s.extra {
			if l.Name == "pid" {
				pid = l.Value
				continue
			}
			extra = append(extra, gpuagent.Label{Name: l.Name, Value: l.Value})
		}
		smp := gpuagent.Sample{Def: def, Labels: extra, Value: s.value}
		switch {
		case pid != "":
			p, _ := strconv.Atoi(pid)
			snap.Processes = []gpuagent.ProcessSample{{PID: uint32(p), Samples: []gpuagent.Sample{smp}}}
		case name == FamilyGPUFailed:
			snap.Failed = s.value == 1
		default:
			snap.Samples = []gpuagent.Sample{smp}
		}
		var rendered []gpuagent.Label
		for _, rs := range r.Render(gpuagent.Snapshot{NVMLUp: true, GPUs: []gpuagent.GPUSnapshot{snap}}) {
			if rs.Name == name {
				rendered = rs.Labels
			}
		}
		ours := SeriesLabels("", s.dev.IdentityLabels("node-6"), ctxLabels, s.extra)
		if !slices.EqualFunc(ours, rendered, func(a Label, b gpuagent.Label) bool { return a.Name == b.Name && a.Value == b.Value }) {
			t.Errorf("%s: labels %v, the agent renders %v", name, ours, rendered)
		}
		checked[name] = true
	}
	if len(checked) < 40 {
		t.Errorf("label sets checked for %d families only", len(checked))
	}
}

// TestXIDMessagesAreTheAgents holds the err_msg labels of
// DCGM_FI_DEV_XID_ERRORS to weft-agent's XID meanings, which its event log
// lines carry after the GPU ("XID 48 on GPU 0 (uuid): double bit ECC error").
func TestXIDMessagesAreTheAgents(t *testing.T) {
	known := 0
	for code := 0; code < 256; code++ {
		msg := gpuagent.Event{Kind: gpuagent.EventXID, Code: uint64(code), GPU: gpuagent.GPUInfo{UUID: "u"}}.Message()
		agent, ok := strings.CutPrefix(msg, fmt.Sprintf("XID %d on GPU 0 (u)", code))
		if !ok {
			t.Fatalf("XID %d: the agent's log line %q changed shape", code, msg)
		}
		want := "Unknown Error"
		switch {
		case code == 0:
			want = "No Error"
		case agent != "":
			want = strings.TrimPrefix(agent, ": ")
			known++
		}
		if got := xidMessage(code); got != want {
			t.Errorf("XID %d: err_msg %q, the agent's is %q", code, got, want)
		}
	}
	if known != len(xidMessages) {
		t.Errorf("the agent knows %d XIDs, the generator %d", known, len(xidMessages))
	}
}

// TestEventStreamIsTheAgents holds EventStream to weft-agent's Loki pusher:
// an XID event with a wide workload context, pushed by gpuagent.LokiPusher,
// arrives with exactly the stream labels and structured metadata
// EventStream gives, within Loki's default label limit.
func TestEventStreamIsTheAgents(t *testing.T) {
	var got struct {
		Streams []struct {
			Stream map[string]string   `json:"stream"`
			Values [][]json.RawMessage `json:"values"`
		} `json:"streams"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode push: %v", err)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	d := NewDevice(rand.New(rand.NewPCG(1, 1)), 3, H100)
	d.DriverVersion = "550.54.15"
	ctx := []Label{{"team", "pretrain"}, {"run_id", "r42"}, {"pod", "trainer-3"}, {"namespace", "ml"}, {"rank", "3"},
		{"model", "llama-3-70b"}, {"dataset", "fineweb"}, {"container", "trainer"}, {"pod_uid", "u-1"}, {"cluster", "c1"}, {"empty", ""}}
	labels := EventLabels("xid", "xid", "79", d.IdentityLabels("node-6"), ctx)
	var line gpuagent.EventLine
	for _, l := range labels {
		line.Labels = append(line.Labels, gpuagent.Label{Name: l.Name, Value: l.Value})
	}
	line.Time, line.Line = time.Unix(100, 0), "XID 79"
	if err := gpuagent.NewLokiPusher(srv.URL, nil).Push(context.Background(), []gpuagent.EventLine{line}); err != nil {
		t.Fatal(err)
	}
	stream, meta := EventStream(labels)
	if len(stream) != MaxEventStreamLabels || len(meta) == 0 {
		t.Fatalf("the test's context should overflow the limit: %d stream labels, %d metadata", len(stream), len(meta))
	}
	toMap := func(ls []Label) map[string]string {
		m := map[string]string{}
		for _, l := range ls {
			m[l.Name] = l.Value
		}
		return m
	}
	if len(got.Streams) != 1 || len(got.Streams[0].Values) != 1 || len(got.Streams[0].Values[0]) != 3 {
		t.Fatalf("pushed %+v", got)
	}
	var md map[string]string
	if err := json.Unmarshal(got.Streams[0].Values[0][2], &md); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Streams[0].Stream, toMap(stream)) {
		t.Errorf("agent stream %v, EventStream %v", got.Streams[0].Stream, stream)
	}
	if !maps.Equal(md, toMap(meta)) {
		t.Errorf("agent metadata %v, EventStream %v", md, meta)
	}
}
