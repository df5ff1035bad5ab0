package gputelemetry

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// Arch is a GPU generation. It decides which memory-error families the
// agent reports: row remapping on Ampere and newer, page retirement before.
type Arch int

// GPU generations.
const (
	ArchHopper Arch = iota
	ArchAmpere
	ArchVolta
)

// GPUModel is the hardware a Device simulates.
type GPUModel struct {
	Name          string // NVML's device name: the modelName label
	Arch          Arch
	FBTotalMiB    float64
	NVLinks       int
	IdleWatts     float64
	TDPWatts      float64
	MemClock      float64   // MHz
	IdleClock     float64   // SM clock at idle, MHz
	BoostClock    float64   // SM clock at full boost, MHz
	SMClocks      []float64 // steps the SM clock moves between under load (power capping)
	SlowdownTempC float64   // NVML's TEMPERATURE_THRESHOLD_SLOWDOWN
}

// The GPU models the generator knows. H100 is the default; the figures of
// the storage generator this package replaces were calibrated on it.
var (
	H100 = GPUModel{Name: "NVIDIA H100 80GB HBM3", Arch: ArchHopper, FBTotalMiB: 81559, NVLinks: 18,
		IdleWatts: 72, TDPWatts: 700, MemClock: 2619, IdleClock: 345, BoostClock: 1980,
		SMClocks: []float64{1980, 1755, 1650, 1410}, SlowdownTempC: 90}
	A100 = GPUModel{Name: "NVIDIA A100-SXM4-80GB", Arch: ArchAmpere, FBTotalMiB: 81920, NVLinks: 12,
		IdleWatts: 60, TDPWatts: 400, MemClock: 1593, IdleClock: 210, BoostClock: 1410,
		SMClocks: []float64{1410, 1320, 1275, 1155}, SlowdownTempC: 89}
	V100 = GPUModel{Name: "Tesla V100-SXM2-32GB", Arch: ArchVolta, FBTotalMiB: 32768, NVLinks: 6,
		IdleWatts: 42, TDPWatts: 300, MemClock: 877, IdleClock: 135, BoostClock: 1530,
		SMClocks: []float64{1530, 1455, 1380, 1290}, SlowdownTempC: 87}
)

// fbReservedMiB is what the driver keeps for itself: NVML's v2 memory info
// reports it apart, so used + free + reserved = total.
const fbReservedMiB = 513

// Clock event reason bits (nvmlClocksEventReasons).
const (
	ReasonGPUIdle      uint64 = 0x1
	ReasonSWPowerCap   uint64 = 0x4
	ReasonHWSlowdown   uint64 = 0x8
	ReasonSWThermal    uint64 = 0x20
	ReasonHWThermal    uint64 = 0x40
	ReasonHWPowerBrake uint64 = 0x80
)

// Perf-policy (violation time) reasons, in the order of
// weft_gpu_clock_event_seconds_total's reason label.
const (
	PolicyPower = iota
	PolicyThermal
	PolicySyncBoost
	PolicyBoardLimit
	PolicyLowUtilization
	PolicyReliability
	numPolicies
)

// NVLink error types, in the order of weft_gpu_nvlink_errors_total's
// error_type label and of the DCGM *_ERROR_COUNT_TOTAL families.
const (
	LinkCRCFlit = iota
	LinkCRCData
	LinkReplay
	LinkRecovery
	numLinkErrors
)

// Last XID values the storage generator's random faults draw from.
var randomXIDs = []float64{13, 31, 43, 48, 63, 79, 94}

// Device is one simulated GPU: identity, physical state and counters that
// persist across the workloads it runs. Not safe for concurrent use; its
// Reading is valid until the next Step.
type Device struct {
	Index    int    // NVML index: the gpu label
	Minor    int    // /dev/nvidia<Minor>: the device label
	UUID     string // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
	PCIBusID string // 00000000:18:00.0
	Model    GPUModel
	// RandomFaults lets rare background events happen on their own (random
	// XIDs and double-bit ECC errors), as in a large fleet; scenario
	// generators turn it off and inject faults explicitly. The random draws
	// happen either way, so the rest of the data does not change with it.
	RandomFaults bool

	aux       *rand.Rand // draws for the quantities the storage generator had not
	eff       float64    // power efficiency spread between devices
	ambient   float64    // inlet temperature, °C
	tempC     float64
	memTempC  float64
	energyMJ  int64
	watts     float64
	clockIdx  int
	pcie      float64
	badLink   bool
	sbe, dbe  float64
	xid       float64
	xidLeft   int
	fbDelta   float64
	levelBias float64
	memRatio  float64 // memory-copy utilization per unit of SM utilization

	sbeAggBase   float64
	remapCorr    float64
	remapUnc     float64
	remapPending float64
	policy       [numPolicies]float64
	nvlinkKiB    float64
	links        []LinkReading
	xids         []XIDCount
	mig          []MIGInstance
	proc         Process
	read         Reading
}

// LinkReading is one NVLink's state and cumulative counters.
type LinkReading struct {
	Up     bool
	TxKiB  float64
	RxKiB  float64
	Errors [numLinkErrors]float64
	labels [3][]Label // tx, rx, state: {direction, link} / {link}
	errLbl [numLinkErrors][]Label
}

