//go:build cgo

package gpuagent

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// syncBuffer is a log sink safe for the collector and its event loop.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// wantProf is what the mock's GPM gives GPU i for def, in DCGM's unit.
func wantProf(def *MetricDef, i int) float64 {
	for _, m := range gpmMetrics {
		if m.def != def {
			continue
		}
		if m.scale == mibPerSec {
			return math.Trunc(gpmMiBs(m.id, i) * mibPerSec)
		}
		return gpmPercent(m.id, i) / 100
	}
	panic("BUG: no GPM metric for " + def.DCGM)
}

func TestGPMProfilingMetrics(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	clk := newClock()
	c := newTestCollector(t, n, clk)
	ctx := context.Background()

	first := c.Collect(ctx)
	for i := range first.GPUs {
		if v, ok := sampleValue(first, i, MetricGPMSupported); !ok || v != 1 {
			t.Fatalf("gpu %d: gpm_supported = %v, %v; want 1 on Hopper", i, v, ok)
		}
		if _, ok := sampleValue(first, i, MetricProfSMActive); ok {
			t.Errorf("gpu %d: profiling figures from a single sample", i)
		}
	}
	// A window shorter than NVML's refresh gives nothing and keeps the
	// first sample as the window's start.
	clk.Advance(gpmMinWindow / 2)
	if snap := c.Collect(ctx); len(profSamples(snap, 0)) != 0 {
		t.Errorf("figures over a %v window: %v", gpmMinWindow/2, profSamples(snap, 0))
	}
	for round := 0; round < 3; round++ {
		clk.Advance(10 * time.Second)
		snap := c.Collect(ctx)
		for i := range snap.GPUs {
			for _, m := range gpmMetrics {
				got, ok := sampleValue(snap, i, m.def)
				if want := wantProf(m.def, i); !ok || got != want {
					t.Errorf("round %d gpu %d: %s = %v (present %v), want %v", round, i, m.def.DCGM, got, ok, want)
				}
			}
		}
		if len(snap.Errors) != 0 {
			t.Errorf("round %d: NVML errors %v", round, snap.Errors)
		}
	}
	// Spot values in DCGM's units: ratios 0..1, bytes/s.
	c.Collect(ctx) // too soon after the last one: no new sample...
	clk.Advance(time.Second)
	snap := c.Collect(ctx) // ...and the next window still works
	if v, _ := sampleValue(snap, 3, MetricProfTensorActive); v != float64(5*3+3)/100 {
		t.Errorf("tensor active = %v, want %v", v, float64(5*3+3)/100)
	}
	if v, _ := sampleValue(snap, 3, MetricProfPCIeTxBytes); v != math.Trunc(20003.5*(1<<20)) {
		t.Errorf("pcie tx = %v B/s, want %v", v, math.Trunc(20003.5*(1<<20)))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	allocs, frees := n.gpmBalance()
	if allocs != 2*len(n.gpus) || frees != allocs {
		t.Errorf("GPM samples: %d allocated, %d freed; want 2 per GPU, all freed", allocs, frees)
	}
}

// profSamples returns the DCGM_FI_PROF_* samples of GPU i.
func profSamples(snap Snapshot, i int) []Sample {
	var out []Sample
	for _, s := range snap.GPUs[i].Samples {
		if strings.HasPrefix(s.Def.DCGM, "DCGM_FI_PROF_") {
			out = append(out, s)
		}
	}
	return out
}

func TestGPMUnsupported(t *testing.T) {
	tests := []struct {
		name   string
		node   string
		setup  func(t *testing.T, n *mockNode)
		reason string
	}{
		{"pre-Hopper GPU", "dgxa100", func(*testing.T, *mockNode) {}, "before Hopper"},
		{"driver without GPM", "dgxh100", func(t *testing.T, n *mockNode) {
			n.missing["nvmlGpmMetricsGet"] = true
			n.srv.GpmQueryDeviceSupportFunc = func(nvml.Device) (nvml.GpmSupport, nvml.Return) {
				t.Error("GpmQueryDeviceSupport called on a driver without GPM")
				return nvml.GpmSupport{}, nvml.ERROR_FUNCTION_NOT_FOUND
			}
		}, "before R520"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newMockNode(t, tc.node)
			tc.setup(t, n)
			var logs syncBuffer
			clk := newClock()
			c := NewCollector(n.srv, slog.New(slog.NewTextHandler(&logs, nil)), clk.Now)
			t.Cleanup(func() { c.Close() })
			for range 3 {
				snap := c.Collect(context.Background())
				clk.Advance(10 * time.Second)
				for i := range snap.GPUs {
					if v, ok := sampleValue(snap, i, MetricGPMSupported); !ok || v != 0 {
						t.Fatalf("gpu %d: gpm_supported = %v, %v; want 0", i, v, ok)
					}
					if p := profSamples(snap, i); len(p) != 0 {
						t.Fatalf("gpu %d: profiling series without GPM: %v", i, p)
					}
					if _, ok := sampleValue(snap, i, MetricGPUUtil); !ok {
						t.Fatalf("gpu %d: other metrics missing", i)
					}
				}
				if len(snap.Errors) != 0 {
					t.Errorf("errors counted for an unsupported feature: %v", snap.Errors)
				}
			}
			if got := strings.Count(logs.String(), "gpm_unsupported"); got != 1 {
				t.Errorf("%d gpm_unsupported log lines over 3 collections, want 1:\n%s", got, logs.String())
			}
			if !strings.Contains(logs.String(), tc.reason) || !strings.Contains(logs.String(), "gpus=\"[0 1 2 3 4 5 6 7]\"") {
				t.Errorf("log line lacks the reason %q or the GPUs:\n%s", tc.reason, logs.String())
			}
			if allocs, _ := n.gpmBalance(); allocs != 0 {
				t.Errorf("%d GPM samples allocated without GPM", allocs)
			}
		})
	}
}

