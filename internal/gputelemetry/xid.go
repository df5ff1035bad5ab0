package gputelemetry

import "strconv"

// xidMessages are weft-agent's short meanings of the XIDs it knows (its
// xidDescriptions, from NVIDIA's XID catalogue): the err_msg label of
// DCGM_FI_DEV_XID_ERRORS. This package imports nothing of weft, so the table
// is repeated here; TestXIDMessagesAreTheAgents holds the two together.
var xidMessages = map[int]string{
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

// xidMessage is the err_msg of code as weft-agent writes it: "No Error" for
// 0 (dcgm-exporter's wording), the meaning of a known XID, else
// "Unknown Error".
func xidMessage(code int) string {
	if code == 0 {
		return "No Error"
	}
	if m, ok := xidMessages[code]; ok {
		return m
	}
	return "Unknown Error"
}

// xidLabels are DCGM_FI_DEV_XID_ERRORS' labels for code.
func xidLabels(code int) []Label {
	return []Label{{"err_code", strconv.Itoa(code)}, {"err_msg", xidMessage(code)}}
}

// noXIDLabels label the gauge of a GPU that has had no XID (value 0).
var noXIDLabels = xidLabels(0)

// xidLast is DCGM_FI_DEV_XID_ERRORS: the last XID since the agent started,
// held, labelled with its code and meaning; a new XID starts a new series.
func xidLast(r *Reading, k Kind, e Emitter) {
	e.Emit(k, r.LastXID, r.lastXIDLb)
}
