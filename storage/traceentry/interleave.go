package traceentry

import "errors"

// Interleaved yields the traces of several iterators that each yield
// theirs most recent first, most recent first overall: Next yields the
// head with the latest span end, so that a search over several stores
// (blocks, ingesters) that stops at its limit keeps the most recent
// matches of them all. A trace At returns is valid until the next Next,
// as the sources' are.
type Interleaved struct {
	its    []Iterator
	heads  []*Trace // nil: that source is done
	ends   []int64
	primed bool
	cur    int
	err    error
}

// RecentFirst interleaves its; Close closes them.
func RecentFirst(its []Iterator) *Interleaved {
	return &Interleaved{its: its, heads: make([]*Trace, len(its)), ends: make([]int64, len(its)), cur: -1}
}

func (m *Interleaved) advance(i int) {
	if m.its[i].Next() {
		tr := m.its[i].At()
		m.heads[i] = tr
		_, m.ends[i] = tr.TimeRange()
		return
	}
	m.heads[i] = nil
	if err := m.its[i].Err(); err != nil && m.err == nil {
		m.err = err
	}
}

// Next moves to the most recent head.
func (m *Interleaved) Next() bool {
	if m.err != nil {
		return false
	}
	if !m.primed {
		m.primed = true
		for i := range m.its {
			m.advance(i)
		}
	} else if m.cur >= 0 {
		m.advance(m.cur)
	}
	if m.err != nil {
		return false
	}
	m.cur = -1
	for i, h := range m.heads {
		if h != nil && (m.cur < 0 || m.ends[i] > m.ends[m.cur]) {
			m.cur = i
		}
	}
	return m.cur >= 0
}

// At returns the current trace.
func (m *Interleaved) At() *Trace { return m.heads[m.cur] }

// Source returns the index in its of the iterator the current trace came
// from.
func (m *Interleaved) Source() int { return m.cur }

// Err returns the first source's error.
func (m *Interleaved) Err() error { return m.err }

// Close closes every source.
func (m *Interleaved) Close() error {
	var errs []error
	for _, it := range m.its {
		errs = append(errs, it.Close())
	}
	return errors.Join(errs...)
}
