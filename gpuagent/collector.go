//go:build cgo

package gpuagent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Collector reads GPU telemetry through an nvml.Interface. It initialises
// NVML lazily and retries a failed Init with exponential backoff, and never
// calls another NVML function while Init has not succeeded. Collect may be
// called from one goroutine at a time; the XID event loop it starts runs in
// its own goroutine until Close.
type Collector struct {
	lib nvml.Interface
	log *slog.Logger
	now func() time.Time

	up       bool
	backoff  time.Duration
	nextInit time.Time
	loggedNo bool

	mu       sync.Mutex // guards xid, lastXID, infos, errors (shared with the event loop)
	xid      map[string]map[uint64]uint64
	lastXID  map[string]uint64 // GPU UUID → code of its latest XID
	infos    map[string]GPUInfo
	errors   map[string]uint64
	lastSeen map[string]uint64 // GPU UUID → last process-utilization timestamp
	symbols  map[string]bool   // LookupSymbol results; reset on every Init

	// driverVersion is read once per Init (the DCGM_FI_DRIVER_VERSION label).
	driverVersion string

	// GPM (profiling metrics) state, owned by the collection goroutine.
	gpm       map[string]*gpmState // GPU UUID → sampling state; freed by Close
	gpmNew    []gpmNote            // GPUs found without GPM, not yet logged
	gpmLogged map[int]bool         // GPU indexes already logged as without GPM
	gpmReq    nvml.GpmMetricsGetType

	events     chan Event
	stopEvents context.CancelFunc
	eventsDone chan struct{}
}

// eventWait is how long one EventSet.Wait blocks; it bounds how long Close
// waits for the event loop.
const eventWait = 500 * time.Millisecond

// eventBuffer is the number of events held for the exporter before new ones
// are dropped (and logged); XID storms are rare and short.
const eventBuffer = 1024

// NewCollector returns a collector over lib (nvml.New() in production, a
// mock in tests). log may be nil; now may be nil (time.Now).
func NewCollector(lib nvml.Interface, log *slog.Logger, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	return &Collector{
		lib: lib, log: discardLogger(log), now: now,
		xid: map[string]map[uint64]uint64{}, lastXID: map[string]uint64{}, infos: map[string]GPUInfo{},
		errors: map[string]uint64{}, lastSeen: map[string]uint64{},
		gpm: map[string]*gpmState{}, gpmLogged: map[int]bool{},
		events: make(chan Event, eventBuffer),
	}
}

// Events delivers XID and ECC events as they happen.
func (c *Collector) Events() <-chan Event { return c.events }

// Up reports whether NVML is initialised.
func (c *Collector) Up() bool { return c.up }

// tryInit calls Init when due. On failure nothing else is called.
func (c *Collector) tryInit() {
	if c.up || c.now().Before(c.nextInit) {
		return
	}
	if ret := c.lib.Init(); ret != nvml.SUCCESS {
		if c.backoff == 0 {
			c.backoff = nvmlInitBackoffMin
		} else {
			c.backoff = min(2*c.backoff, nvmlInitBackoffMax)
		}
		c.nextInit = c.now().Add(c.backoff)
		if !c.loggedNo {
			c.log.Warn("nvml_unavailable: no NVIDIA driver or GPU usable; serving gpu_agent_nvml_up 0 and retrying NVML init with backoff",
				"nvml_return", retName(ret), "retry_in", c.backoff)
			c.loggedNo = true
		} else {
			c.log.Debug("nvml_init_retry_failed", "nvml_return", retName(ret), "retry_in", c.backoff)
		}
		return
	}
	c.up, c.backoff, c.loggedNo = true, 0, false
	c.symbols = map[string]bool{}
	c.driverVersion = ""
	if v, ret := c.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		c.driverVersion = v
	}
	c.log.Info("nvml_initialised", "driver_version", c.driverVersion)
	ctx, cancel := context.WithCancel(context.Background())
	c.stopEvents = cancel
	c.eventsDone = make(chan struct{})
	go func() {
		defer close(c.eventsDone)
		c.eventLoop(ctx)
	}()
}

// Close stops the event loop and shuts NVML down if it was initialised.
func (c *Collector) Close() error {
	if !c.up {
		return nil
	}
	c.stopEvents()
	<-c.eventsDone
	c.freeGPM()
	c.up = false
	if ret := c.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %s", retName(ret))
	}
	return nil
}

