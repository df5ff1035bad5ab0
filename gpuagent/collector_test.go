//go:build cgo

package gpuagent

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestMain(m *testing.M) {
	// BenchmarkAgentFootprint re-executes this binary as the measured agent.
	if cfg := os.Getenv(footprintChildEnv); cfg != "" {
		os.Exit(footprintChild(cfg))
	}
	goleak.VerifyTestMain(m)
}

func renderText(tb testing.TB, snap Snapshot, naming Naming) string {
	tb.Helper()
	r := &Renderer{Naming: naming, Hostname: "node-1"}
	var buf bytes.Buffer
	if err := WriteText(&buf, r.Render(snap)); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

func golden(tb testing.TB, name, got string) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		tb.Errorf("%s differs from golden (review, then -update):\n%s", name, diffLines(string(want), got))
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("- " + a + "\n+ " + c + "\n")
		}
	}
	return b.String()
}

func TestGoldenExposition(t *testing.T) {
	for _, tc := range []struct {
		node   string
		naming Naming
		file   string
	}{
		{"dgxa100", NamingDCGM, "dgxa100.prom"},
		{"dgxh100", NamingDCGM, "dgxh100.prom"},
		{"dgxh100", NamingOTel, "dgxh100_otel.prom"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			n := newMockNode(t, tc.node)
			n.gpus[1].reasons = 0x4 | 0x40 // sw power cap + hw thermal slowdown
			clk := newClock()
			c := newTestCollector(t, n, clk)
			// Two collections an interval apart: GPM figures (Hopper) need
			// the window between two samples.
			c.Collect(context.Background())
			clk.Advance(10 * time.Second)
			snap := c.Collect(context.Background())
			if !snap.NVMLUp || len(snap.GPUs) != 8 {
				t.Fatalf("up=%v gpus=%d, want up and 8 GPUs", snap.NVMLUp, len(snap.GPUs))
			}
			golden(t, tc.file, renderText(t, snap, tc.naming))
		})
	}
}

// sampleValue returns the value of def on GPU gpu with the given extra
// labels, and whether it exists.
func sampleValue(snap Snapshot, gpu int, def *MetricDef, labels ...Label) (float64, bool) {
	for _, s := range snap.GPUs[gpu].Samples {
		if s.Def != def {
			continue
		}
		match := true
		for _, want := range labels {
			if labelValue(s.Labels, want.Name) != want.Value {
				match = false
			}
		}
		if match {
			return s.Value, true
		}
	}
	return 0, false
}

func TestUnitConversions(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	c := newTestCollector(t, n, nil)
	snap := c.Collect(context.Background())
	tests := []struct {
		name   string
		def    *MetricDef
		labels []Label
		want   float64
	}{
		{"power mW to W", MetricPower, nil, 252.123},
		{"power limit mW to W", MetricPowerLimit, nil, 400},
		{"energy stays mJ like dcgm", MetricEnergy, nil, 3_002_500},
		{"fb used bytes to MiB", MetricFBUsed, nil, 3 * 1024},
		{"fb total bytes to MiB", MetricFBTotal, nil, 40 * 1024},
		{"fb free excludes reserved", MetricFBFree, nil, 40*1024 - 3*1024 - 512},
		{"fb reserved bytes to MiB", MetricFBReserved, nil, 512},
		{"sm clock MHz", MetricSMClock, nil, 1410},
		{"gpu util percent", MetricGPUUtil, nil, 25},
		{"memory temperature from field value", MetricMemTemp, nil, 52},
		{"violation ns to s", MetricClockEventSeconds, []Label{{"reason", "power"}}, 1.5},
		{"thermal violation s", MetricClockEventSeconds, []Label{{"reason", "thermal"}}, 2},
		{"nvlink total KiB, all links aggregate", MetricNVLinkBandwidthTotal, nil, 12*(1<<10) + 66 + 12*(2<<10)},
		{"nvlink per link tx", MetricNVLinkIO, []Label{{"link", "5"}, {"direction", "tx"}}, 1<<10 + 5},
		{"nvlink crc flit summed over links", MetricNVLinkCRCFlit, nil, 2 * 66},
		{"nvlink crc flit on one link", MetricNVLinkErrors, []Label{{"link", "4"}, {"error_type", "crc_flit"}}, 8},
		{"pcie tx KB", MetricPCIeTx, nil, 1002},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sampleValue(snap, 2, tc.def, tc.labels...)
			if !ok {
				t.Fatalf("%s missing", tc.def.DCGM)
			}
			if got != tc.want {
				t.Errorf("%s = %v, want %v", tc.def.DCGM, got, tc.want)
			}
		})
	}
	// OTel naming converts to base units.
	otel := []struct {
		def      *MetricDef
		in, want float64
	}{
		{MetricEnergy, 2500, 2.5},
		{MetricFBUsed, 1, 1 << 20},
		{MetricGPUUtil, 25, 0.25},
		{MetricSMClock, 1410, 1.41e9},
	}
	for _, o := range otel {
		if got := o.def.Value(NamingOTel, o.in); got != o.want {
			t.Errorf("%s otel value(%v) = %v, want %v", o.def.OTel, o.in, got, o.want)
		}
		if got := o.def.Value(NamingDCGM, o.in); got != o.in {
			t.Errorf("%s dcgm value changed: %v", o.def.DCGM, got)
		}
	}
}

