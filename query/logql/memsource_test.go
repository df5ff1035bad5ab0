package logql

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
)

// memSource is an in-memory Source for tests. It honours the contract:
// streams one after another, each in ascending timestamp order, entries in
// [Start, End), and it records the pushed-down line filters.
type memSource struct {
	mu      sync.Mutex
	streams []*memStream
	last    SelectParams
	selects int
}

type memStream struct {
	labels  labels.Labels
	entries []Entry
}

func (m *memSource) add(ls labels.Labels, e Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.streams {
		if labels.Equal(s.labels, ls) {
			s.entries = append(s.entries, e)
			return
		}
	}
	m.streams = append(m.streams, &memStream{labels: ls, entries: []Entry{e}})
}

func (m *memSource) Select(_ context.Context, p SelectParams) (EntryIterator, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = p
	m.selects++
	it := &memIter{i: -1}
	for _, s := range m.streams {
		ok := true
		for _, mt := range p.Matchers {
			if !mt.Matches(s.labels.Get(mt.Name)) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		es := slices.Clone(s.entries)
		slices.SortStableFunc(es, func(a, b Entry) int {
			switch {
			case a.Timestamp < b.Timestamp:
				return -1
			case a.Timestamp > b.Timestamp:
				return 1
			}
			return 0
		})
		for _, e := range es {
			if e.Timestamp < p.Start || e.Timestamp >= p.End {
				continue
			}
			skip := false
			for _, f := range p.LineFilters {
				c := strings.Contains(e.Line, f.Value)
				if (f.Op == LineContains) != c {
					skip = true
				}
			}
			if skip {
				continue
			}
			it.items = append(it.items, memItem{s.labels, e})
		}
	}
	return it, nil
}

type memItem struct {
	ls labels.Labels
	e  Entry
}

type memIter struct {
	items []memItem
	i     int
}

func (it *memIter) Next() bool {
	it.i++
	return it.i < len(it.items)
}
func (it *memIter) At() (labels.Labels, Entry) { return it.items[it.i].ls, it.items[it.i].e }
func (it *memIter) Err() error                 { return nil }
func (it *memIter) Close() error               { return nil }
