//go:build cgo

package gpuagent

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// allScopes is NVML's scope ID for "all links" in NVLink field queries.
const allScopes = math.MaxUint32

// perfPolicyReasons maps NVML perf-policy (violation time) fields to the
// reason label of weft_gpu_clock_event_seconds_total. These fields replace
// the deprecated nvmlDeviceGetViolationStatus; their values are nanoseconds.
var perfPolicyReasons = []struct {
	field uint32
	name  string
}{
	{nvml.FI_DEV_PERF_POLICY_POWER, "power"},
	{nvml.FI_DEV_PERF_POLICY_THERMAL, "thermal"},
	{nvml.FI_DEV_PERF_POLICY_SYNC_BOOST, "sync_boost"},
	{nvml.FI_DEV_PERF_POLICY_BOARD_LIMIT, "board_limit"},
	{nvml.FI_DEV_PERF_POLICY_LOW_UTILIZATION, "low_utilization"},
	{nvml.FI_DEV_PERF_POLICY_RELIABILITY, "reliability"},
}

// fieldValues reads, in one nvmlDeviceGetFieldValues call, the values that
// NVML exposes only (or best) as fields: memory temperature, violation
// times, NVLink throughput and NVLink error totals.
func (c *Collector) fieldValues(g *gpuRun) {
	req := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_MEMORY_TEMP},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: allScopes},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: allScopes},
		{FieldId: nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL},
	}
	for _, p := range perfPolicyReasons {
		req = append(req, nvml.FieldValue{FieldId: p.field})
	}
	if !g.ok("GetFieldValues", g.dev.GetFieldValues(req)) {
		return
	}
	get := func(i int) (float64, bool) {
		fv := req[i]
		r := nvml.Return(fv.NvmlReturn)
		if r == nvml.ERROR_GPU_IS_LOST {
			g.lost = true
		}
		if r != nvml.SUCCESS {
			return 0, false
		}
		return FieldValueFloat(fv.ValueType, fv.Value)
	}
	if v, ok := get(0); ok {
		g.add(MetricMemTemp, v)
	}
	tx, okTx := get(1)
	rx, okRx := get(2)
	if okTx {
		g.add(MetricNVLinkIO, tx, Label{"direction", "tx"})
	}
	if okRx {
		g.add(MetricNVLinkIO, rx, Label{"direction", "rx"})
	}
	if okTx && okRx {
		g.add(MetricNVLinkBandwidthTotal, tx+rx)
	}
	for i, d := range []*MetricDef{MetricNVLinkCRCFlit, MetricNVLinkCRCData, MetricNVLinkReplay, MetricNVLinkRecovery} {
		if v, ok := get(3 + i); ok {
			g.add(d, v)
		}
	}
	for i, p := range perfPolicyReasons {
		if v, ok := get(7 + i); ok {
			g.add(MetricClockEventSeconds, v/1e9, Label{"reason", p.name})
		}
	}
}

// FieldValueFloat decodes an NVML field value of the given value type; ok is
// false for an unknown type.
func FieldValueFloat(valueType uint32, b [8]byte) (float64, bool) {
	switch nvml.ValueType(valueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:])), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b[:4])), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(b[:])), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(b[:]))), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(b[:4]))), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.LittleEndian.Uint16(b[:2])), true
	}
	return 0, false
}
