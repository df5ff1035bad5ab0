package gpuagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Registration is what a training process announces on POST /v1/register.
type Registration struct {
	PID          uint32 `json:"pid"`
	RunID        string `json:"run_id,omitempty"`
	Model        string `json:"model,omitempty"`
	ModelVersion string `json:"model_version,omitempty"`
	Dataset      string `json:"dataset,omitempty"`
	Team         string `json:"team,omitempty"`
	Rank         *int   `json:"rank,omitempty"`
	LocalRank    *int   `json:"local_rank,omitempty"`
	TTLSeconds   int    `json:"ttl_seconds,omitempty"`
	// GPUUUIDs are the GPUs the process uses (NVIDIA_VISIBLE_DEVICES in a
	// container). They let the agent match a PID announced from inside a
	// container's PID namespace to the host PID that NVML reports.
	GPUUUIDs []string          `json:"gpu_uuids,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"` // further canonical keys
}

func (r *Registration) context() Context {
	ctx := Context{}
	for k, v := range r.Labels {
		if validLabelName(k) {
			ctx[k] = v
		}
	}
	set := func(k, v string) {
		if v != "" {
			ctx[k] = v
		}
	}
	set(KeyRunID, r.RunID)
	set(KeyModel, r.Model)
	set(KeyModelVersion, r.ModelVersion)
	set(KeyDataset, r.Dataset)
	set(KeyTeam, r.Team)
	if r.Rank != nil {
		ctx[KeyRank] = strconv.Itoa(*r.Rank)
	}
	if r.LocalRank != nil {
		ctx[KeyLocalRank] = strconv.Itoa(*r.LocalRank)
	}
	return ctx
}

func validLabelName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// maxRegistrations bounds the registry so a misbehaving client cannot grow
// the agent's memory without limit; a node runs at most a few hundred GPU
// processes.
const maxRegistrations = 4096

// Registry holds contexts announced by processes, each with an expiry. It is
// safe for concurrent use.
type Registry struct {
	mu         sync.Mutex
	entries    map[uint32]regEntry
	defaultTTL time.Duration
	now        func() time.Time
}

type regEntry struct {
	ctx     Context
	gpus    []string
	expires time.Time
}

// NewRegistry returns an empty registry; now is the clock (nil: time.Now).
func NewRegistry(defaultTTL time.Duration, now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{entries: map[uint32]regEntry{}, defaultTTL: defaultTTL, now: now}
}

// ErrRegistryFull is returned when maxRegistrations live entries exist.
var ErrRegistryFull = errors.New("registry full")

// Register stores r, replacing an earlier entry for the same PID.
func (g *Registry) Register(r Registration) error {
	if r.PID == 0 {
		return errors.New("pid is required")
	}
	ttl := g.defaultTTL
	if r.TTLSeconds > 0 {
		ttl = time.Duration(r.TTLSeconds) * time.Second
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if _, ok := g.entries[r.PID]; !ok && len(g.entries) >= maxRegistrations {
		g.expireLocked(now)
		if len(g.entries) >= maxRegistrations {
			return ErrRegistryFull
		}
	}
	g.entries[r.PID] = regEntry{ctx: r.context(), gpus: r.GPUUUIDs, expires: now.Add(ttl)}
	return nil
}

// Unregister removes the entry of pid.
func (g *Registry) Unregister(pid uint32) {
	g.mu.Lock()
	delete(g.entries, pid)
	g.mu.Unlock()
}

// Lookup returns the live context registered for pid, or nil.
func (g *Registry) Lookup(pid uint32) Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.liveLocked(pid)
	if !ok {
		return nil
	}
	return e.ctx
}

// LookupProcess returns the context registered for a GPU process known to
// the host as hostPID and to its own PID namespace as nsPID (equal outside
// containers), running on gpuUUID. A registration under the host PID
// matches directly; one under the namespaced PID matches only if it named
// gpuUUID, because namespaced PIDs repeat across containers.
func (g *Registry) LookupProcess(hostPID, nsPID uint32, gpuUUID string) Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.liveLocked(hostPID); ok && (len(e.gpus) == 0 || slices.Contains(e.gpus, gpuUUID)) {
		return e.ctx
	}
	if nsPID != 0 && nsPID != hostPID {
		if e, ok := g.liveLocked(nsPID); ok && slices.Contains(e.gpus, gpuUUID) {
			return e.ctx
		}
	}
	return nil
}

func (g *Registry) liveLocked(pid uint32) (regEntry, bool) {
	e, ok := g.entries[pid]
	if !ok {
		return regEntry{}, false
	}
	if !g.now().Before(e.expires) {
		delete(g.entries, pid)
		return regEntry{}, false
	}
	return e, true
}

// Len returns the number of live entries.
func (g *Registry) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(g.now())
	return len(g.entries)
}

func (g *Registry) expireLocked(now time.Time) {
	for pid, e := range g.entries {
		if !now.Before(e.expires) {
			delete(g.entries, pid)
		}
	}
}

// maxRegistrationBody bounds a registration request body.
const maxRegistrationBody = 64 << 10

// ServeHTTP implements POST /v1/register (JSON Registration; 204 on
// success) and DELETE /v1/register?pid=N (or a JSON body with pid).
func (g *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.Method {
	case http.MethodPost, http.MethodPut:
		var r Registration
		if err := decodeJSON(req.Body, &r); err != nil {
			http.Error(w, fmt.Sprintf("decode registration: %v", err), http.StatusBadRequest)
			return
		}
		if err := g.Register(r); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, ErrRegistryFull) {
				code = http.StatusTooManyRequests
			}
			http.Error(w, err.Error(), code)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		pid, err := strconv.ParseUint(req.URL.Query().Get("pid"), 10, 32)
		if err != nil {
			var r Registration
			if derr := decodeJSON(req.Body, &r); derr != nil || r.PID == 0 {
				http.Error(w, "pid is required", http.StatusBadRequest)
				return
			}
			pid = uint64(r.PID)
		}
		g.Unregister(uint32(pid))
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "POST, PUT, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, maxRegistrationBody))
	return dec.Decode(v)
}