// Collect reads every GPU once. With NVML down it returns NVMLUp false and
// no GPUs.
func (c *Collector) Collect(ctx context.Context) Snapshot {
	c.tryInit()
	snap := Snapshot{Time: c.now(), NVMLUp: c.up}
	if !c.up {
		return snap
	}
	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		// The driver went away under a running NVML (unloaded, reset):
		// report NVML down rather than a node without GPUs.
		c.countErr("DeviceGetCount")
		snap.NVMLUp = false
	}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		snap.GPUs = append(snap.GPUs, c.collectGPU(i))
	}
	c.gpmReport()
	c.mu.Lock()
	snap.Errors = make(map[string]uint64, len(c.errors))
	for k, v := range c.errors {
		snap.Errors[k] = v
	}
	c.mu.Unlock()
	return snap
}

func (c *Collector) countErr(call string) {
	c.mu.Lock()
	c.errors[call]++
	c.mu.Unlock()
}

// gpuRun collects one GPU; lost turns true at the first ERROR_GPU_IS_LOST.
type gpuRun struct {
	c     *Collector
	dev   nvml.Device
	snap  *GPUSnapshot
	lost  bool
	links []int // NVLink links present (any state), found by nvlinkStates
}

// ok classifies ret: SUCCESS → true; NOT_SUPPORTED → false silently (the
// metric is omitted); GPU_IS_LOST → false and the GPU is marked failed;
// anything else → false and counted per call.
func (g *gpuRun) ok(call string, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED:
		return false
	case nvml.ERROR_GPU_IS_LOST:
		g.lost = true
		return false
	}
	g.c.countErr(call)
	return false
}

func (g *gpuRun) add(d *MetricDef, v float64, labels ...Label) {
	g.snap.Samples = append(g.snap.Samples, Sample{Def: d, Value: v, Labels: labels})
}

// hasSymbol reports whether the loaded NVML exports name. Only called after
// a successful Init (LookupSymbol needs the library loaded); results are
// cached until the next Init.
func (c *Collector) hasSymbol(name string) bool {
	ok, seen := c.symbols[name]
	if !seen {
		ok = c.lib.Extensions().LookupSymbol(name) == nil
		c.symbols[name] = ok
	}
	return ok
}

func (c *Collector) collectGPU(i int) GPUSnapshot {
	snap := GPUSnapshot{Info: GPUInfo{Index: i, Minor: i}}
	dev, ret := c.lib.DeviceGetHandleByIndex(i)
	g := &gpuRun{c: c, snap: &snap, dev: dev}
	if !g.ok("DeviceGetHandleByIndex", ret) {
		snap.Failed = g.lost || ret == nvml.ERROR_GPU_IS_LOST
		c.fillKnownInfo(&snap)
		return snap
	}
	c.identify(g)
	steps := []func(*Collector, *gpuRun){
		(*Collector).utilization, (*Collector).profiling, (*Collector).memory, (*Collector).thermal,
		(*Collector).power, (*Collector).clocks, (*Collector).pcie,
		(*Collector).nvlinkStates, (*Collector).fieldValues, (*Collector).ecc,
		(*Collector).rowsAndPages, (*Collector).vgpuLicense, (*Collector).mig, (*Collector).processes,
	}
	for _, step := range steps {
		if g.lost {
			break
		}
		step(c, g)
	}
	if g.lost {
		snap.Failed = true
		snap.Samples, snap.Processes = nil, nil
		return snap
	}
	c.mu.Lock()
	c.infos[snap.Info.UUID] = snap.Info
	for code, n := range c.xid[snap.Info.UUID] {
		g.add(MetricXIDErrors, float64(n), Label{"xid", fmt.Sprint(code)})
	}
	last := c.lastXID[snap.Info.UUID]
	c.mu.Unlock()
	g.add(MetricXIDLast, float64(last), Label{"err_code", fmt.Sprint(last)}, Label{"err_msg", xidErrMsg(last)})
	return snap
}

// fillKnownInfo restores the identity of a GPU seen earlier at the same
// index, so a lost GPU keeps its UUID label.
func (c *Collector) fillKnownInfo(s *GPUSnapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, info := range c.infos {
		if info.Index == s.Info.Index {
			s.Info = info
			return
		}
	}
}

