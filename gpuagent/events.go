package gpuagent

import (
	"fmt"
	"time"
)

// EventKind names a GPU event sent as a log line.
type EventKind string

const (
	EventXID    EventKind = "xid"
	EventECCSBE EventKind = "ecc_single_bit"
	EventECCDBE EventKind = "ecc_double_bit"
)

// Event is one NVML event of one GPU.
type Event struct {
	Time time.Time
	GPU  GPUInfo
	Kind EventKind
	// Code is the XID for EventXID; 0 otherwise.
	Code uint64
	// GPUInstance and ComputeInstance locate the event on a MIG GPU (NVML
	// reports 0xFFFFFFFF when it does not apply).
	GPUInstance, ComputeInstance uint32
}

// xidDescriptions are the short meanings of the XIDs that most often end a
// training run (NVIDIA's XID catalogue).
var xidDescriptions = map[uint64]string{
	13:  "graphics engine exception",
	31:  "GPU memory page fault",
	43:  "GPU stopped processing",
	45:  "preemptive cleanup, due to previous errors",
	48:  "double bit ECC error",
	61:  "internal micro-controller breakpoint/warning",
	62:  "internal micro-controller halt",
	63:  "ECC page retirement or row remapping recording event",
	64:  "ECC page retirement or row remapper recording failure",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "high single-bit ECC error rate",
	94:  "contained ECC error",
	95:  "uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
}

// xidErrMsg is the err_msg label of DCGM_FI_DEV_XID_ERRORS: "No Error" for
// 0 as dcgm-exporter writes it, weft's short meaning for the XIDs it knows,
// else "Unknown Error".
func xidErrMsg(code uint64) string {
	if code == 0 {
		return "No Error"
	}
	if d, ok := xidDescriptions[code]; ok {
		return d
	}
	return "Unknown Error"
}

// Message is the log line of e.
func (e Event) Message() string {
	switch e.Kind {
	case EventXID:
		msg := fmt.Sprintf("XID %d on GPU %d (%s)", e.Code, e.GPU.Index, e.GPU.UUID)
		if d, ok := xidDescriptions[e.Code]; ok {
			msg += ": " + d
		}
		return msg
	case EventECCSBE:
		return fmt.Sprintf("single-bit ECC error on GPU %d (%s)", e.GPU.Index, e.GPU.UUID)
	case EventECCDBE:
		return fmt.Sprintf("double-bit ECC error on GPU %d (%s)", e.GPU.Index, e.GPU.UUID)
	}
	return fmt.Sprintf("%s event on GPU %d (%s)", e.Kind, e.GPU.Index, e.GPU.UUID)
}