func TestFieldValueDecoding(t *testing.T) {
	var v nvml.FieldValue
	putF64(&v, 12.5)
	if got, ok := FieldValueFloat(v.ValueType, v.Value); !ok || got != 12.5 {
		t.Errorf("double: %v %v", got, ok)
	}
	putU32(&v, 7)
	if got, ok := FieldValueFloat(v.ValueType, v.Value); !ok || got != 7 {
		t.Errorf("uint: %v %v", got, ok)
	}
	if _, ok := FieldValueFloat(99, v.Value); ok {
		t.Error("unknown value type decoded")
	}
}

func TestEnergyMonotonic(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	c := newTestCollector(t, n, nil)
	a := c.Collect(context.Background())
	b := c.Collect(context.Background())
	for i := range a.GPUs {
		ea, _ := sampleValue(a, i, MetricEnergy)
		eb, _ := sampleValue(b, i, MetricEnergy)
		if eb <= ea {
			t.Errorf("gpu %d energy not increasing: %v then %v", i, ea, eb)
		}
	}
}

func TestPerCallErrors(t *testing.T) {
	tests := []struct {
		name    string
		call    string
		ret     nvml.Return
		missing *MetricDef
		counted bool
	}{
		{"not supported omits one metric", "GetPowerUsage", nvml.ERROR_NOT_SUPPORTED, MetricPower, false},
		{"unknown error omits and counts", "GetTemperatureThreshold", nvml.ERROR_UNKNOWN, MetricSlowdownTemp, true},
		{"no permission on ecc", "GetTotalEccErrors", nvml.ERROR_NO_PERMISSION, MetricECCDBEAgg, true},
		{"field value not supported", "field82", nvml.ERROR_NOT_SUPPORTED, MetricMemTemp, false},
		{"whole field call fails", "GetFieldValues", nvml.ERROR_NOT_SUPPORTED, MetricNVLinkBandwidthTotal, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newMockNode(t, "dgxa100")
			n.gpus[3].setErr(tc.call, tc.ret)
			c := newTestCollector(t, n, nil)
			snap := c.Collect(context.Background())
			if _, ok := sampleValue(snap, 3, tc.missing); ok {
				t.Errorf("%s present on the failing GPU", tc.missing.DCGM)
			}
			if _, ok := sampleValue(snap, 4, tc.missing); !ok {
				t.Errorf("%s missing on a healthy GPU", tc.missing.DCGM)
			}
			// The rest of the failing GPU still reports.
			if _, ok := sampleValue(snap, 3, MetricGPUUtil); !ok {
				t.Error("other metrics of the failing GPU missing")
			}
			if snap.GPUs[3].Failed {
				t.Error("GPU marked failed for a per-call error")
			}
			if got := snap.Errors[tc.call] > 0; got != tc.counted {
				t.Errorf("error counted = %v, want %v (errors %v)", got, tc.counted, snap.Errors)
			}
		})
	}
}