func TestGPMDegrades(t *testing.T) {
	ctx := context.Background()
	t.Run("metric the GPU lacks is omitted", func(t *testing.T) {
		n := newMockNode(t, "dgxh100")
		n.gpus[1].gpmMissing = map[uint32]bool{uint32(nvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC): true, uint32(nvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC): true}
		clk := newClock()
		c := newTestCollector(t, n, clk)
		c.Collect(ctx)
		clk.Advance(10 * time.Second)
		snap := c.Collect(ctx)
		if _, ok := sampleValue(snap, 1, MetricProfNVLinkTxBytes); ok {
			t.Error("NVLink figure reported where GPM answered NOT_SUPPORTED")
		}
		if _, ok := sampleValue(snap, 1, MetricProfSMActive); !ok {
			t.Error("other figures of that GPU missing")
		}
		if _, ok := sampleValue(snap, 2, MetricProfNVLinkTxBytes); !ok {
			t.Error("NVLink figure missing on another GPU")
		}
		if len(snap.Errors) != 0 {
			t.Errorf("NOT_SUPPORTED counted as an error: %v", snap.Errors)
		}
	})
	t.Run("failed sample is counted and reopens the window", func(t *testing.T) {
		n := newMockNode(t, "dgxh100")
		clk := newClock()
		c := newTestCollector(t, n, clk)
		c.Collect(ctx)
		n.gpus[2].setErr("GpmSampleGet", nvml.ERROR_UNKNOWN)
		clk.Advance(10 * time.Second)
		snap := c.Collect(ctx)
		if p := profSamples(snap, 2); len(p) != 0 || snap.Errors["GpmSampleGet"] != 1 {
			t.Errorf("failed sample: figures %v, errors %v", p, snap.Errors)
		}
		if len(profSamples(snap, 3)) != len(gpmMetrics) {
			t.Error("a healthy GPU lost its figures")
		}
		n.gpus[2].setErr("GpmSampleGet", nvml.SUCCESS)
		clk.Advance(10 * time.Second)
		if p := profSamples(c.Collect(ctx), 2); len(p) != 0 {
			t.Errorf("figures over a window opened by a failed sample: %v", p)
		}
		clk.Advance(10 * time.Second)
		if p := profSamples(c.Collect(ctx), 2); len(p) != len(gpmMetrics) {
			t.Errorf("%d figures after recovery, want %d", len(p), len(gpmMetrics))
		}
	})
	t.Run("lost GPU during GPM", func(t *testing.T) {
		n := newMockNode(t, "dgxh100")
		clk := newClock()
		c := newTestCollector(t, n, clk)
		c.Collect(ctx)
		n.gpus[4].setErr("GpmMetricsGet", nvml.ERROR_GPU_IS_LOST)
		clk.Advance(10 * time.Second)
		snap := c.Collect(ctx)
		if !snap.GPUs[4].Failed || len(snap.GPUs[4].Samples) != 0 {
			t.Errorf("GPU lost in GpmMetricsGet: failed=%v samples=%d", snap.GPUs[4].Failed, len(snap.GPUs[4].Samples))
		}
		if snap.GPUs[5].Failed {
			t.Error("another GPU marked failed")
		}
	})
	t.Run("MIG mode skips GPM", func(t *testing.T) {
		n := newMockNode(t, "dgxh100")
		if ret, _ := n.srv.Devices[0].SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
			t.Fatal(ret)
		}
		clk := newClock()
		c := newTestCollector(t, n, clk)
		c.Collect(ctx)
		clk.Advance(10 * time.Second)
		snap := c.Collect(ctx)
		if _, ok := sampleValue(snap, 0, MetricGPMSupported); ok || len(profSamples(snap, 0)) != 0 {
			t.Error("GPM series on a GPU in MIG mode")
		}
		if len(profSamples(snap, 1)) != len(gpmMetrics) {
			t.Error("GPU without MIG lost its figures")
		}
	})
}

