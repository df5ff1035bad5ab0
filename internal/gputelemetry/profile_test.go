package gputelemetry

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// twins returns two identical devices and their node generators: stepped
// with the same activity, they differ only in the faults injected into one.
func twins(model GPUModel) (a, b *Device, ra, rb *rand.Rand) {
	ra, rb = rand.New(rand.NewPCG(11, 12)), rand.New(rand.NewPCG(11, 12))
	return NewDevice(ra, 0, model), NewDevice(rb, 0, model), ra, rb
}

func training(step int) Activity {
	return Activity{Phase: PhaseTraining, Step: step, Warm: 4, Level: 96, Tensor: 0.45, FBMiB: 60_000, PID: 7}
}

// TestProfileFollowsWorkload checks the profiling ratios against what the
// workload does: training computes (SMs busy, tensor pipe at the run's
// activity), a GPU spinning in a collective reads 100% GPU_UTIL and engine
// activity but few active SMs and no tensor work, an idle GPU reads zero.
func TestProfileFollowsWorkload(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := NewDevice(rng, 0, H100)
	d.RandomFaults = false
	mean := func(a Activity, n int, f func(*Reading) float64) float64 {
		s := 0.0
		for i := 0; i < n; i++ {
			a.Step = 10 + i
			s += f(d.Step(rng, 15_000, a, Faults{}))
		}
		return s / float64(n)
	}
	train := training(0)
	spin := Activity{Phase: PhaseSpin, Step: 10, Warm: 4, FBMiB: 60_000}
	idle := Activity{Phase: PhaseIdle}
	for _, tc := range []struct {
		name     string
		a        Activity
		f        func(*Reading) float64
		min, max float64
	}{
		{"training engine active ~ GPU_UTIL", train, func(r *Reading) float64 { return r.Prof.GrEngineActive - r.Util/100 }, -0.02, 0.02},
		{"training SM active", train, func(r *Reading) float64 { return r.Prof.SMActive }, 0.82, 0.95},
		{"training tensor active ~ the run's", train, func(r *Reading) float64 { return r.Prof.TensorActive }, 0.40, 0.47},
		{"training HMMA carries the tensor work", train, func(r *Reading) float64 { return r.Prof.TensorHMMAActive - r.Prof.TensorActive }, 0, 0},
		{"training DRAM active", train, func(r *Reading) float64 { return r.Prof.DRAMActive }, 0.2, 0.45},
		{"training fp32 pipe", train, func(r *Reading) float64 { return r.Prof.FP32Active }, 0.05, 0.15},
		{"training fp64 pipe idle", train, func(r *Reading) float64 { return r.Prof.FP64Active + r.Prof.TensorDFMAActive }, 0, 0},
		{"spinning engine active", spin, func(r *Reading) float64 { return r.Prof.GrEngineActive }, 0.97, 1},
		{"spinning SM active", spin, func(r *Reading) float64 { return r.Prof.SMActive }, 0.08, 0.16},
		{"spinning tensor active", spin, func(r *Reading) float64 { return r.Prof.TensorActive }, 0, 0.02},
		{"spinning integer pipe polls", spin, func(r *Reading) float64 { return r.Prof.IntActive }, 0.01, 0.1},
		{"idle: every ratio 0", idle, func(r *Reading) float64 {
			p := r.Prof
			return p.GrEngineActive + p.SMActive + p.SMOccupancy + p.DRAMActive + p.TensorActive + p.FP32Active + p.FP16Active + p.IntActive
		}, 0, 0},
	} {
		if got := mean(tc.a, 40, tc.f); got < tc.min || got > tc.max {
			t.Errorf("%s: %.4f, want [%v, %v]", tc.name, got, tc.min, tc.max)
		}
	}
}

// TestProfileFallsWhenThrottled checks that a GPU held down by a thermal
// slowdown computes less per second: its SM and tensor activity fall by the
// clock it lost, against a twin with working cooling, while its engine is
// as busy as before.
func TestProfileFallsWhenThrottled(t *testing.T) {
	hot, cool, rh, rc := twins(H100)
	throttled, deep := 0, 0
	for i := 0; i < 200; i++ {
		a := training(10 + i)
		h := hot.Step(rh, 15_000, a, Faults{CoolingLoss: 25})
		c := cool.Step(rc, 15_000, a, Faults{})
		if h.ClockReasons&ReasonHWThermal == 0 || c.ClockReasons&ReasonSWPowerCap != 0 || c.Prof.TensorActive < 0.2 {
			continue
		}
		throttled++
		rate := h.SMClock / H100.BoostClock
		if rate < 0.7 {
			deep++
		}
		if got, want := h.Prof.TensorActive, c.Prof.TensorActive*rate; math.Abs(got-want) > 1e-12 {
			t.Fatalf("step %d: tensor %.6f throttled to %v MHz, want %.6f (healthy %.6f)", i, got, h.SMClock, want, c.Prof.TensorActive)
		}
		if h.Prof.SMActive > c.Prof.SMActive*(rate+0.05) {
			t.Fatalf("step %d: SM active %.4f throttled, %.4f healthy, clock share %.2f", i, h.Prof.SMActive, c.Prof.SMActive, rate)
		}
		if math.Abs(h.Prof.GrEngineActive-c.Prof.GrEngineActive) > 0.05 {
			t.Fatalf("step %d: engine active %.4f throttled, %.4f healthy", i, h.Prof.GrEngineActive, c.Prof.GrEngineActive)
		}
	}
	if throttled < 50 || deep < 40 {
		t.Fatalf("%d throttled training scrapes of 200, %d below 70%% of the boost clock", throttled, deep)
	}
}

