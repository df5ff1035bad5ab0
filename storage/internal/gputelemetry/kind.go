package gputelemetry

// Kind is one DCGM metric the generator emits.
type Kind int

// The metric kinds, in the order Generate emits them per GPU.
const (
	Utilization  Kind = iota // DCGM_FI_DEV_GPU_UTIL: gauge, integer percent 0-100, plateaus
	Power                    // DCGM_FI_DEV_POWER_USAGE: gauge, watts with 3 decimals
	Energy                   // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION: counter, integer mJ
	GPUTemp                  // DCGM_FI_DEV_GPU_TEMP: gauge, integer °C, slow drift
	MemTemp                  // DCGM_FI_DEV_MEMORY_TEMP: gauge, integer °C, slow drift
	FBUsed                   // DCGM_FI_DEV_FB_USED: gauge, integer MiB, steps
	SMClock                  // DCGM_FI_DEV_SM_CLOCK: gauge, MHz stepping between a few values
	MemClock                 // DCGM_FI_DEV_MEM_CLOCK: gauge, MHz, constant
	TensorActive             // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: gauge, ratio with 6 decimals
	PCIeReplay               // DCGM_FI_DEV_PCIE_REPLAY_COUNTER: counter, mostly flat
	XID                      // DCGM_FI_DEV_XID_ERRORS: gauge, last XID, mostly 0
	ECCSBE                   // DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: counter, mostly flat
	ECCDBE                   // DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: counter, almost always flat
	numKinds
)

var kindNames = [numKinds]string{
	Utilization:  "DCGM_FI_DEV_GPU_UTIL",
	Power:        "DCGM_FI_DEV_POWER_USAGE",
	Energy:       "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
	GPUTemp:      "DCGM_FI_DEV_GPU_TEMP",
	MemTemp:      "DCGM_FI_DEV_MEMORY_TEMP",
	FBUsed:       "DCGM_FI_DEV_FB_USED",
	SMClock:      "DCGM_FI_DEV_SM_CLOCK",
	MemClock:     "DCGM_FI_DEV_MEM_CLOCK",
	TensorActive: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	PCIeReplay:   "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
	XID:          "DCGM_FI_DEV_XID_ERRORS",
	ECCSBE:       "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
	ECCDBE:       "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
}

// Kinds returns every kind, in emission order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// MetricName is the DCGM metric name, the series' __name__.
func (k Kind) MetricName() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// String returns the metric name.
func (k Kind) String() string { return k.MetricName() }

// IsCounter reports whether the metric is a monotonic counter.
func (k Kind) IsCounter() bool {
	return k == Energy || k == PCIeReplay || k == ECCSBE || k == ECCDBE
}
