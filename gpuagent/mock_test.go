//go:build cgo

package gpuagent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeGPU holds the telemetry a stubbed mock device reports. Tests change it
// between collections.
type fakeGPU struct {
	mu         sync.Mutex
	energyMJ   uint64
	reasons    uint64
	procs      []nvml.ProcessInfo
	procUtil   []nvml.ProcessUtilizationSample
	errs       map[string]nvml.Return // per call name
	links      int
	migDevices []nvml.Device
	gpm        bool                         // NVML GPM supported (Hopper and newer)
	gpmSeq     int                          // samples taken, to check window order
	gpmMissing map[uint32]bool              // GPM metric IDs answered NOT_SUPPORTED
	license    *nvml.GridLicensableFeatures // nil: bare metal (no GRID licensing)
}

func (f *fakeGPU) err(call string) nvml.Return {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.errs[call]; ok {
		return r
	}
	return nvml.SUCCESS
}

func (f *fakeGPU) setErr(call string, r nvml.Return) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.errs == nil {
		f.errs = map[string]nvml.Return{}
	}
	f.errs[call] = r
}

// mockNode is a dgxa100 or dgxh100 mock server with every telemetry call the
// mock leaves nil stubbed with deterministic values derived from the index.
type mockNode struct {
	srv     *server.Server
	gpus    []*fakeGPU
	events  chan nvml.EventData
	missing map[string]bool // symbols LookupSymbol reports missing
	mu      sync.Mutex
	regs    map[int]uint64 // GPU index → registered event mask
	// gpmAllocs and gpmFrees count GPM sample buffers (guarded by mu).
	gpmAllocs, gpmFrees int
	// eventWait is how long an event-set Wait blocks without an event:
	// short in tests (Close waits for it), the requested time in the
	// footprint run (as the driver blocks).
	eventWait func(ms uint32) time.Duration
}

func newMockNode(tb testing.TB, kind string) *mockNode {
	tb.Helper()
	n, err := newMockNodeKind(kind)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func newMockNodeKind(kind string) (*mockNode, error) {
	var srv *server.Server
	links := 12
	switch kind {
	case "dgxa100":
		srv = dgxa100.New()
	case "dgxh100":
		srv = dgxh100.New()
		links = 18
	default:
		return nil, fmt.Errorf("unknown node %q", kind)
	}
	n := &mockNode{srv: srv, events: make(chan nvml.EventData, 16), regs: map[int]uint64{},
		// GetTemperatureV returns a handle bound to the real library, which a
		// mock cannot provide; report it missing so the fallback is used.
		missing:   map[string]bool{"nvmlDeviceGetTemperatureV": true},
		eventWait: func(uint32) time.Duration { return 5 * time.Millisecond }}
	srv.LookupSymbolFunc = func(s string) error {
		if n.missing[s] {
			return errors.New("symbol not found")
		}
		return nil
	}
	srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
			WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
				select {
				case d := <-n.events:
					return d, nvml.SUCCESS
				case <-time.After(n.eventWait(ms)):
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
			},
		}, nvml.SUCCESS
	}
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		dev.UUID = fmt.Sprintf("GPU-%08d-0000-4000-8000-%012d", i, i)
		dev.PciBusID = fmt.Sprintf("00000000:%02X:00.0", 0x10+i)
		arch, _ := dev.GetArchitecture()
		f := &fakeGPU{energyMJ: 1_000_000 * uint64(i+1), links: links, gpm: arch >= nvml.DEVICE_ARCH_HOPPER}
		n.gpus = append(n.gpus, f)
		n.stub(i, dev, f)
	}
	n.stubGPM()
	return n, nil
}

