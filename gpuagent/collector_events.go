//go:build cgo

package gpuagent

import (
	"context"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// eventMask is what the agent subscribes to on every GPU that supports it.
const eventMask = nvml.EventTypeXidCriticalError | nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError

// eventLoop registers every GPU in one event set and counts XIDs per GPU
// and code until ctx ends. Runs only after a successful Init.
func (c *Collector) eventLoop(ctx context.Context) {
	set, ret := c.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		c.log.Warn("nvml_event_set_create_failed", "nvml_return", retName(ret))
		return
	}
	defer set.Free()
	n, ret := c.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return
	}
	registered := 0
	for i := 0; i < n; i++ {
		dev, ret := c.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		supported, ret := dev.GetSupportedEventTypes()
		if ret != nvml.SUCCESS || supported&eventMask == 0 {
			continue
		}
		if ret := dev.RegisterEvents(supported&eventMask, set); ret != nvml.SUCCESS {
			c.log.Warn("nvml_register_events_failed", "gpu", i, "nvml_return", retName(ret))
			continue
		}
		registered++
	}
	c.log.Info("nvml_events_registered", "gpus", registered)
	for ctx.Err() == nil {
		data, ret := set.Wait(uint32(eventWait.Milliseconds()))
		switch ret {
		case nvml.SUCCESS:
			c.handleEvent(data)
		case nvml.ERROR_TIMEOUT:
		case nvml.ERROR_GPU_IS_LOST:
			// The collection marks the GPU failed; keep waiting for the others.
		default:
			c.countErr("EventSetWait")
		}
	}
}

func (c *Collector) handleEvent(d nvml.EventData) {
	var uuid string
	if d.Device != nil {
		uuid, _ = d.Device.GetUUID()
	}
	c.mu.Lock()
	info, known := c.infos[uuid]
	if !known {
		info = GPUInfo{UUID: uuid, Index: -1}
	}
	var kind EventKind
	switch d.EventType {
	case nvml.EventTypeXidCriticalError:
		kind = EventXID
		if c.xid[uuid] == nil {
			c.xid[uuid] = map[uint64]uint64{}
		}
		c.xid[uuid][d.EventData]++
		c.lastXID[uuid] = d.EventData
	case nvml.EventTypeSingleBitEccError:
		kind = EventECCSBE
	case nvml.EventTypeDoubleBitEccError:
		kind = EventECCDBE
	default:
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ev := Event{Time: c.now(), GPU: info, Kind: kind, GPUInstance: d.GpuInstanceId, ComputeInstance: d.ComputeInstanceId}
	if kind == EventXID {
		ev.Code = d.EventData
	}
	select {
	case c.events <- ev:
	default:
		c.log.Warn("gpu_event_dropped_buffer_full", "kind", string(kind), "gpu_uuid", uuid)
	}
}
