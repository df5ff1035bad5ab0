package gpuagent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
)

// Workloads attributes GPUs and processes to workloads from three sources,
// in increasing priority: /proc (cgroup and environment, cached per PID),
// the kubelet pod-resources API (pod, namespace, container per GPU UUID) and
// the registration endpoint (per PID, with a TTL).
//
// Use: Refresh before each collection's Render, Attribute from Render, then
// EndRound to drop PIDs that vanished. Not safe for concurrent use; the
// Registry it reads is.
type Workloads struct {
	procRoot string
	reg      *Registry
	pods     *PodResources
	log      *slog.Logger

	podMap map[string]PodRef
	cache  map[uint32]ProcInfo
	seen   map[uint32]struct{}
}

// NewWorkloads returns an attributor; reg and pods may be nil.
func NewWorkloads(procRoot string, reg *Registry, pods *PodResources, log *slog.Logger) *Workloads {
	return &Workloads{
		procRoot: procRoot, reg: reg, pods: pods, log: discardLogger(log),
		cache: map[uint32]ProcInfo{}, seen: map[uint32]struct{}{},
	}
}

// Refresh reloads the pod-resources device map. A kubelet error keeps the
// previous map and is returned for logging.
func (w *Workloads) Refresh(ctx context.Context) error {
	m, err := w.pods.DeviceMap(ctx)
	if err != nil {
		return err
	}
	w.podMap = m
	return nil
}

// DeviceContext implements DeviceAttributor: the pod holding a device ID
// (a MIG device UUID) according to the kubelet.
func (w *Workloads) DeviceContext(id string) Context {
	ref, ok := w.podMap[id]
	if !ok {
		return nil
	}
	return Context{KeyNamespace: ref.Namespace, KeyPod: ref.Pod, KeyContainer: ref.Container}
}

// CachedPIDs returns how many processes are cached.
func (w *Workloads) CachedPIDs() int { return len(w.cache) }

// EndRound forgets every cached PID that Attribute was not asked about since
// the previous EndRound.
func (w *Workloads) EndRound() {
	for pid := range w.cache {
		if _, ok := w.seen[pid]; !ok {
			delete(w.cache, pid)
		}
	}
	clear(w.seen)
}

// Attribute implements Attributor.
func (w *Workloads) Attribute(gpu GPUInfo, pids []uint32) (Context, map[uint32]Context) {
	gpuCtx := Context{}
	if ref, ok := w.podMap[gpu.UUID]; ok {
		gpuCtx[KeyNamespace] = ref.Namespace
		gpuCtx[KeyPod] = ref.Pod
		gpuCtx[KeyContainer] = ref.Container
	}
	perPID := make(map[uint32]Context, len(pids))
	var common Context
	for i, pid := range pids {
		ctx := Context{}
		nsPID := pid
		if info, ok := w.proc(pid); ok {
			ctx = info.Context()
			nsPID = info.NSPID
		}
		for k, v := range gpuCtx {
			ctx[k] = v
		}
		if w.reg != nil {
			for k, v := range w.reg.LookupProcess(pid, nsPID, gpu.UUID) {
				ctx[k] = v
			}
		}
		perPID[pid] = ctx
		if i == 0 {
			common = Context{}
			for k, v := range ctx {
				common[k] = v
			}
			continue
		}
		for k, v := range common {
			if ctx[k] != v {
				delete(common, k)
			}
		}
	}
	for k, v := range common {
		gpuCtx[k] = v
	}
	return gpuCtx, perPID
}

// proc returns the cached information of pid, reading /proc on a miss or
// when the PID was reused (start time changed).
func (w *Workloads) proc(pid uint32) (ProcInfo, bool) {
	w.seen[pid] = struct{}{}
	if info, ok := w.cache[pid]; ok {
		st, err := os.ReadFile(filepath.Join(w.procRoot, strconv.FormatUint(uint64(pid), 10), "stat"))
		if err == nil && parseStartTime(st) == info.StartTime {
			return info, true
		}
		delete(w.cache, pid)
	}
	info, err := ReadProc(w.procRoot, pid)
	if err != nil {
		if !errors.Is(err, ErrProcessGone) {
			w.log.Debug("read_proc_failed", "pid", pid, "err", err)
		}
		return ProcInfo{}, false
	}
	if info.Env == nil {
		w.log.Debug("environ_unreadable", "pid", pid)
	}
	w.cache[pid] = info
	return info, true
}
