package gpuagent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/grafana/regexp"
)

// Context is a workload context: weft's canonical context keys to values.
type Context map[string]string

// Canonical context keys (weft's names; see shared DESIGN "workload context").
const (
	KeyRunID        = "run_id"
	KeyModel        = "model"
	KeyModelVersion = "model_version"
	KeyDataset      = "dataset"
	KeyTeam         = "team"
	KeyRank         = "rank"
	KeyLocalRank    = "local_rank"
	KeyGPUUUID      = "gpu_uuid"
	KeyNamespace    = "namespace"
	KeyPod          = "pod"
	KeyContainer    = "container"
	KeyContainerID  = "container_id"
	KeyPodUID       = "pod_uid"
	KeySlurmJobID   = "slurm_job_id"
)

// envKeys maps canonical keys to environment variables, first match wins.
var envKeys = []struct {
	key  string
	vars []string
}{
	{KeyRunID, []string{"WEFT_RUN_ID", "MLFLOW_RUN_ID", "WANDB_RUN_ID", "TORCHELASTIC_RUN_ID"}},
	{KeyModel, []string{"WEFT_MODEL"}},
	{KeyModelVersion, []string{"WEFT_MODEL_VERSION"}},
	{KeyDataset, []string{"WEFT_DATASET"}},
	{KeyTeam, []string{"WEFT_TEAM"}},
	{KeyRank, []string{"WEFT_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}},
	{KeyLocalRank, []string{"WEFT_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}},
	{KeySlurmJobID, []string{"SLURM_JOB_ID", "SLURM_JOBID"}},
}

// maxEnvironBytes bounds how much of /proc/<pid>/environ is read: real
// environments are a few KiB; a pathological one must not cost memory.
const maxEnvironBytes = 1 << 20

// ContextFromEnviron extracts the canonical context from a NUL-separated
// environ blob. It never fails; unknown variables are ignored.
func ContextFromEnviron(environ []byte) Context {
	env := make(map[string]string)
	for _, kv := range bytes.Split(environ, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok || len(k) == 0 {
			continue
		}
		env[string(k)] = string(v)
	}
	ctx := Context{}
	for _, e := range envKeys {
		for _, name := range e.vars {
			if v := env[name]; v != "" {
				ctx[e.key] = v
				break
			}
		}
	}
	return ctx
}

// CgroupInfo is what a process's cgroup paths say about its workload.
type CgroupInfo struct {
	ContainerID string // 64 hex digits, empty for host processes
	Runtime     string // containerd, cri-o, docker or empty
	PodUID      string // Kubernetes pod UID with dashes, empty outside pods
	SlurmJobID  string
}

var (
	// A container ID is the last 64-hex run of a path element, after an
	// optional runtime prefix (cri-containerd-, crio-, docker-, libpod-).
	reContainer = regexp.MustCompile(`(?:^|/)(cri-containerd-|crio-|docker-|libpod-)?([0-9a-f]{64})(?:\.scope)?(?:/|$)`)
	rePodUID    = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
	reSlurmJob  = regexp.MustCompile(`/job_([0-9]+)(?:/|$)`)
)

// ParseCgroup reads the content of /proc/<pid>/cgroup (v1 or v2).
func ParseCgroup(data []byte) CgroupInfo {
	var ci CgroupInfo
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if ci.ContainerID == "" {
			if m := reContainer.FindStringSubmatch(path); m != nil {
				ci.ContainerID = m[2]
				ci.Runtime = runtimeOf(m[1], path)
			}
		}
		if ci.PodUID == "" {
			if m := rePodUID.FindStringSubmatch(path); m != nil {
				ci.PodUID = strings.ReplaceAll(m[1], "_", "-")
			}
		}
		if ci.SlurmJobID == "" && strings.Contains(path, "slurm") {
			if m := reSlurmJob.FindStringSubmatch(path); m != nil {
				ci.SlurmJobID = m[1]
			}
		}
	}
	return ci
}

func runtimeOf(prefix, path string) string {
	switch {
	case prefix == "cri-containerd-" || strings.Contains(path, "containerd"):
		return "containerd"
	case prefix == "crio-" || strings.Contains(path, "crio"):
		return "cri-o"
	case prefix == "docker-" || strings.Contains(path, "/docker/"):
		return "docker"
	case prefix == "libpod-":
		return "podman"
	case strings.Contains(path, "kubepods"):
		return "containerd" // cgroupfs driver paths name no runtime; containerd is the common one
	}
	return ""
}

// ProcInfo is the workload information of one process.
type ProcInfo struct {
	PID       uint32
	StartTime uint64 // /proc/<pid>/stat field 22, guards against PID reuse
	NSPID     uint32 // PID inside the process's own PID namespace (NSpid), PID outside containers
	Cgroup    CgroupInfo
	Env       Context // nil when environ was unreadable
}

// Context returns the canonical context of p (without pod names, which come
// from the kubelet).
func (p *ProcInfo) Context() Context {
	ctx := Context{}
	for k, v := range p.Env {
		ctx[k] = v
	}
	if p.Cgroup.ContainerID != "" {
		ctx[KeyContainerID] = p.Cgroup.ContainerID
	}
	if p.Cgroup.PodUID != "" {
		ctx[KeyPodUID] = p.Cgroup.PodUID
	}
	if p.Cgroup.SlurmJobID != "" && ctx[KeySlurmJobID] == "" {
		ctx[KeySlurmJobID] = p.Cgroup.SlurmJobID
	}
	return ctx
}

// ErrProcessGone reports a PID that no longer exists.
var ErrProcessGone = errors.New("process gone")

// ReadProc reads the workload information of pid below root (normally
// "/proc"). A missing process returns ErrProcessGone; an unreadable environ
// (permission, kernel thread) is not an error, Env is then nil.
func ReadProc(root string, pid uint32) (ProcInfo, error) {
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	info := ProcInfo{PID: pid}
	cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return info, fmt.Errorf("read cgroup of %d: %w", pid, ErrProcessGone)
		}
		return info, fmt.Errorf("read cgroup of %d: %w", pid, err)
	}
	info.Cgroup = ParseCgroup(cg)
	if st, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
		info.StartTime = parseStartTime(st)
	}
	info.NSPID = pid
	if st, err := readLimited(filepath.Join(dir, "status"), maxEnvironBytes); err == nil {
		if ns := parseNSPID(st); ns != 0 {
			info.NSPID = ns
		}
	}
	if env, err := readLimited(filepath.Join(dir, "environ"), maxEnvironBytes); err == nil {
		info.Env = ContextFromEnviron(env)
	}
	return info, nil
}

func readLimited(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// parseNSPID returns the innermost PID of the "NSpid:" line of
// /proc/<pid>/status (the PID the process sees for itself), or 0.
func parseNSPID(status []byte) uint32 {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		v, err := strconv.ParseUint(f[len(f)-1], 10, 32)
		if err != nil {
			return 0
		}
		return uint32(v)
	}
	return 0
}

// parseStartTime returns field 22 of /proc/<pid>/stat; the command name in
// field 2 may hold spaces and parentheses, so fields count from the last ')'.
func parseStartTime(stat []byte) uint64 {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}