// XIDCount is how often one XID was seen on a device.
type XIDCount struct {
	Code   int
	Count  float64
	labels []Label
}

// MIGInstance is one MIG device of a GPU.
type MIGInstance struct {
	GPUInstance, ComputeInstance int
	UUID, Profile                string
	FBUsedMiB                    float64
	labels                       []Label
}

// NewDevice returns GPU index of a node, with identity and initial state
// drawn from rng (the node's generator; the draws are those of the storage
// generator this package replaces, so its figures stay comparable).
func NewDevice(rng *rand.Rand, index int, model GPUModel) *Device {
	d := &Device{
		Index: index, Minor: index, Model: model, RandomFaults: true,
		UUID: fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
			rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff),
		eff:       0.92 + 0.1*rng.Float64(),
		ambient:   24 + 6*rng.Float64(),
		energyMJ:  int64(2e11 + 4e12*rng.Float64()),
		badLink:   rng.Float64() < 0.08,
		sbe:       math.Floor(rng.ExpFloat64() * 3),
		levelBias: -2 * rng.Float64(),
		watts:     model.IdleWatts,
	}
	d.tempC, d.memTempC = d.ambient+8, d.ambient+12
	h := fnv.New64a()
	h.Write([]byte(d.UUID))
	d.aux = rand.New(rand.NewPCG(h.Sum64(), uint64(index)))
	d.PCIBusID = fmt.Sprintf("00000000:%02X:00.0", pciBuses[index%len(pciBuses)])
	d.memRatio = 0.35 + 0.15*d.aux.Float64()
	d.sbeAggBase = d.sbe + math.Floor(d.aux.ExpFloat64()*20)
	d.links = make([]LinkReading, model.NVLinks)
	for i := range d.links {
		l := &d.links[i]
		l.Up = true
		name := linkNames[i]
		l.labels = [3][]Label{{{"direction", "tx"}, {"link", name}}, {{"direction", "rx"}, {"link", name}}, {{"link", name}}}
		for e := range l.errLbl {
			l.errLbl[e] = []Label{{"error_type", linkErrorNames[e]}, {"link", name}}
		}
	}
	return d
}

// pciBuses are the bus numbers of the eight SXM GPUs of an HGX baseboard.
var pciBuses = []int{0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB}

var (
	linkNames = func() []string {
		s := make([]string, 64)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return s
	}()
	linkErrorNames = [numLinkErrors]string{"crc_flit", "crc_data", "replay", "recovery"}
)

// EnableMIG partitions the device into n MIG devices of profile (for
// example "3g.40gb"). The agent then reports one instance series and its
// framebuffer use per MIG device.
func (d *Device) EnableMIG(n int, profile string) {
	d.mig = d.mig[:0]
	for i := 0; i < n; i++ {
		gi := 1 + 2*i
		m := MIGInstance{GPUInstance: gi, ComputeInstance: 0, Profile: profile,
			UUID: fmt.Sprintf("MIG-%08x-%04x-%04x-%04x-%012x", d.aux.Uint32(), d.aux.Uint32()&0xffff, d.aux.Uint32()&0xffff, d.aux.Uint32()&0xffff, d.aux.Uint64()&0xffffffffffff)}
		m.labels = []Label{{"GPU_CI_ID", "0"}, {"GPU_I_ID", fmt.Sprint(gi)}, {"GPU_I_PROFILE", profile}, {"mig_uuid", m.UUID}}
		d.mig = append(d.mig, m)
	}
}

// Reading is one collection of a Device: every value the agent reads, in
// DCGM units. It is owned by the Device and valid until its next Step.
type Reading struct {
	Util, MemCopyUtil, EncUtil, DecUtil float64 // %
	FBUsed, FBFree, FBTotal             float64 // MiB
	GPUTemp, MemTemp, SlowdownTemp      float64 // °C
	Power, PowerLimit                   float64 // W
	Energy                              float64 // mJ since boot
	SMClock, MemClock                   float64 // MHz
	ClockReasons                        uint64  // nvmlClocksEventReasons bitmask
	ClockEventSeconds                   [numPolicies]float64
	PCIeTx, PCIeRx                      float64 // KB/s as NVML samples it
	PCIeReplay                          float64
	NVLinkKiB                           float64 // all links, both directions, cumulative KiB
	Links                               []LinkReading
	LinkErrorTotals                     [numLinkErrors]float64
	SBEVol, DBEVol, SBEAgg, DBEAgg      float64
	RemapCorr, RemapUnc                 float64
	RemapPending, RemapFailure          float64
	RetiredSBE, RetiredDBE              float64
	RetiredPending                      float64
	XIDs                                []XIDCount // since the agent started, by code
	LastXID                             float64    // the last XID, held for a while (dcgm-exporter's gauge)
	TensorActive                        float64    // tensor pipe activity, 0-1, 6 decimals
	MIG                                 []MIGInstance
	Processes                           []Process
	Failed                              bool // fell off the bus: the agent reports only gpu_agent_gpu_failed
	Arch                                Arch
}

// Process is one compute process on a GPU.
type Process struct {
	PID            int
	MemMiB         float64
	SMUtil, MemUtl float64
	labels         []Label
}

// NewProcess returns a process with its pid label precomputed.
func NewProcess(pid int) Process {
	return Process{PID: pid, labels: []Label{{"pid", fmt.Sprint(pid)}}}
}
