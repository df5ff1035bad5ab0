package index

import (
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// Value pages hold interned strings by reference; a page, once allocated, is
// never moved, so readers index it without a lock.
const (
	symPageBits = 10 // 1024 strings per page: little waste for the many small dictionaries
	symPageSize = 1 << symPageBits
	symPageMask = symPageSize - 1
)

// symbols interns label names, and per name its values. A name reference is
// the name's position in insertion order; a value reference is the value's
// position in its name's dictionary. Per-name dictionaries keep the tables
// that the write path probes small: `job`, `gpu` or `modelName` have a
// handful of values and stay in cache, and only the few high-cardinality
// names (UUID, pod, instance) have large tables.
//
// Lookups by reference are lock-free; interning takes mu. Symbols are never
// removed (see docs/format/index.md, "Memory"), so a reference stays valid for
// the life of the Index.
type symbols struct {
	mu    sync.RWMutex
	names map[string]uint32            // guarded by mu
	dicts atomic.Pointer[[]*valueDict] // by name ref; replaced (copy on append) under mu
	// schema caches the name refs of the last label-name sequence interned:
	// streams of one source share their label names, so comparing names
	// with it replaces a map probe per label. Immutable once stored.
	schema atomic.Pointer[nameSchema]
	// strs holds the interned values, packed into shared blocks: a value
	// is never removed, so a block is never kept alive by a dead one.
	strs encArena
	seed maphash.Seed // of valueHash; immutable
}

// nameSchema is a label-name sequence and its name refs.
type nameSchema struct {
	names []string
	refs  []uint32
}

// valueDict holds one label name and its values.
type valueDict struct {
	name   string
	values valueTable    // value → ref; guarded by symbols.mu
	n      atomic.Uint32 // number of values; written under symbols.mu
	pages  atomic.Pointer[[]*[symPageSize]string]
	// hot is 1 + the ref of the value most recently interned (0: none).
	// The streams of one target arrive together and share most values, so
	// comparing with it saves most table probes of interning.
	hot atomic.Uint32
}

// at returns value ref, which must be below n.
func (d *valueDict) at(ref uint32) string {
	return (*d.pages.Load())[ref>>symPageBits][ref&symPageMask]
}

// find returns the ref of value v with hash h (valueHash); symbols.mu must
// be held.
func (d *valueDict) find(h uint32, v string) (uint32, bool) {
	return d.values.find(h, v, *d.pages.Load())
}

func newSymbols() *symbols {
	s := &symbols{names: make(map[string]uint32), seed: maphash.MakeSeed()}
	d := []*valueDict{}
	s.dicts.Store(&d)
	return s
}

func (s *symbols) dict(nameRef uint32) *valueDict {
	d := *s.dicts.Load()
	if int64(nameRef) >= int64(len(d)) {
		return nil
	}
	return d[nameRef]
}

// numNames returns the number of interned names; name refs are below it.
func (s *symbols) numNames() int { return len(*s.dicts.Load()) }

// name returns the label name of nameRef.
func (s *symbols) name(nameRef uint32) (string, bool) {
	d := s.dict(nameRef)
	if d == nil {
		return "", false
	}
	return d.name, true
}

// value returns the value valueRef of the name nameRef.
func (s *symbols) value(nameRef, valueRef uint32) (string, bool) {
	d := s.dict(nameRef)
	if d == nil || valueRef >= d.n.Load() {
		return "", false
	}
	return (*d.pages.Load())[valueRef>>symPageBits][valueRef&symPageMask], true
}

// lookupName returns the reference of a label name if it is interned.
func (s *symbols) lookupName(name string) (uint32, bool) {
	s.mu.RLock()
	r, ok := s.names[name]
	s.mu.RUnlock()
	return r, ok
}

// lookupValue returns the reference of value under nameRef if it is interned.
func (s *symbols) lookupValue(nameRef uint32, value string) (uint32, bool) {
	d := s.dict(nameRef)
	if d == nil {
		return 0, false
	}
	h := valueHash(s.seed, value)
	s.mu.RLock()
	r, ok := d.find(h, value)
	s.mu.RUnlock()
	return r, ok
}

// internPair returns the references of name and value, adding them if needed.
func (s *symbols) internPair(name, value string) (uint32, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.internNameLocked(name)
	return s.names[d.name], d.internLocked(&s.strs, valueHash(s.seed, value), value)
}

// internLabels appends to refs the name and value references of every label
// of ls, in order, interning missing strings. It walks ls once and hashes a
// value only when it differs from its dictionary's hot value; it holds the
// read lock until the first string it has to add, and the write lock from
// there on.
//
// The value tables of per-series labels (a GPU UUID, an instance) are
// megabytes large, so probing one for a new value is a cache miss. While it
// holds the read lock the walk only loads each such value's home slot and
// defers the probe to after the walk: the misses of a stream's new values
// then overlap instead of following each other, and a home slot found empty
// needs no probe at all.
func (s *symbols) internLabels(ls labels.Labels, refs []uint32) []uint32 {
	return s.internTenantLabels(ls, "", refs)
}

// internTenantLabels is internLabels for ls plus the label
// tenant.LabelName=tid (none when tid is ""), whose pair it interns and
// appends at its place in label order without that label set being built.
// ls must not have tenant.LabelName when tid is not "".
func (s *symbols) internTenantLabels(ls labels.Labels, tid string, refs []uint32) []uint32 {
	start := len(refs)
	sc := s.schema.Load()
	refs, schemaOK, n := s.internLabelsLocking(ls, tid, refs, sc)
	if !(schemaOK && n == len(sc.names)) && !sameSchema(sc, refs[start:]) {
		s.storeSchema(refs[start:])
	}
	return refs
}

// internLabelsLocking is internLabels' walk under the symbols lock. It
// releases the lock with a defer: a panic inside (a name out of value refs)
// that a caller recovers, as net/http does, must not leave every later
// interner blocked. It returns refs, whether ls followed schema sc, and how
// many labels it walked.
func (s *symbols) internLabelsLocking(ls labels.Labels, tid string, refs []uint32, sc *nameSchema) ([]uint32, bool, int) {
	schemaOK := sc != nil
	var dicts []*valueDict // by name ref; loaded under the lock, so it covers every name in s.names and in sc
	locked := false        // the write lock is held (else the read lock)
	lock := func() {
		s.mu.RUnlock()
		s.mu.Lock()
		locked = true
		dicts = *s.dicts.Load() // names may have been added in between
	}
	var deferred [maxDeferredValues]deferredValue
	nd := 0
	i := 0
	s.mu.RLock()
	defer func() {
		if locked {
			s.mu.Unlock()
		} else {
			s.mu.RUnlock()
		}
	}()
	dicts = *s.dicts.Load()
	one := func(l labels.Label) {
		var rn uint32
		if schemaOK && i < len(sc.names) && sc.names[i] == l.Name {
			rn = sc.refs[i]
		} else {
			schemaOK = false
			r, ok := s.names[l.Name]
			if !ok {
				if !locked {
					lock()
				}
				s.internNameLocked(l.Name)
				dicts = *s.dicts.Load()
				r = s.names[l.Name]
			}
			rn = r
		}
		i++
		d := dicts[rn]
		rv := d.hot.Load() - 1
		if rv == math.MaxUint32 || d.at(rv) != l.Value {
			h := valueHash(s.seed, l.Value)
			switch {
			case !locked && nd < len(deferred):
				deferred[nd] = deferredValue{d: d, v: l.Value, h: h, pos: len(refs) + 1, home: d.values.home(h)}
				nd++
			case locked:
				rv = d.internLocked(&s.strs, h, l.Value)
			default:
				if r, ok := d.find(h, l.Value); ok {
					rv = r
					d.hot.Store(rv + 1)
				} else {
					lock() // another interner may add it meanwhile: internLocked looks again
					rv = d.internLocked(&s.strs, h, l.Value)
				}
			}
		}
		refs = append(refs, rn, rv)
	}
	ls.Range(func(l labels.Label) {
		if tid != "" && tenant.SortsAfter(l.Name) {
			one(labels.Label{Name: tenant.LabelName, Value: tid})
			tid = ""
		}
		one(l)
	})
	if tid != "" {
		one(labels.Label{Name: tenant.LabelName, Value: tid})
	}
	// The home slots were loaded under the read lock; once the write lock
	// was taken (which released the read lock) they may be stale.
	for k := range deferred[:nd] {
		dv := &deferred[k]
		var rv uint32
		found := false
		if locked || dv.home.ref1 != 0 {
			rv, found = dv.d.find(dv.h, dv.v)
		}
		if found {
			dv.d.hot.Store(rv + 1)
		} else {
			if !locked {
				lock()
			}
			rv = dv.d.internLocked(&s.strs, dv.h, dv.v)
		}
		refs[dv.pos] = rv
	}
	return refs, schemaOK, i
}

// maxDeferredValues bounds the probes internLabels defers per label set;
// values past it are probed at once.
const maxDeferredValues = 8

// deferredValue is a value whose table probe internLabels deferred.
type deferredValue struct {
	d    *valueDict
	v    string
	h    uint32
	pos  int       // index in refs of its value ref
	home valueSlot // its home slot when deferred
}

// sameSchema reports whether sc holds the name refs of pairs (name ref,
// value ref): a stream with new values but known names keeps the schema.
func sameSchema(sc *nameSchema, pairs []uint32) bool {
	if sc == nil || len(sc.refs) != len(pairs)/2 {
		return false
	}
	for i, r := range sc.refs {
		if pairs[2*i] != r {
			return false
		}
	}
	return true
}

// storeSchema caches the name sequence of pairs (name ref, value ref).
func (s *symbols) storeSchema(pairs []uint32) {
	sc := &nameSchema{names: make([]string, 0, len(pairs)/2), refs: make([]uint32, 0, len(pairs)/2)}
	for i := 0; i+1 < len(pairs); i += 2 {
		n, _ := s.name(pairs[i])
		sc.names = append(sc.names, n)
		sc.refs = append(sc.refs, pairs[i])
	}
	s.schema.Store(sc)
}

func (s *symbols) internNameLocked(name string) *valueDict {
	dicts := *s.dicts.Load()
	if r, ok := s.names[name]; ok {
		return dicts[r]
	}
	// Clone: name often aliases a whole label set or a request buffer, which
	// the symbol table must not keep alive.
	d := &valueDict{name: strings.Clone(name)}
	pages := []*[symPageSize]string{}
	d.pages.Store(&pages)
	nd := make([]*valueDict, len(dicts)+1)
	copy(nd, dicts)
	nd[len(dicts)] = d
	s.names[d.name] = uint32(len(dicts))
	s.dicts.Store(&nd)
	return d
}

// internLocked returns the reference of value, whose valueHash is h, adding
// it (copied into a); symbols.mu must be held for writing.
func (d *valueDict) internLocked(a *encArena, h uint32, value string) uint32 {
	if r, ok := d.find(h, value); ok {
		d.hot.Store(r + 1)
		return r
	}
	r := d.n.Load()
	if r >= maxValueRefs {
		panic(fmt.Sprintf("index: label name %q has %d values, the most one name can hold", d.name, r))
	}
	// Copy: value often aliases a whole label set or a request buffer,
	// which the symbol table must not keep alive.
	value = a.copyString(value)
	pages := *d.pages.Load()
	if int(r>>symPageBits) >= len(pages) {
		np := make([]*[symPageSize]string, len(pages)+1)
		copy(np, pages)
		np[len(pages)] = new([symPageSize]string)
		d.pages.Store(&np)
		pages = np
	}
	pages[r>>symPageBits][r&symPageMask] = value
	d.values.insert(h, r)
	d.n.Store(r + 1)
	d.hot.Store(r + 1)
	return r
}
