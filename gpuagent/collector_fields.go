//go:build cgo

package gpuagent

import (
	"encoding/binary"
	"fmt"
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

// nvlinkErrorFields are the per-link error totals (all lanes of one link;
// the field's scopeId is the link). DCGM's *_TOTAL metrics sum them over links.
var nvlinkErrorFields = []struct {
	field uint32
	total *MetricDef
	name  string
}{
	{nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, MetricNVLinkCRCFlit, "crc_flit"},
	{nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, MetricNVLinkCRCData, "crc_data"},
	{nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, MetricNVLinkReplay, "replay"},
	{nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, MetricNVLinkRecovery, "recovery"},
}

// fieldValues reads, in one nvmlDeviceGetFieldValues call, the values that
// NVML exposes only (or best) as fields: memory temperature, violation
// times, NVLink throughput (all links, scopeId UINT_MAX, and per link) and
// NVLink error counters per link. It runs after nvlinkStates, which found
// the links.
func (c *Collector) fieldValues(g *gpuRun) {
	req := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_MEMORY_TEMP},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: allScopes},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: allScopes},
	}
	for _, p := range perfPolicyReasons {
		req = append(req, nvml.FieldValue{FieldId: p.field})
	}
	perLink := len(req)
	for _, link := range g.links {
		l := uint32(link)
		req = append(req,
			nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: l},
			nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: l})
		for _, e := range nvlinkErrorFields {
			req = append(req, nvml.FieldValue{FieldId: e.field, ScopeId: l})
		}
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
	if okTx && okRx {
		g.add(MetricNVLinkBandwidthTotal, tx+rx)
	}
	for i, p := range perfPolicyReasons {
		if v, ok := get(3 + i); ok {
			g.add(MetricClockEventSeconds, v/1e9, Label{"reason", p.name})
		}
	}
	totals := make([]float64, len(nvlinkErrorFields))
	seen := make([]bool, len(nvlinkErrorFields))
	stride := 2 + len(nvlinkErrorFields)
	for k, link := range g.links {
		base := perLink + k*stride
		ll := Label{"link", fmt.Sprint(link)}
		if v, ok := get(base); ok {
			g.add(MetricNVLinkIO, v, Label{"direction", "tx"}, ll)
		}
		if v, ok := get(base + 1); ok {
			g.add(MetricNVLinkIO, v, Label{"direction", "rx"}, ll)
		}
		for j, e := range nvlinkErrorFields {
			if v, ok := get(base + 2 + j); ok {
				g.add(MetricNVLinkErrors, v, Label{"error_type", e.name}, ll)
				totals[j] += v
				seen[j] = true
			}
		}
	}
	for j, e := range nvlinkErrorFields {
		if seen[j] {
			g.add(e.total, totals[j])
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
