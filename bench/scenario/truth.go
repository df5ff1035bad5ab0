package scenario

import "time"

// CauseKind names what went wrong, in words an investigation answers with.
type CauseKind string

// The causes the scenarios inject.
const (
	CauseNVLinkDegradation CauseKind = "nvlink_degradation"
	CauseThermalThrottle   CauseKind = "thermal_throttle"
	CauseGPUMemoryFailure  CauseKind = "gpu_memory_failure"
	CauseModelVersion      CauseKind = "model_version_change"
	CauseStorageThroughput CauseKind = "storage_throughput"
	CauseNoisyNeighbour    CauseKind = "noisy_neighbour"
)

// Where locates a cause or a workload; empty fields do not apply.
type Where struct {
	Nodes           []string `json:"nodes,omitempty"`
	GPUUUIDs        []string `json:"gpu_uuids,omitempty"`
	Ranks           []int    `json:"ranks,omitempty"`
	RunID           string   `json:"run_id,omitempty"`
	Team            string   `json:"team,omitempty"`
	Pods            []string `json:"pods,omitempty"`
	Service         string   `json:"service,omitempty"`
	Model           string   `json:"model,omitempty"`
	Version         string   `json:"version,omitempty"`
	PreviousVersion string   `json:"previous_version,omitempty"`
	// Dependency is a shared dependency outside any GPU (a storage export).
	Dependency string `json:"dependency,omitempty"`
}

// Signal names a telemetry kind.
type Signal string

// Signals.
const (
	Metrics Signal = "metrics"
	Logs    Signal = "logs"
	Traces  Signal = "traces"
)

// Evidence is one observable sign of an incident, with the query that shows
// it and the time it first shows in the generated data (read from the data
// while it was generated, not assumed).
type Evidence struct {
	Signal Signal    `json:"signal"`
	What   string    `json:"what"`
	Query  string    `json:"query"`
	At     time.Time `json:"at"`
}

// Decoy is something unusual in the data that is not the cause.
type Decoy struct {
	What  string    `json:"what"`
	Where Where     `json:"where"`
	At    time.Time `json:"at"`
}

// GroundTruth is what an investigation of a scenario must find.
type GroundTruth struct {
	Scenario string    `json:"scenario"`
	Summary  string    `json:"summary"`
	Cause    CauseKind `json:"cause"`
	// Where the cause is. NoGPUAtFault says the cause lies outside every
	// GPU, and an answer blaming one is wrong (dataloader-starvation).
	Where        Where `json:"where"`
	NoGPUAtFault bool  `json:"no_gpu_at_fault,omitempty"`
	// Onset is when the cause begins; Precursors are earlier signs of it
	// (the ECC errors before the XID).
	Onset      time.Time  `json:"onset"`
	Precursors []Evidence `json:"precursors,omitempty"`
	// Cause evidence shows the cause itself; Symptoms what the workload
	// suffers, in order.
	CauseEvidence []Evidence `json:"cause_evidence"`
	Affected      Where      `json:"affected"`
	Symptoms      []Evidence `json:"symptoms"`
	Decoys        []Decoy    `json:"decoys,omitempty"`
}

// evidenceLog records the first time each named piece of evidence shows in
// the data as the world is simulated.
type evidenceLog map[string]time.Time

func (e evidenceLog) seen(key string, t int64) {
	if _, ok := e[key]; !ok {
		e[key] = time.UnixMilli(t).UTC()
	}
}