func (n *mockNode) stub(i int, d *server.Device, f *fakeGPU) {
	u32 := uint32(i)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		for j, c := range d.PciBusID {
			p.BusId[j] = int8(c)
		}
		return p, f.err("GetPciInfo")
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: 10*u32 + 5, Memory: 20 + u32}, f.err("GetUtilizationRates")
	}
	d.GetEncoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return u32, 167000, f.err("GetEncoderUtilization") }
	d.GetDecoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 2 * u32, 167000, f.err("GetDecoderUtilization") }
	used := uint64(i+1) << 30 // (i+1) GiB
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		t := d.MemoryInfo.Total
		return nvml.Memory_v2{Total: t, Reserved: 512 << 20, Used: used, Free: t - used - 512<<20}, f.err("GetMemoryInfo_v2")
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		t := d.MemoryInfo.Total
		return nvml.Memory{Total: t, Used: used, Free: t - used}, f.err("GetMemoryInfo")
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40 + u32, f.err("GetTemperature") }
	d.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) {
		return 90, f.err("GetTemperatureThreshold")
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 250_123 + 1000*u32, f.err("GetPowerUsage") }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400_000, f.err("GetEnforcedPowerLimit") }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.energyMJ += 2500 // 2.5 J per collection
		return f.energyMJ, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		if t == nvml.CLOCK_SM {
			return 1410, f.err("GetClockInfo")
		}
		return 1215, f.err("GetClockInfo")
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.reasons, nvml.SUCCESS
	}
	d.GetCurrentClocksThrottleReasonsFunc = d.GetCurrentClocksEventReasonsFunc
	d.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
		if c == nvml.PCIE_UTIL_TX_BYTES {
			return 1000 + u32, f.err("GetPcieThroughput")
		}
		return 2000 + u32, f.err("GetPcieThroughput")
	}
	d.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return i, f.err("GetPcieReplayCounter") }
	d.GetFieldValuesFunc = func(vals []nvml.FieldValue) nvml.Return {
		if r := f.err("GetFieldValues"); r != nvml.SUCCESS {
			return r
		}
		for k := range vals {
			v := &vals[k]
			v.NvmlReturn = uint32(nvml.SUCCESS)
			switch v.FieldId {
			case nvml.FI_DEV_MEMORY_TEMP:
				putU32(v, 50+u32)
			case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
				if v.ScopeId == allScopes {
					putU64(v, uint64(f.links)*(1<<10)+uint64(f.links*(f.links-1)/2))
				} else {
					putU64(v, 1<<10+uint64(v.ScopeId)) // KiB on this link
				}
			case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
				if v.ScopeId == allScopes {
					putU64(v, uint64(f.links)*(2<<10))
				} else {
					putU64(v, 2<<10)
				}
			case nvml.FI_DEV_PERF_POLICY_POWER:
				putU64(v, 1_500_000_000) // 1.5 s in ns
			case nvml.FI_DEV_PERF_POLICY_THERMAL:
				putU64(v, uint64(i)*1_000_000_000)
			case nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
				putU64(v, uint64(i)*uint64(v.ScopeId)) // i errors on link 1, 2i on link 2, ...
			default:
				putU64(v, 0)
			}
			if r := f.err(fmt.Sprintf("field%d", v.FieldId)); r != nvml.SUCCESS {
				v.NvmlReturn = uint32(r)
			}
		}
		return nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		if link >= f.links {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if link == 3 && i == 2 {
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_ENABLED, f.err("GetNvLinkState")
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		return uint64(t)*10 + uint64(c), f.err("GetTotalEccErrors")
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return i, 0, i == 5, false, f.err("GetRemappedRows") }
	d.GetRetiredPages_v2Func = func(c nvml.PageRetirementCause) ([]uint64, []uint64, nvml.Return) {
		n := 1 + int(c)
		return make([]uint64, n), make([]uint64, n), f.err("GetRetiredPages_v2")
	}
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_DISABLED, f.err("GetRetiredPagesPendingStatus")
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		r := f.err("GetComputeRunningProcesses")
		f.mu.Lock()
		defer f.mu.Unlock()
		return append([]nvml.ProcessInfo(nil), f.procs...), r
	}
	d.GetProcessUtilizationFunc = func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []nvml.ProcessUtilizationSample
		for _, s := range f.procUtil {
			if s.TimeStamp > last {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return out, nvml.SUCCESS
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if k >= len(f.migDevices) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return f.migDevices[k], nvml.SUCCESS
	}
	d.GetGridLicensableFeaturesFunc = func() (nvml.GridLicensableFeatures, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.license == nil {
			return nvml.GridLicensableFeatures{}, f.errs["GetGridLicensableFeatures"]
		}
		return *f.license, nvml.SUCCESS
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return nvml.EventTypeAll, nvml.SUCCESS }
	d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
		n.mu.Lock()
		n.regs[i] = mask
		n.mu.Unlock()
		return nvml.SUCCESS
	}
	// Wrap the identity calls so tests can inject errors (e.g. GPU lost).
	uuidFn, nameFn := d.GetUUIDFunc, d.GetNameFunc
	d.GetUUIDFunc = func() (string, nvml.Return) {
		if r := f.err("GetUUID"); r != nvml.SUCCESS {
			return "", r
		}
		return uuidFn()
	}
	d.GetNameFunc = func() (string, nvml.Return) {
		if r := f.err("GetName"); r != nvml.SUCCESS {
			return "", r
		}
		return nameFn()
	}
}

func putU32(v *nvml.FieldValue, x uint32) {
	v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
	v.Value = [8]byte{}
	binary.LittleEndian.PutUint32(v.Value[:4], x)
}

func putU64(v *nvml.FieldValue, x uint64) {
	v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
	binary.LittleEndian.PutUint64(v.Value[:], x)
}

func putF64(v *nvml.FieldValue, x float64) {
	v.ValueType = uint32(nvml.VALUE_TYPE_DOUBLE)
	binary.LittleEndian.PutUint64(v.Value[:], math.Float64bits(x))
}

// registered returns the event mask registered for GPU i.
func (n *mockNode) registered(i int) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regs[i]
}