func TestGPULost(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	c := newTestCollector(t, n, nil)
	first := c.Collect(context.Background())
	n.gpus[6].setErr("GetUtilizationRates", nvml.ERROR_GPU_IS_LOST)
	snap := c.Collect(context.Background())
	if !snap.GPUs[6].Failed || len(snap.GPUs[6].Samples) != 0 {
		t.Fatalf("lost GPU: failed=%v samples=%d", snap.GPUs[6].Failed, len(snap.GPUs[6].Samples))
	}
	for i, g := range snap.GPUs {
		if i != 6 && (g.Failed || len(g.Samples) == 0) {
			t.Errorf("healthy GPU %d affected: failed=%v samples=%d", i, g.Failed, len(g.Samples))
		}
	}
	text := renderText(t, snap, NamingDCGM)
	want := `gpu_agent_gpu_failed{DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="node-1",UUID="` + first.GPUs[6].Info.UUID + `"`
	if !strings.Contains(text, want) || !strings.Contains(text, "gpu_agent_nvml_up 1") {
		t.Errorf("exposition lacks failed gauge %q:\n%s", want, text[:min(len(text), 2000)])
	}
	// A handle that cannot even be obtained keeps the UUID seen before.
	n.waitRegistered(t)
	n.srv.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 6 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return n.srv.Devices[i], nvml.SUCCESS
	}
	snap = c.Collect(context.Background())
	if !snap.GPUs[6].Failed || snap.GPUs[6].Info.UUID != first.GPUs[6].Info.UUID {
		t.Errorf("lost handle: failed=%v uuid=%q", snap.GPUs[6].Failed, snap.GPUs[6].Info.UUID)
	}
}

