//go:build amd64 && !amd64.v3

// The digests are amd64's with the default GOAMD64: Go may fuse
// floating-point multiply-adds on other architectures (and with GOAMD64=v3),
// so a rare value could differ there in its last bit. math.Exp uses FMA on
// amd64 CPUs that have it (every x86 server CPU since 2013); the digests
// were taken on one that does.

package gputelemetry

import (
	"bufio"
	"flag"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

var updatePinned = flag.Bool("update-pinned", false, "rewrite testdata/pinned.txt from this build")

const pinnedFile = "testdata/pinned.txt"

// TestValuesPinned holds every family's generated values, timestamps and
// labels to a digest per family, over a mixed fleet (H100 with and without MIG,
// A100, V100) and over devices driven through every phase and fault. A change
// to the model that moves a family's values names that family; adding a
// family adds a line (go test -run TestValuesPinned -update-pinned) and
// must leave every other line as it was: review the diff of
// testdata/pinned.txt like code.
func TestValuesPinned(t *testing.T) {
	got := pinnedDigests()
	if *updatePinned {
		var b strings.Builder
		b.WriteString("# family digest (TestValuesPinned; amd64)\n")
		for _, f := range Families() {
			fmt.Fprintf(&b, "%s %016x\n", f.Name, got[f.Name])
		}
		if err := os.WriteFile(pinnedFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	fh, err := os.Open(pinnedFile)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			want[f[0]] = f[1]
		}
	}
	for _, f := range Families() {
		w, ok := want[f.Name]
		switch g := fmt.Sprintf("%016x", got[f.Name]); {
		case !ok:
			t.Errorf("%s has no pinned digest: add it with -update-pinned", f.Name)
		case g != w:
			t.Errorf("%s: values changed (digest %s, pinned %s)", f.Name, g, w)
		}
		delete(want, f.Name)
	}
	for name := range want {
		t.Errorf("%s is pinned but no longer generated", name)
	}
}

// pinnedDigests returns one FNV-64a digest per family name.
func pinnedDigests() map[string]uint64 {
	hs := map[string]hash.Hash64{}
	h := func(name string) hash.Hash64 {
		if hs[name] == nil {
			hs[name] = fnv.New64a()
		}
		return hs[name]
	}
	o := DefaultOptions()
	o.Nodes = 4
	o.Duration = time.Hour
	o.Families = AllKinds()
	o.Models = []GPUModel{H100, A100, V100, H100}
	o.MIGNodes = 1
	for _, s := range Generate(o) {
		w := h(s.Kind.MetricName())
		fmt.Fprintf(w, "%s %v ", s.Labels.String(), s.T)
		for _, v := range s.V {
			fmt.Fprintf(w, "%x,", math.Float64bits(v))
		}
	}
	// Devices through every phase, with every fault, idle gaps and a loss.
	rng := rand.New(rand.NewPCG(3, 9))
	devs := []*Device{NewDevice(rng, 0, H100), NewDevice(rng, 1, H100), NewDevice(rng, 2, A100), NewDevice(rng, 3, V100)}
	devs[3].RandomFaults = false
	for step := 0; step < 400; step++ {
		for i, d := range devs {
			a := Activity{Phase: Phase(step / 20 % 7), Step: step, Warm: 10, Level: 95, Tensor: 0.45, FBMiB: 60_000, PID: 100 + i}
			if step%13 == 0 {
				a.Starved, a.Spin = 0.2, 0.3
			}
			if step%17 == 0 {
				a.NVLinkGBps, a.PCIeRxMBps, a.PCIeTxMBps = 100, 500, 300
			}
			f := Faults{}
			if step > 100 && step < 200 {
				f.CoolingLoss = 25
			}
			if step > 150 && step < 250 && i == 1 {
				f.NVLinkLoss, f.NVLinkErrors = 0.99, 20
			}
			if step == 50 || step == 300 {
				f.XID = []int{48}
				f.SBE, f.DBE = 3, 1
			}
			if step%31 == 0 {
				f.PCIeLoss = 0.5
			}
			if step == 380 && i == 0 {
				f.Lost = true
			}
			r := d.Step(rng, 15_000+int64(step%7), a, f)
			EmitGPU(AllKinds(), r, EmitterFunc(func(k Kind, v float64, extra []Label) {
				fmt.Fprintf(h(k.MetricName()), "%d %d %v %x\n", step, i, extra, math.Float64bits(v))
			}))
			if step%90 == 89 {
				d.Idle(rng, 600_000)
			}
		}
	}
	out := map[string]uint64{}
	for name, w := range hs {
		out[name] = w.Sum64()
	}
	return out
}