// waitRegistered blocks until the collector's event loop registered every
// GPU, after which it calls no device lookups (tests may then swap stubs).
func (n *mockNode) waitRegistered(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := range n.srv.Devices {
		for n.registered(i) == 0 {
			if time.Now().After(deadline) {
				tb.Fatalf("GPU %d never registered for events", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// fixedClock is a settable clock for tests.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fixedClock { return &fixedClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newTestCollector returns a collector over n, closed at test end.
func newTestCollector(tb testing.TB, n *mockNode, clk *fixedClock) *Collector {
	tb.Helper()
	if clk == nil {
		clk = newClock()
	}
	c := NewCollector(n.srv, nil, clk.Now)
	tb.Cleanup(func() { c.Close() })
	return c
}

// fakeGPMSample is a GPM sample buffer of the mock: which GPU it was taken
// on and in what order, so GpmMetricsGet can check it got two samples of one
// GPU, oldest first.
type fakeGPMSample struct {
	dev   int // -1 until taken
	seq   int
	freed bool
}

// The collector uses the library-level GPM calls; the sample's own methods
// are never called.
func (s *fakeGPMSample) Free() nvml.Return                   { return nvml.ERROR_NOT_SUPPORTED }
func (s *fakeGPMSample) Get(nvml.Device) nvml.Return         { return nvml.ERROR_NOT_SUPPORTED }
func (s *fakeGPMSample) MigGet(nvml.Device, int) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }

// gpmPercent and gpmMiBs are the values the mock's GPM reports on GPU i:
// percentages for the utilization metrics, MiB/s for throughputs.
func gpmPercent(id nvml.GpmMetricId, i int) float64 { return float64(int(id)*3 + i) }
func gpmMiBs(id nvml.GpmMetricId, i int) float64    { return 1000*float64(id) + 0.5 + float64(i) }

func (n *mockNode) index(d nvml.Device) int {
	for i, dev := range n.srv.Devices {
		if dev == d {
			return i
		}
	}
	return -1
}

// stubGPM stubs NVML's GPM calls: support per GPU from fakeGPU.gpm, sample
// buffers counted so tests see every one freed, and metrics derived from
// the GPU index once two ordered samples of one GPU are given.
func (n *mockNode) stubGPM() {
	n.srv.GpmQueryDeviceSupportFunc = func(d nvml.Device) (nvml.GpmSupport, nvml.Return) {
		i := n.index(d)
		if i < 0 {
			return nvml.GpmSupport{}, nvml.ERROR_INVALID_ARGUMENT
		}
		f := n.gpus[i]
		if r := f.err("GpmQueryDeviceSupport"); r != nvml.SUCCESS {
			return nvml.GpmSupport{}, r
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: uint32(b2f(f.gpm))}, nvml.SUCCESS
	}
	n.srv.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		n.mu.Lock()
		n.gpmAllocs++
		n.mu.Unlock()
		return &fakeGPMSample{dev: -1}, nvml.SUCCESS
	}
	n.srv.GpmSampleFreeFunc = func(s nvml.GpmSample) nvml.Return {
		fs, ok := s.(*fakeGPMSample)
		if !ok || fs.freed {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		fs.freed = true
		n.mu.Lock()
		n.gpmFrees++
		n.mu.Unlock()
		return nvml.SUCCESS
	}
	n.srv.GpmSampleGetFunc = func(d nvml.Device, s nvml.GpmSample) nvml.Return {
		fs, ok := s.(*fakeGPMSample)
		i := n.index(d)
		if !ok || fs.freed || i < 0 {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		f := n.gpus[i]
		if r := f.err("GpmSampleGet"); r != nvml.SUCCESS {
			return r
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.gpmSeq++
		fs.dev, fs.seq = i, f.gpmSeq
		return nvml.SUCCESS
	}
	n.srv.GpmMetricsGetFunc = func(mg *nvml.GpmMetricsGetType) nvml.Return {
		s1, ok1 := mg.Sample1.(*fakeGPMSample)
		s2, ok2 := mg.Sample2.(*fakeGPMSample)
		if mg.Version != nvml.GPM_METRICS_GET_VERSION || !ok1 || !ok2 || s1 == s2 || s1.freed || s2.freed ||
			s1.dev < 0 || s1.dev != s2.dev || s1.seq >= s2.seq || int(mg.NumMetrics) > len(mg.Metrics) {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		f := n.gpus[s1.dev]
		if r := f.err("GpmMetricsGet"); r != nvml.SUCCESS {
			return r
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for k := range mg.NumMetrics {
			m := &mg.Metrics[k]
			id := nvml.GpmMetricId(m.MetricId)
			m.NvmlReturn, m.Value = uint32(nvml.SUCCESS), 0
			switch {
			case f.gpmMissing[m.MetricId]:
				m.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			case id == nvml.GPM_METRIC_PCIE_TX_PER_SEC || id == nvml.GPM_METRIC_PCIE_RX_PER_SEC ||
				id == nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC || id == nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
				m.Value = gpmMiBs(id, s1.dev)
			default:
				m.Value = gpmPercent(id, s1.dev)
			}
		}
		return nvml.SUCCESS
	}
}

// gpmBalance returns the GPM sample buffers allocated and freed so far.
func (n *mockNode) gpmBalance() (allocs, frees int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gpmAllocs, n.gpmFrees
}
