package gpuagent

import "time"

// GPUInfo identifies one physical GPU.
type GPUInfo struct {
	Index    int    // NVML index, the dcgm-exporter "gpu" label
	Minor    int    // minor number: /dev/nvidia<Minor>, the "device" label
	UUID     string // GPU-xxxxxxxx-...
	PCIBusID string // 00000000:07:00.0
	Model    string // NVIDIA A100-SXM4-40GB
	// DriverVersion is the NVIDIA driver's version (the DCGM_FI_DRIVER_VERSION
	// label); empty when unknown.
	DriverVersion string
}

// ProcessSample holds the series of one compute process on one GPU.
type ProcessSample struct {
	PID     uint32
	Samples []Sample
}

// GPUSnapshot is one collection of one GPU.
type GPUSnapshot struct {
	Info GPUInfo
	// Failed is true when the GPU answered ERROR_GPU_IS_LOST (fell off the
	// bus); Samples are then empty.
	Failed    bool
	Samples   []Sample
	Processes []ProcessSample
}

// Snapshot is one collection of the node.
type Snapshot struct {
	Time   time.Time
	NVMLUp bool
	GPUs   []GPUSnapshot
	// Errors counts failed NVML calls per call name since start (cumulative).
	Errors map[string]uint64
}

// PIDs returns the PIDs of the compute processes on g.
func (g *GPUSnapshot) PIDs() []uint32 {
	out := make([]uint32, 0, len(g.Processes))
	for _, p := range g.Processes {
		out = append(out, p.PID)
	}
	return out
}
