package index

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// Symbol pages hold interned strings by reference; a page, once allocated, is
// never moved, so readers index it without a lock.
const (
	symPageBits = 12 // 4096 strings per page: small enough to waste little, large enough for few pages
	symPageSize = 1 << symPageBits
	symPageMask = symPageSize - 1
)

// symbols interns label names and values. A symbol reference (uint32) is the
// string's position in insertion order. Lookups by reference are lock-free;
// interning takes mu. Symbols are never removed (see docs/format/index.md,
// "Memory"), so a reference stays valid for the life of the Index.
type symbols struct {
	mu    sync.RWMutex
	m     map[string]uint32 // guarded by mu
	n     atomic.Uint32     // number of symbols; written under mu
	pages atomic.Pointer[[]*[symPageSize]string]
}

func newSymbols() *symbols {
	s := &symbols{m: make(map[string]uint32)}
	pages := []*[symPageSize]string{}
	s.pages.Store(&pages)
	return s
}

// get returns the string of ref.
func (s *symbols) get(ref uint32) (string, bool) {
	if ref >= s.n.Load() {
		return "", false
	}
	return (*s.pages.Load())[ref>>symPageBits][ref&symPageMask], true
}

// lookup returns the reference of str if it is interned.
func (s *symbols) lookup(str string) (uint32, bool) {
	s.mu.RLock()
	r, ok := s.m[str]
	s.mu.RUnlock()
	return r, ok
}

// intern returns the reference of str, adding it if needed.
func (s *symbols) intern(str string) uint32 {
	if r, ok := s.lookup(str); ok {
		return r
	}
	s.mu.Lock()
	r := s.internLocked(str)
	s.mu.Unlock()
	return r
}

// internLabels appends to refs the name and value references of every label
// of ls, in order, interning missing strings. It takes the read lock once in
// the common case where every string is known.
func (s *symbols) internLabels(ls labels.Labels, refs []uint32) []uint32 {
	start := len(refs)
	missing := false
	s.mu.RLock()
	ls.Range(func(l labels.Label) {
		rn, ok1 := s.m[l.Name]
		rv, ok2 := s.m[l.Value]
		missing = missing || !ok1 || !ok2
		refs = append(refs, rn, rv)
	})
	s.mu.RUnlock()
	if !missing {
		return refs
	}
	i := start
	s.mu.Lock()
	ls.Range(func(l labels.Label) {
		refs[i] = s.internLocked(l.Name)
		refs[i+1] = s.internLocked(l.Value)
		i += 2
	})
	s.mu.Unlock()
	return refs
}

func (s *symbols) internLocked(str string) uint32 {
	if r, ok := s.m[str]; ok {
		return r
	}
	// Clone: str often aliases a whole label set or a request buffer, which
	// the symbol table must not keep alive.
	str = strings.Clone(str)
	r := s.n.Load()
	pages := *s.pages.Load()
	if int(r>>symPageBits) >= len(pages) {
		np := make([]*[symPageSize]string, len(pages)+1)
		copy(np, pages)
		np[len(pages)] = new([symPageSize]string)
		s.pages.Store(&np)
		pages = np
	}
	pages[r>>symPageBits][r&symPageMask] = str
	s.m[str] = r
	s.n.Store(r + 1)
	return r
}