func TestGPMRenderedUnderBothNamings(t *testing.T) {
	n := newMockNode(t, "dgxh100")
	clk := newClock()
	c := newTestCollector(t, n, clk)
	c.Collect(context.Background())
	clk.Advance(10 * time.Second)
	snap := c.Collect(context.Background())
	dcgm := renderText(t, snap, NamingDCGM)
	otel := renderText(t, snap, NamingOTel)
	for _, want := range []string{
		"# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge",
		`DCGM_FI_PROF_SM_ACTIVE{DCGM_FI_DRIVER_VERSION="550.54.15",Hostname="node-1",UUID="GPU-00000002-`,
		`gpu="2",gpu_uuid="GPU-00000002-0000-4000-8000-000000000002",modelName="NVIDIA H100 80GB HBM3",pci_bus_id="00000000:12:00.0"} 0.08`,
		"gpu_agent_gpm_supported{",
	} {
		if !strings.Contains(dcgm, want) {
			t.Errorf("dcgm exposition lacks %s\n%s", want, grep(dcgm, "PROF_SM_ACTIVE"))
		}
	}
	for _, want := range []string{
		"# TYPE hw_gpu_prof_pipe_active gauge",
		`hw_gpu_prof_pipe_active{gpu_uuid="GPU-00000003-0000-4000-8000-000000000003",host_name="node-1",hw_gpu_index="3",`,
		`pipe="tensor"} 0.18`,
		`network_io_direction="transmit"} 2.0975190016e+10`,
	} {
		if !strings.Contains(otel, want) {
			t.Errorf("otel exposition lacks %s\n%s", want, grep(otel, "prof"))
		}
	}
	if strings.Contains(otel, driverVersionLabel) {
		t.Error("driver version label under OTel naming")
	}
}

// TestDCGMExporterDefaultSet collects an 8-GPU Hopper node twice and checks
// that every name of dcgm-exporter's default counter set is emitted, with
// dcgm-exporter's type, and that the "label" rows label every GPU series.
func TestDCGMExporterDefaultSet(t *testing.T) {
	data, err := os.ReadFile("testdata/dcgm-exporter-default-counters.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := newMockNode(t, "dgxh100")
	clk := newClock()
	c := newTestCollector(t, n, clk)
	c.Collect(context.Background())
	clk.Advance(10 * time.Second)
	r := &Renderer{Naming: NamingDCGM, Hostname: "node-1"}
	series := r.Render(c.Collect(context.Background()))
	types := map[string]string{}
	for _, s := range series {
		types[s.Name] = s.Type.String()
	}
	rows := 0
	for _, line := range strings.Split(string(data), "\n") {
		name, typ, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		rows++
		if typ == "label" {
			for _, s := range series {
				if labelValue(s.Labels, "UUID") != "" && labelValue(s.Labels, name) == "" {
					t.Errorf("GPU series %s lacks label %s", s.Name, name)
					break
				}
			}
			continue
		}
		if got, ok := types[name]; !ok {
			t.Errorf("dcgm-exporter default %s not emitted", name)
		} else if got != typ {
			t.Errorf("%s typed %s, dcgm-exporter types it %s", name, got, typ)
		}
	}
	if rows != 26 {
		t.Errorf("read %d rows of the default set, want 26", rows)
	}
}