func (c *Collector) identify(g *gpuRun) {
	info := &g.snap.Info
	info.DriverVersion = c.driverVersion
	if v, ret := g.dev.GetUUID(); g.ok("GetUUID", ret) {
		info.UUID = v
	}
	if v, ret := g.dev.GetMinorNumber(); g.ok("GetMinorNumber", ret) {
		info.Minor = v
	}
	if v, ret := g.dev.GetName(); g.ok("GetName", ret) {
		info.Model = v
	}
	if v, ret := g.dev.GetPciInfo(); g.ok("GetPciInfo", ret) {
		info.PCIBusID = cString(v.BusId[:])
	}
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func (c *Collector) utilization(g *gpuRun) {
	if u, ret := g.dev.GetUtilizationRates(); g.ok("GetUtilizationRates", ret) {
		g.add(MetricGPUUtil, float64(u.Gpu))
		g.add(MetricMemCopyUtil, float64(u.Memory))
	}
	if v, _, ret := g.dev.GetEncoderUtilization(); g.ok("GetEncoderUtilization", ret) {
		g.add(MetricEncUtil, float64(v))
	}
	if v, _, ret := g.dev.GetDecoderUtilization(); g.ok("GetDecoderUtilization", ret) {
		g.add(MetricDecUtil, float64(v))
	}
}

const mib = 1 << 20

func (c *Collector) memory(g *gpuRun) {
	// nvmlDeviceGetMemoryInfo_v2 separates driver-reserved memory from used
	// memory; fall back to v1 on drivers that lack it.
	if c.hasSymbol("nvmlDeviceGetMemoryInfo_v2") {
		if m, ret := g.dev.GetMemoryInfo_v2(); g.ok("GetMemoryInfo_v2", ret) {
			g.add(MetricFBUsed, float64(m.Used/mib))
			g.add(MetricFBFree, float64(m.Free/mib))
			g.add(MetricFBTotal, float64(m.Total/mib))
			g.add(MetricFBReserved, float64(m.Reserved/mib))
		}
		return
	}
	if m, ret := g.dev.GetMemoryInfo(); g.ok("GetMemoryInfo", ret) {
		g.add(MetricFBUsed, float64(m.Used/mib))
		g.add(MetricFBFree, float64(m.Free/mib))
		g.add(MetricFBTotal, float64(m.Total/mib))
	}
}

func (c *Collector) thermal(g *gpuRun) {
	// nvmlDeviceGetTemperature is deprecated in favour of
	// nvmlDeviceGetTemperatureV; the old call is used only on drivers that do
	// not export the new one.
	if c.hasSymbol("nvmlDeviceGetTemperatureV") {
		if t, ret := g.dev.GetTemperatureV().V1(); g.ok("GetTemperatureV", ret) {
			g.add(MetricGPUTemp, float64(t.Temperature))
		}
	} else if t, ret := g.dev.GetTemperature(nvml.TEMPERATURE_GPU); g.ok("GetTemperature", ret) {
		g.add(MetricGPUTemp, float64(t))
	}
	if t, ret := g.dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); g.ok("GetTemperatureThreshold", ret) {
		g.add(MetricSlowdownTemp, float64(t))
	}
}

func (c *Collector) power(g *gpuRun) {
	if mw, ret := g.dev.GetPowerUsage(); g.ok("GetPowerUsage", ret) {
		g.add(MetricPower, float64(mw)/1000)
	}
	if mw, ret := g.dev.GetEnforcedPowerLimit(); g.ok("GetEnforcedPowerLimit", ret) {
		g.add(MetricPowerLimit, float64(mw)/1000)
	}
	if mj, ret := g.dev.GetTotalEnergyConsumption(); g.ok("GetTotalEnergyConsumption", ret) {
		g.add(MetricEnergy, float64(mj))
	}
}

// clockEventReasons names the bits of nvmlClocksEventReasons.
var clockEventReasons = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"}, {0x100, "display_clock_setting"},
}

func (c *Collector) clocks(g *gpuRun) {
	if v, ret := g.dev.GetClockInfo(nvml.CLOCK_SM); g.ok("GetClockInfo", ret) {
		g.add(MetricSMClock, float64(v))
	}
	if v, ret := g.dev.GetClockInfo(nvml.CLOCK_MEM); g.ok("GetClockInfo", ret) {
		g.add(MetricMemClock, float64(v))
	}
	var reasons uint64
	var ret nvml.Return
	call := "GetCurrentClocksEventReasons"
	if c.hasSymbol("nvmlDeviceGetCurrentClocksEventReasons") {
		reasons, ret = g.dev.GetCurrentClocksEventReasons()
	} else {
		call = "GetCurrentClocksThrottleReasons"
		reasons, ret = g.dev.GetCurrentClocksThrottleReasons()
	}
	if g.ok(call, ret) {
		g.add(MetricClockEventReasons, float64(reasons))
		for _, r := range clockEventReasons {
			v := 0.0
			if reasons&r.bit != 0 {
				v = 1
			}
			g.add(MetricClockEventActive, v, Label{"reason", r.name})
		}
	}
}

func (c *Collector) pcie(g *gpuRun) {
	if v, ret := g.dev.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); g.ok("GetPcieThroughput", ret) {
		g.add(MetricPCIeTx, float64(v))
	}
	if v, ret := g.dev.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); g.ok("GetPcieThroughput", ret) {
		g.add(MetricPCIeRx, float64(v))
	}
	if v, ret := g.dev.GetPcieReplayCounter(); g.ok("GetPcieReplayCounter", ret) {
		g.add(MetricPCIeReplay, float64(v))
	}
}

