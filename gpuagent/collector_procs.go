//go:build cgo

package gpuagent

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// processes reports each running compute process with its memory and, where
// the driver keeps samples, its SM and memory utilization since the previous
// collection.
func (c *Collector) processes(g *gpuRun) {
	procs, ret := g.dev.GetComputeRunningProcesses()
	if !g.ok("GetComputeRunningProcesses", ret) {
		return
	}
	byPID := map[uint32]int{}
	for _, p := range procs {
		i, ok := byPID[p.Pid]
		if !ok {
			i = len(g.snap.Processes)
			byPID[p.Pid] = i
			g.snap.Processes = append(g.snap.Processes, ProcessSample{PID: p.Pid})
		}
		ps := &g.snap.Processes[i]
		var labels []Label
		if p.GpuInstanceId != 0xFFFFFFFF && isMIGEnabled(g.dev) {
			labels = []Label{{"GPU_I_ID", fmt.Sprint(p.GpuInstanceId)}, {"GPU_CI_ID", fmt.Sprint(p.ComputeInstanceId)}}
		}
		ps.Samples = append(ps.Samples, Sample{Def: MetricProcessMemory, Value: float64(p.UsedGpuMemory / mib), Labels: labels})
	}
	if len(procs) == 0 {
		return
	}
	uuid := g.snap.Info.UUID
	c.mu.Lock()
	last := c.lastSeen[uuid]
	c.mu.Unlock()
	samples, ret := g.dev.GetProcessUtilization(last)
	if ret == nvml.ERROR_NOT_FOUND { // no samples since last
		return
	}
	if !g.ok("GetProcessUtilization", ret) {
		return
	}
	// Keep the newest sample per PID.
	newest := map[uint32]nvml.ProcessUtilizationSample{}
	for _, s := range samples {
		if s.TimeStamp > last {
			last = s.TimeStamp
		}
		if cur, ok := newest[s.Pid]; !ok || s.TimeStamp >= cur.TimeStamp {
			newest[s.Pid] = s
		}
	}
	c.mu.Lock()
	c.lastSeen[uuid] = last
	c.mu.Unlock()
	for pid, s := range newest {
		i, ok := byPID[pid]
		if !ok {
			continue // a graphics-only or exited process
		}
		ps := &g.snap.Processes[i]
		ps.Samples = append(ps.Samples,
			Sample{Def: MetricProcessSMUtil, Value: float64(s.SmUtil)},
			Sample{Def: MetricProcessMemUtil, Value: float64(s.MemUtil)})
	}
}

func isMIGEnabled(dev nvml.Device) bool {
	cur, _, ret := dev.GetMigMode()
	return ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE
}

// mig reports one info series per MIG device with its GPU instance, compute
// instance and profile (labels as dcgm-exporter: GPU_I_ID, GPU_I_PROFILE),
// and its framebuffer use.
func (c *Collector) mig(g *gpuRun) {
	cur, _, ret := g.dev.GetMigMode()
	if !g.ok("GetMigMode", ret) || cur != nvml.DEVICE_MIG_ENABLE {
		return
	}
	n, ret := g.dev.GetMaxMigDeviceCount()
	if !g.ok("GetMaxMigDeviceCount", ret) {
		return
	}
	for i := 0; i < n; i++ {
		m, ret := g.dev.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // empty slot
		}
		if !g.ok("GetMigDeviceHandleByIndex", ret) {
			if g.lost {
				return
			}
			continue
		}
		gi, ret := m.GetGpuInstanceId()
		if !g.ok("GetGpuInstanceId", ret) {
			continue
		}
		ci, ret := m.GetComputeInstanceId()
		if !g.ok("GetComputeInstanceId", ret) {
			continue
		}
		labels := []Label{{"GPU_I_ID", fmt.Sprint(gi)}, {"GPU_CI_ID", fmt.Sprint(ci)}}
		if uuid, ret := m.GetUUID(); g.ok("GetUUID", ret) {
			labels = append(labels, Label{"mig_uuid", uuid})
		}
		if name, ret := m.GetName(); g.ok("GetName", ret) {
			if _, prof, ok := strings.Cut(name, " MIG "); ok {
				labels = append(labels, Label{"GPU_I_PROFILE", prof})
			}
		}
		g.add(MetricMIGInstance, 1, labels...)
		if mem, ret := m.GetMemoryInfo(); g.ok("GetMemoryInfo", ret) {
			g.add(MetricMIGFBUsed, float64(mem.Used/mib), labels...)
		}
	}
}