func TestNoDriver(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	inits := 0
	n.srv.InitFunc = func() nvml.Return { inits++; return nvml.ERROR_LIBRARY_NOT_FOUND }
	called := ""
	n.srv.DeviceGetCountFunc = func() (int, nvml.Return) { called = "DeviceGetCount"; return 0, nvml.ERROR_UNINITIALIZED }
	n.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { called = "EventSetCreate"; return nil, nvml.ERROR_UNINITIALIZED }
	n.srv.ShutdownFunc = func() nvml.Return { called = "Shutdown"; return nvml.SUCCESS }
	n.srv.LookupSymbolFunc = func(string) error { called = "LookupSymbol"; return nil }
	clk := newClock()
	c := newTestCollector(t, n, clk)
	snap := c.Collect(context.Background())
	if snap.NVMLUp || len(snap.GPUs) != 0 {
		t.Fatalf("up=%v gpus=%d after failed init", snap.NVMLUp, len(snap.GPUs))
	}
	if !nvmlUpRe(0).MatchString(renderText(t, snap, NamingDCGM)) {
		t.Error("gpu_agent_nvml_up 0 not served")
	}
	// Backoff: no retry before the delay, one retry after, doubling.
	c.Collect(context.Background())
	if inits != 1 {
		t.Fatalf("Init called %d times before backoff elapsed", inits)
	}
	clk.Advance(nvmlInitBackoffMin)
	c.Collect(context.Background())
	if inits != 2 {
		t.Fatalf("Init called %d times after backoff, want 2", inits)
	}
	clk.Advance(nvmlInitBackoffMin)
	c.Collect(context.Background())
	if inits != 2 {
		t.Fatalf("backoff did not double: %d inits", inits)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if called != "" {
		t.Fatalf("%s called after a failed Init", called)
	}
	// The driver appears: the next due retry succeeds and collection starts.
	n.srv.InitFunc = func() nvml.Return { return nvml.SUCCESS }
	n.srv.DeviceGetCountFunc = func() (int, nvml.Return) { return len(n.srv.Devices), nvml.SUCCESS }
	n.srv.SetMockFuncs()
	n2 := newMockNode(t, "dgxa100")
	n.srv.EventSetCreateFunc = n2.srv.EventSetCreateFunc
	n.srv.LookupSymbolFunc = n2.srv.LookupSymbolFunc
	clk.Advance(nvmlInitBackoffMax)
	snap = c.Collect(context.Background())
	if !snap.NVMLUp || len(snap.GPUs) != 8 {
		t.Fatalf("after driver appeared: up=%v gpus=%d", snap.NVMLUp, len(snap.GPUs))
	}
}

func TestXIDEventsCountRepeats(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	c := newTestCollector(t, n, nil)
	snap := c.Collect(context.Background()) // Init starts the event loop
	if !snap.NVMLUp {
		t.Fatal("nvml down")
	}
	dev3 := n.srv.Devices[3]
	for _, d := range []nvml.EventData{
		{Device: dev3, EventType: nvml.EventTypeXidCriticalError, EventData: 79},
		{Device: dev3, EventType: nvml.EventTypeXidCriticalError, EventData: 79},
		{Device: dev3, EventType: nvml.EventTypeXidCriticalError, EventData: 48},
		{Device: n.srv.Devices[5], EventType: nvml.EventTypeDoubleBitEccError},
	} {
		n.events <- d
	}
	n.waitRegistered(t)
	var got []Event
	for len(got) < 4 {
		select {
		case ev := <-c.Events():
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d events delivered", len(got))
		}
	}
	if got[0].Kind != EventXID || got[0].Code != 79 || got[0].GPU.Index != 3 || got[0].GPU.UUID != snap.GPUs[3].Info.UUID {
		t.Errorf("first event = %+v", got[0])
	}
	if !strings.Contains(got[0].Message(), "XID 79") || !strings.Contains(got[0].Message(), "fallen off the bus") {
		t.Errorf("message = %q", got[0].Message())
	}
	if got[3].Kind != EventECCDBE || got[3].GPU.Index != 5 {
		t.Errorf("ecc event = %+v", got[3])
	}
	snap = c.Collect(context.Background())
	if v, _ := sampleValue(snap, 3, MetricXIDErrors, Label{"xid", "79"}); v != 2 {
		t.Errorf("xid 79 count = %v, want 2 (a repeat must count)", v)
	}
	if v, _ := sampleValue(snap, 3, MetricXIDErrors, Label{"xid", "48"}); v != 1 {
		t.Errorf("xid 48 count = %v, want 1", v)
	}
	if _, ok := sampleValue(snap, 4, MetricXIDErrors); ok {
		t.Error("xid counted on the wrong GPU")
	}
	// dcgm-exporter's gauge: the last XID, labelled with its code and text.
	if v, ok := sampleValue(snap, 3, MetricXIDLast, Label{"err_code", "48"}, Label{"err_msg", "double bit ECC error"}); !ok || v != 48 {
		t.Errorf("last xid on gpu 3 = %v (present %v), want 48", v, ok)
	}
	if v, ok := sampleValue(snap, 4, MetricXIDLast, Label{"err_code", "0"}, Label{"err_msg", "No Error"}); !ok || v != 0 {
		t.Errorf("last xid on gpu 4 = %v (present %v), want 0 / No Error", v, ok)
	}
	for i := range n.srv.Devices {
		if m := n.registered(i); m != eventMask {
			t.Errorf("gpu %d registered mask %#x, want %#x", i, m, eventMask)
		}
	}
}

func TestProcessesAndUtilization(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	f := n.gpus[2]
	f.procs = []nvml.ProcessInfo{
		{Pid: 4242, UsedGpuMemory: 10 << 30, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF},
		{Pid: 4343, UsedGpuMemory: 512 << 20, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF},
	}
	f.procUtil = []nvml.ProcessUtilizationSample{
		{Pid: 4242, TimeStamp: 100, SmUtil: 50, MemUtil: 20},
		{Pid: 4242, TimeStamp: 200, SmUtil: 70, MemUtil: 30},
		{Pid: 4343, TimeStamp: 150, SmUtil: 5, MemUtil: 1},
		{Pid: 9999, TimeStamp: 150, SmUtil: 5, MemUtil: 1}, // exited
	}
	c := newTestCollector(t, n, nil)
	snap := c.Collect(context.Background())
	ps := snap.GPUs[2].Processes
	if len(ps) != 2 {
		t.Fatalf("%d processes, want 2", len(ps))
	}
	vals := map[string]float64{}
	for _, p := range ps {
		for _, s := range p.Samples {
			vals[s.Def.DCGM+"/"+string(rune('0'+p.PID%10))] = s.Value
		}
	}
	if vals["weft_gpu_process_memory_used/2"] != 10240 || vals["weft_gpu_process_memory_used/3"] != 512 {
		t.Errorf("process memory MiB = %v", vals)
	}
	if vals["weft_gpu_process_sm_util/2"] != 70 || vals["weft_gpu_process_mem_util/2"] != 30 {
		t.Errorf("newest sample not used: %v", vals)
	}
	// The next collection asks only for samples after the last timestamp.
	snap = c.Collect(context.Background())
	for _, p := range snap.GPUs[2].Processes {
		if len(p.Samples) != 1 {
			t.Errorf("pid %d: stale utilization re-reported: %d samples", p.PID, len(p.Samples))
		}
	}
	text := renderText(t, snap, NamingDCGM)
	if !strings.Contains(text, `weft_gpu_process_memory_used{DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="node-1",UUID="GPU-00000002-0000-4000-8000-000000000002",device="nvidia2",gpu="2",gpu_uuid="GPU-00000002-0000-4000-8000-000000000002",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:12:00.0",pid="4242"} 10240`) {
		t.Errorf("per-process series missing:\n%s", grep(text, "process"))
	}
}

func grep(text, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestMIG(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	dev := n.srv.Devices[0]
	if ret, _ := dev.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	mkMIG := func(gi, ci int, name, uuid string, used uint64) nvml.Device {
		return &mock.Device{
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
			GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetNameFunc:              func() (string, nvml.Return) { return name, nvml.SUCCESS },
			GetMemoryInfoFunc:        func() (nvml.Memory, nvml.Return) { return nvml.Memory{Used: used}, nvml.SUCCESS },
		}
	}
	n.gpus[0].migDevices = []nvml.Device{
		mkMIG(1, 0, "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "MIG-aaaa", 1<<30),
		mkMIG(2, 0, "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "MIG-bbbb", 256<<20),
	}
	n.gpus[0].procs = []nvml.ProcessInfo{{Pid: 77, UsedGpuMemory: 1 << 30, GpuInstanceId: 1, ComputeInstanceId: 0}}
	c := newTestCollector(t, n, nil)
	snap := c.Collect(context.Background())
	text := renderText(t, snap, NamingDCGM)
	for _, want := range []string{
		`weft_gpu_mig_instance_info{DCGM_FI_DRIVER_VERSION="550.54.15",GPU_CI_ID="0",GPU_I_ID="1",GPU_I_PROFILE="3g.20gb",`,
		`weft_gpu_mig_fb_used{DCGM_FI_DRIVER_VERSION="550.54.15",GPU_CI_ID="0",GPU_I_ID="2",GPU_I_PROFILE="1g.5gb",`,
		`mig_uuid="MIG-bbbb"`,
		`weft_gpu_process_memory_used{DCGM_FI_DRIVER_VERSION="550.54.15",GPU_CI_ID="0",GPU_I_ID="1",`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %s in:\n%s", want, grep(text, "mig"))
		}
	}
	if v, _ := sampleValue(snap, 0, MetricMIGFBUsed, Label{"GPU_I_ID", "2"}); v != 256 {
		t.Errorf("mig fb used = %v MiB, want 256", v)
	}
	if _, ok := sampleValue(snap, 1, MetricMIGInstance); ok {
		t.Error("MIG series on a GPU without MIG")
	}
}

func TestPreAmpereRetiredPages(t *testing.T) {
	n := newMockNode(t, "dgxa100")
	dev := n.srv.Devices[0].(*server.Device)
	dev.GetArchitectureFunc = func() (nvml.DeviceArchitecture, nvml.Return) { return nvml.DEVICE_ARCH_VOLTA, nvml.SUCCESS }
	c := newTestCollector(t, n, nil)
	snap := c.Collect(context.Background())
	if v, ok := sampleValue(snap, 0, MetricRetiredDBE); !ok || v != 2 {
		t.Errorf("retired DBE = %v, %v", v, ok)
	}
	if _, ok := sampleValue(snap, 0, MetricRemapCorr); ok {
		t.Error("row remapping reported on a pre-Ampere GPU")
	}
	if _, ok := sampleValue(snap, 1, MetricRetiredSBE); ok {
		t.Error("retired pages reported on an Ampere GPU")
	}
	if v, _ := sampleValue(snap, 5, MetricRemapPending); v != 1 {
		t.Errorf("remap pending = %v on GPU 5", v)
	}
}

func TestSymbolFallbacks(t *testing.T) {
	tests := []struct {
		name    string
		missing string
		check   func(t *testing.T, n *mockNode, snap Snapshot)
	}{
		{"memory info v1 without reserved split", "nvmlDeviceGetMemoryInfo_v2", func(t *testing.T, _ *mockNode, snap Snapshot) {
			if v, _ := sampleValue(snap, 0, MetricFBFree); v != 40*1024-1024 {
				t.Errorf("fb free = %v, want v1 value", v)
			}
		}},
		{"throttle reasons on old drivers", "nvmlDeviceGetCurrentClocksEventReasons", func(t *testing.T, _ *mockNode, snap Snapshot) {
			if v, ok := sampleValue(snap, 1, MetricClockEventActive, Label{"reason", "sw_power_cap"}); !ok || v != 1 {
				t.Errorf("sw_power_cap active = %v %v", v, ok)
			}
		}},
		{"no row remapping symbol", "nvmlDeviceGetRemappedRows", func(t *testing.T, _ *mockNode, snap Snapshot) {
			if _, ok := sampleValue(snap, 0, MetricRemapCorr); ok {
				t.Error("remapped rows called without the symbol")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newMockNode(t, "dgxa100")
			n.missing[tc.missing] = true
			n.gpus[1].reasons = 0x4
			called := false
			dev := n.srv.Devices[0].(*server.Device)
			switch tc.missing {
			case "nvmlDeviceGetMemoryInfo_v2":
				dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { called = true; return nvml.Memory_v2{}, nvml.SUCCESS }
			case "nvmlDeviceGetCurrentClocksEventReasons":
				dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { called = true; return 0, nvml.SUCCESS }
			case "nvmlDeviceGetRemappedRows":
				dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { called = true; return 0, 0, false, false, nvml.SUCCESS }
			}
			snap := newTestCollector(t, n, nil).Collect(context.Background())
			if called {
				t.Errorf("%s called although LookupSymbol reported it missing", tc.missing)
			}
			tc.check(t, n, snap)
		})
	}
}

func TestVGPULicenseStatus(t *testing.T) {
	lic := func(state uint32) *nvml.GridLicensableFeatures {
		f := &nvml.GridLicensableFeatures{IsGridLicenseSupported: 1, LicensableFeaturesCount: 2}
		f.GridLicensableFeatures[0] = nvml.GridLicensableFeature{FeatureCode: uint32(nvml.GRID_LICENSE_FEATURE_CODE_NVIDIA_RTX), FeatureState: 1}
		f.GridLicensableFeatures[1] = nvml.GridLicensableFeature{FeatureCode: uint32(nvml.GRID_LICENSE_FEATURE_CODE_VGPU), FeatureState: state}
		return f
	}
	n := newMockNode(t, "dgxh100")
	n.gpus[1].license = lic(1)
	n.gpus[2].license = lic(0)
	n.gpus[3].license = &nvml.GridLicensableFeatures{IsGridLicenseSupported: 1} // no vGPU feature listed
	n.gpus[4].setErr("GetGridLicensableFeatures", nvml.ERROR_NOT_SUPPORTED)
	snap := newTestCollector(t, n, nil).Collect(context.Background())
	for _, tc := range []struct {
		gpu     int
		want    float64
		present bool
	}{{0, 0, true}, {1, 1, true}, {2, 0, true}, {3, 0, false}, {4, 0, false}} {
		v, ok := sampleValue(snap, tc.gpu, MetricVGPULicense)
		if ok != tc.present || v != tc.want {
			t.Errorf("gpu %d: license status %v (present %v), want %v (present %v)", tc.gpu, v, ok, tc.want, tc.present)
		}
	}
	if len(snap.Errors) != 0 {
		t.Errorf("errors: %v", snap.Errors)
	}
}