func (c *Collector) nvlinkStates(g *gpuRun) {
	for link := 0; link < nvml.NVLINK_MAX_LINKS; link++ {
		st, ret := g.dev.GetNvLinkState(link)
		if ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_NOT_SUPPORTED {
			return // past the last link, or no NVLink
		}
		if !g.ok("GetNvLinkState", ret) {
			if g.lost {
				return
			}
			continue
		}
		g.links = append(g.links, link)
		v := 0.0
		if st == nvml.FEATURE_ENABLED {
			v = 1
		}
		g.add(MetricNVLinkState, v, Label{"link", fmt.Sprint(link)})
	}
}

func (c *Collector) ecc(g *gpuRun) {
	for _, e := range []struct {
		def *MetricDef
		typ nvml.MemoryErrorType
		cnt nvml.EccCounterType
	}{
		{MetricECCSBEVol, nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC},
		{MetricECCDBEVol, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC},
		{MetricECCSBEAgg, nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC},
		{MetricECCDBEAgg, nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC},
	} {
		v, ret := g.dev.GetTotalEccErrors(e.typ, e.cnt)
		if g.ok("GetTotalEccErrors", ret) {
			g.add(e.def, float64(v))
		}
		if g.lost {
			return
		}
	}
}

// rowsAndPages reports row remapping on Ampere and newer, page retirement on
// older GPUs (Ampere replaced the latter with the former).
func (c *Collector) rowsAndPages(g *gpuRun) {
	arch, ret := g.dev.GetArchitecture()
	if !g.ok("GetArchitecture", ret) {
		return
	}
	if arch >= nvml.DEVICE_ARCH_AMPERE {
		if !c.hasSymbol("nvmlDeviceGetRemappedRows") {
			return
		}
		corr, unc, pending, failed, ret := g.dev.GetRemappedRows()
		if g.ok("GetRemappedRows", ret) {
			g.add(MetricRemapCorr, float64(corr))
			g.add(MetricRemapUnc, float64(unc))
			g.add(MetricRemapPending, b2f(pending))
			g.add(MetricRemapFailure, b2f(failed))
		}
		return
	}
	if pages, _, ret := g.dev.GetRetiredPages_v2(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS); g.ok("GetRetiredPages_v2", ret) {
		g.add(MetricRetiredSBE, float64(len(pages)))
	}
	if pages, _, ret := g.dev.GetRetiredPages_v2(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR); g.ok("GetRetiredPages_v2", ret) {
		g.add(MetricRetiredDBE, float64(len(pages)))
	}
	if st, ret := g.dev.GetRetiredPagesPendingStatus(); g.ok("GetRetiredPagesPendingStatus", ret) {
		g.add(MetricRetiredPending, b2f(st == nvml.FEATURE_ENABLED))
	}
}

// vgpuLicense reports DCGM_FI_DEV_VGPU_LICENSE_STATUS as DCGM computes it:
// 0 where the GPU has no GRID licensing (bare metal), else whether the vGPU
// feature is licensed; omitted when NVML answers nothing.
func (c *Collector) vgpuLicense(g *gpuRun) {
	f, ret := g.dev.GetGridLicensableFeatures()
	if !g.ok("GetGridLicensableFeatures", ret) {
		return
	}
	if f.IsGridLicenseSupported == 0 {
		g.add(MetricVGPULicense, 0)
		return
	}
	for _, feat := range f.GridLicensableFeatures[:min(int(f.LicensableFeaturesCount), len(f.GridLicensableFeatures))] {
		if nvml.GridLicenseFeatureCode(feat.FeatureCode) == nvml.GRID_LICENSE_FEATURE_CODE_VGPU {
			g.add(MetricVGPULicense, b2f(feat.FeatureState > 0))
			return
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// retName formats an NVML return code without calling into NVML (ErrorString
// must not be called after a failed Init).
func retName(r nvml.Return) string {
	switch r {
	case nvml.SUCCESS:
		return "SUCCESS"
	case nvml.ERROR_UNINITIALIZED:
		return "ERROR_UNINITIALIZED"
	case nvml.ERROR_NOT_SUPPORTED:
		return "ERROR_NOT_SUPPORTED"
	case nvml.ERROR_NO_PERMISSION:
		return "ERROR_NO_PERMISSION"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "ERROR_DRIVER_NOT_LOADED"
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "ERROR_LIBRARY_NOT_FOUND"
	case nvml.ERROR_GPU_IS_LOST:
		return "ERROR_GPU_IS_LOST"
	case nvml.ERROR_TIMEOUT:
		return "ERROR_TIMEOUT"
	case nvml.ERROR_UNKNOWN:
		return "ERROR_UNKNOWN"
	}
	return fmt.Sprintf("nvml_return_%d", int32(r))
}