// TestProfileFallsWhenNVLinkStalls checks that a GPU whose links carry
// almost nothing spends its step waiting in the collective: GPU_UTIL as
// before, tensor and SM activity near zero.
func TestProfileFallsWhenNVLinkStalls(t *testing.T) {
	bad, ok, rb, ro := twins(H100)
	for i := 0; i < 40; i++ {
		a := training(10 + i)
		b := bad.Step(rb, 15_000, a, Faults{NVLinkLoss: 0.999})
		o := ok.Step(ro, 15_000, a, Faults{})
		if b.Util != o.Util {
			t.Fatalf("step %d: utilization %v stalled, %v healthy", i, b.Util, o.Util)
		}
		if o.Prof.TensorActive > 0.2 && b.Prof.TensorActive > 0.05*o.Prof.TensorActive {
			t.Fatalf("step %d: tensor %.4f stalled, %.4f healthy", i, b.Prof.TensorActive, o.Prof.TensorActive)
		}
		if o.Util > 50 && b.Prof.SMActive > 0.2 {
			t.Fatalf("step %d: SM active %.4f on a stalled GPU", i, b.Prof.SMActive)
		}
		if b.Prof.NVLinkTxBytes > 0.01*o.Prof.NVLinkTxBytes {
			t.Fatalf("step %d: NVLink %v B/s stalled, %v healthy", i, b.Prof.NVLinkTxBytes, o.Prof.NVLinkTxBytes)
		}
	}
}

// TestProfileTraffic checks the GPM byte rates against the counters the
// agent reads elsewhere: NVLink bytes/s are the interval's increase of
// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (KiB) per second, PCIe bytes/s the mean
// of the sampled PCIE_*_THROUGHPUT (KB/s), and a PCIe-hungry neighbour takes
// its share from both.
func TestProfileTraffic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d := NewDevice(rng, 0, H100)
	prevKiB := 0.0
	var sampled, gpm [2]float64
	for i := 0; i < 300; i++ {
		f := Faults{}
		if i >= 150 {
			f.PCIeLoss = 0.6
		}
		dt := int64(15_000 + 7*(i%5))
		r := d.Step(rng, dt, training(10+i), f)
		if i > 0 {
			kib := r.NVLinkKiB - prevKiB
			got := (r.Prof.NVLinkTxBytes + r.Prof.NVLinkRxBytes) * float64(dt) / 1000 / 1024
			if math.Abs(got-kib) > 2*float64(dt)/1000/1024+1e-6*kib {
				t.Fatalf("step %d: NVLink %v KiB by its rates, the counter rose %v", i, got, kib)
			}
		}
		prevKiB = r.NVLinkKiB
		if r.Prof.PCIeRxBytes != math.Trunc(r.Prof.PCIeRxBytes) || r.Prof.NVLinkTxBytes != math.Trunc(r.Prof.NVLinkTxBytes) {
			t.Fatalf("step %d: rates are not whole bytes/s", i)
		}
		h := i / 150
		sampled[h] += r.PCIeRx + r.PCIeTx
		gpm[h] += (r.Prof.PCIeRxBytes + r.Prof.PCIeTxBytes) / 1024
	}
	for h := range gpm {
		if q := gpm[h] / sampled[h]; q < 0.95 || q > 1.05 {
			t.Errorf("half %d: GPM PCIe rate / sampled throughput = %.3f", h, q)
		}
	}
	if q := gpm[1] / gpm[0]; q < 0.35 || q > 0.45 {
		t.Errorf("PCIe with a neighbour taking 60%%: %.2f of before", q)
	}
}

