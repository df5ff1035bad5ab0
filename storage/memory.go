package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftdb/weft/index"
)

// ErrMemoryBudget matches (errors.Is) every *MemoryBudgetError.
var ErrMemoryBudget = errors.New("memory budget exceeded")

// MemoryBudgetError is a new stream (series, log stream, trace resource)
// refused because the process uses more memory than Options.MemoryBudget.
// Streams that exist keep accepting data; new ones are taken again once
// memory is back under the budget (retention, restarts, fewer queries). The
// API answers it with 429.
type MemoryBudgetError struct {
	Kind         index.Kind
	Used, Budget int64
}

func (e *MemoryBudgetError) Error() string {
	return fmt.Sprintf("memory budget exceeded: weft uses %d MiB of its %d MiB budget; new %s streams are refused until memory is freed, existing ones are accepted",
		e.Used>>20, e.Budget>>20, e.Kind)
}

// Is reports whether target is ErrMemoryBudget.
func (e *MemoryBudgetError) Is(target error) bool { return target == ErrMemoryBudget }

// memoryRefresh bounds how stale the memory reading a new stream is checked
// against may be: all-new series grow the head ~40 MB/s, so 250 ms overshoot
// the budget by ~10 MB at most, and reading /proc/self/statm costs a few
// microseconds.
const memoryRefresh = 250 * time.Millisecond

// memoryBudget refuses new streams while the process's memory in use is at
// or above the budget. Safe for concurrent use.
type memoryBudget struct {
	budget int64
	inUse  func() int64

	mu       sync.Mutex
	used     atomic.Int64
	lastRead atomic.Int64 // unix nanos
}

func newMemoryBudget(budget int64, inUse func() int64) *memoryBudget {
	if inUse == nil {
		inUse = residentBytes
	}
	return &memoryBudget{budget: budget, inUse: inUse}
}

// admit is index.Options.AdmitNew.
func (m *memoryBudget) admit(kind index.Kind) error {
	if m == nil || m.budget <= 0 {
		return nil
	}
	if time.Now().UnixNano()-m.lastRead.Load() >= int64(memoryRefresh) && m.mu.TryLock() {
		m.used.Store(m.inUse())
		m.lastRead.Store(time.Now().UnixNano())
		m.mu.Unlock()
	}
	if used := m.used.Load(); used >= m.budget {
		return &MemoryBudgetError{Kind: kind, Used: used, Budget: m.budget}
	}
	return nil
}

// residentBytes is the process's resident set size (what a memory cgroup
// limits): Go's heap and runtime, Pebble's memtables and block cache (cgo).
// Where /proc is missing it falls back to the memory the Go runtime holds.
func residentBytes() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		// statm: size resident shared text lib data dt, in pages.
		f := bytes.Fields(b)
		if len(f) > 1 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
