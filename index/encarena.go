package index

import (
	"strings"
	"sync"
)

// encArenaSize is the size of the strings that compact label sets are
// carved from. A set is ~25 bytes, so one allocation serves ~150 streams
// instead of one allocation (rounded up to a 32-byte size class) each; the
// price is that one long-lived stream keeps its whole 4 KiB block alive
// after the others were deleted, like a record page (records.go).
const encArenaSize = 4096

// encArena hands out immutable copies of compact label sets (and of
// interned symbol strings, see symbols.strs) packed into shared blocks. strings.Builder only ever appends, so a string taken from
// it stays valid while the builder grows or is replaced. Safe for concurrent
// use.
type encArena struct {
	mu sync.Mutex
	b  strings.Builder
}

// copyOf returns enc as a string, usually carved from the current block.
func (a *encArena) copyOf(enc []byte) string {
	if len(enc) > encArenaSize/16 {
		return string(enc) // large sets get their own allocation
	}
	a.mu.Lock()
	a.reserveLocked(len(enc))
	start := a.b.Len()
	a.b.Write(enc)
	s := a.b.String()[start:]
	a.mu.Unlock()
	return s
}

// copyString returns a copy of s, usually carved from the current block.
func (a *encArena) copyString(s string) string {
	if len(s) > encArenaSize/16 {
		return strings.Clone(s) // long strings get their own allocation
	}
	a.mu.Lock()
	a.reserveLocked(len(s))
	start := a.b.Len()
	a.b.WriteString(s)
	c := a.b.String()[start:]
	a.mu.Unlock()
	return c
}

// reserveLocked starts a new block unless n bytes fit in the current one.
func (a *encArena) reserveLocked(n int) {
	if a.b.Cap()-a.b.Len() < n {
		a.b = strings.Builder{}
		a.b.Grow(encArenaSize)
	}
}