// TestProfileOnlyWithGPM generates every family over a mixed fleet and
// checks where the profiling series are: on H100s outside MIG mode only, as
// weft-agent collects them from NVML GPM; gpu_agent_gpm_supported says 1
// there, 0 on A100 and V100, nothing in MIG mode. Ratios stay in 0..1.
func TestProfileOnlyWithGPM(t *testing.T) {
	o := DefaultOptions()
	o.Nodes = 4
	o.Duration = 30 * time.Minute
	o.Families = AllKinds()
	o.Models = []GPUModel{H100, A100, V100, H100}
	o.MIGNodes = 1 // node 0, an H100
	prof := map[string]int{}
	for _, s := range Generate(o) {
		name, model, host := s.Labels.Get("__name__"), s.Labels.Get("modelName"), s.Labels.Get("Hostname")
		switch {
		case name == "gpu_agent_gpm_supported":
			want := 0.0
			if model == H100.Name {
				want = 1
			}
			if host == "gpu-node-000" {
				t.Fatalf("%v: a GPU in MIG mode", s.Labels)
			}
			for _, v := range s.V[:len(s.V)-1] {
				if v != want {
					t.Fatalf("%v = %v", s.Labels, v)
				}
			}
		case strings.HasPrefix(name, "DCGM_FI_PROF_"):
			if model != H100.Name || host == "gpu-node-000" {
				t.Fatalf("%v: profiling without GPM", s.Labels)
			}
			prof[name]++
			for _, v := range s.V[:len(s.V)-1] {
				if v < 0 || (!strings.HasSuffix(name, "_BYTES") && v > 1) {
					t.Fatalf("%v: %v", s.Labels, v)
				}
			}
		}
	}
	if len(prof) != 16 {
		t.Errorf("%d profiling families generated, want 16", len(prof))
	}
	for name, n := range prof {
		if n < 8 {
			t.Errorf("%s: %d series, want the 8 GPUs of the H100 node at least", name, n)
		}
	}
}

// TestXIDGauge checks DCGM_FI_DEV_XID_ERRORS against the XIDs the device
// counts: 0 ("No Error") until the first, then the last one's code, held
// through idle gaps and later scrapes, labelled with its meaning.
func TestXIDGauge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := NewDevice(rng, 0, H100)
	d.RandomFaults = false
	k := MustKinds("DCGM_FI_DEV_XID_ERRORS")
	gauge := func(r *Reading) (v float64, code, msg string, n int) {
		EmitGPU(k, r, EmitterFunc(func(_ Kind, x float64, extra []Label) {
			v, n = x, n+1
			for _, l := range extra {
				switch l.Name {
				case "err_code":
					code = l.Value
				case "err_msg":
					msg = l.Value
				}
			}
		}))
		return
	}
	for i, tc := range []struct {
		xid       []int
		idle      bool
		v         float64
		code, msg string
	}{
		{nil, false, 0, "0", "No Error"},
		{[]int{48}, false, 48, "48", "double bit ECC error"},
		{nil, false, 48, "48", "double bit ECC error"},
		{nil, true, 48, "48", "double bit ECC error"},
		{[]int{31, 200}, false, 200, "200", "Unknown Error"},
		{nil, false, 200, "200", "Unknown Error"},
	} {
		if tc.idle {
			d.Idle(rng, 600_000)
		}
		r := d.Step(rng, 15_000, training(10+i), Faults{XID: tc.xid})
		v, code, msg, n := gauge(r)
		if n != 1 || v != tc.v || code != tc.code || msg != tc.msg {
			t.Fatalf("scrape %d: %d series, %v {err_code=%q, err_msg=%q}, want %v {%q, %q}", i, n, v, code, msg, tc.v, tc.code, tc.msg)
		}
		if tc.v != 0 && !slicesHasCode(r.XIDs, int(tc.v)) {
			t.Fatalf("scrape %d: last XID %v not among the counted %v", i, tc.v, r.XIDs)
		}
	}
}

func slicesHasCode(xs []XIDCount, code int) bool {
	for _, x := range xs {
		if x.Code == code && x.Count > 0 {
			return true
		}
	}
	return false
}

// TestDefaultKindsOneSeriesEach checks the promise weft-bench's fleet
// relies on (it files samples by position): on an H100 every DefaultKinds
// family emits exactly one sample, without family labels, at every scrape,
// whatever the phase and the faults short of a lost GPU.
func TestDefaultKindsOneSeriesEach(t *testing.T) {
	kinds := DefaultKinds()
	if len(kinds) != 35 {
		t.Fatalf("%d default families, the docs say 35", len(kinds))
	}
	rng := rand.New(rand.NewPCG(8, 9))
	d := NewDevice(rng, 0, H100)
	for i := 0; i < 7*30; i++ {
		a := training(i)
		a.Phase = Phase(i / 30)
		f := Faults{CoolingLoss: float64(i % 30), XID: []int{48}, SBE: 2, DBE: 1, NVLinkLoss: 0.5, NVLinkErrors: 3, PCIeLoss: 0.3}
		j := 0
		EmitGPU(kinds, d.Step(rng, 15_000, a, f), EmitterFunc(func(k Kind, _ float64, extra []Label) {
			if j >= len(kinds) || k != kinds[j] || len(extra) != 0 {
				t.Fatalf("scrape %d, sample %d: %v %v, want %v without labels", i, j, k, extra, kinds[min(j, len(kinds)-1)])
			}
			j++
		}))
		if j != len(kinds) {
			t.Fatalf("scrape %d (phase %d): %d samples, want %d", i, a.Phase, j, len(kinds))
		}
	}
}
