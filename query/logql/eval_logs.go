package logql

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

type collected struct {
	labels, stream labels.Labels
	e              ResultEntry
	cost           int64 // charged to the query's memory budget
}

// entryHeap keeps the best `limit` entries: for Backward the newest (a
// min-heap evicts the oldest), for Forward the oldest.
type entryHeap struct {
	items    []*collected
	backward bool
}

func (h *entryHeap) Len() int { return len(h.items) }

// worse reports whether a would be evicted before b.
func (h *entryHeap) worse(a, b *collected) bool {
	if a.e.Timestamp != b.e.Timestamp {
		if h.backward {
			return a.e.Timestamp < b.e.Timestamp
		}
		return a.e.Timestamp > b.e.Timestamp
	}
	if c := labels.Compare(a.labels, b.labels); c != 0 {
		return c > 0
	}
	return a.e.Line > b.e.Line
}
func (h *entryHeap) Less(i, j int) bool { return h.worse(h.items[i], h.items[j]) }
func (h *entryHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *entryHeap) Push(x any)         { h.items = append(h.items, x.(*collected)) }
func (h *entryHeap) Pop() any {
	n := len(h.items)
	x := h.items[n-1]
	h.items = h.items[:n-1]
	return x
}

// cannotEnter reports whether an entry at ts would be evicted at once.
func (h *entryHeap) cannotEnter(ts int64, limit int) bool {
	if len(h.items) < limit {
		return false
	}
	top := h.items[0].e.Timestamp
	if h.backward {
		return ts < top
	}
	return ts > top
}

func (ev *evaluator) evalLogs(ctx context.Context, e *LogSelectorExpr) (*Result, error) {
	p := ev.params
	limit := p.Limit
	if limit <= 0 {
		limit = ev.opts.MaxEntriesLimit
	}
	if limit > ev.opts.MaxEntriesLimit {
		return nil, fmt.Errorf("%w, limit > max_entries_limit_per_query (%d > %d)", ErrLimitExceeded, limit, ev.opts.MaxEntriesLimit)
	}
	it, err := ev.selectEntries(ctx, SelectParams{
		Start: ev.selectStart(p.Start), End: p.End, Matchers: e.Matchers,
		LineFilters: literalFilters(e.Stages), Direction: p.Direction,
	}, e.Stages)
	if err != nil {
		return nil, fmt.Errorf("select logs: %w", err)
	}
	defer it.Close()
	h := &entryHeap{backward: p.Direction == Backward}
	stages := e.Stages
	nf := filterPrefix(stages)
	lb := &lbuilder{}
	var (
		curStream labels.Labels
		curCopy   labels.Labels
		lastKept  int64
		n         int
		spare     *collected
	)
	for it.Next() {
		n++
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		stream, ent := it.At()
		if ent.Timestamp < p.Start || ent.Timestamp >= p.End || (ev.minTime != 0 && ent.Timestamp < ev.minTime) {
			continue
		}
		ev.stats.EntriesScanned++
		if err := ev.readBytes(len(ent.Line)); err != nil {
			return nil, err
		}
		if !labels.Equal(stream, curStream) || curStream.IsEmpty() {
			curCopy = stream.Copy()
			curStream = curCopy
			lastKept = p.Start - 1
			if err := ev.mem.add(labelsBytes(curCopy)); err != nil {
				return nil, err
			}
		}
		if h.cannotEnter(ent.Timestamp, limit) {
			continue
		}
		if p.Interval > 0 && lastKept >= p.Start && ent.Timestamp < lastKept+int64(p.Interval) {
			continue
		}
		if !lineFiltersMatch(stages[:nf], ent.Line) {
			continue
		}
		line, ok := ent.Line, true
		if nf < len(stages) || !ent.Metadata.IsEmpty() {
			lb.reset(curCopy, ent.Metadata)
			if line, ok, err = runStages(stages[nf:], ent.Timestamp, ent.Line, lb); err != nil {
				return nil, err
			}
		} else {
			lb.changed = false
		}
		if !ok {
			continue
		}
		lastKept = ent.Timestamp
		c := spare
		spare = nil
		if c == nil {
			c = &collected{}
		}
		// Charge before copying the line: a line a template built can be
		// large, and the budget must stop the query before it is held.
		cost := entryCost + int64(len(line))
		if err := ev.mem.add(cost); err != nil {
			return nil, err
		}
		c.e = ResultEntry{Timestamp: ent.Timestamp, Line: strings.Clone(line)}
		if lb.changed {
			c.labels = lb.category(255)
			c.stream = lb.category(catStream)
			c.e.StructuredMetadata = lb.category(catMetadata)
			c.e.Parsed = lb.category(catParsed)
			ls := labelsBytes(c.labels) + labelsBytes(c.stream) + labelsBytes(c.e.StructuredMetadata) + labelsBytes(c.e.Parsed)
			if err := ev.mem.add(ls); err != nil {
				return nil, err
			}
			cost += ls
		} else {
			c.labels, c.stream = curCopy, curCopy
			c.e.StructuredMetadata, c.e.Parsed = labels.EmptyLabels(), labels.EmptyLabels()
		}
		c.cost = cost
		heap.Push(h, c)
		if h.Len() > limit {
			spare = heap.Pop(h).(*collected) // reused by the next kept entry
			ev.mem.release(spare.cost)
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read logs: %w", err)
	}
	return &Result{Type: ValueTypeStreams, Streams: groupStreams(h.items, p.Direction)}, nil
}

func groupStreams(items []*collected, dir Direction) []StreamResult {
	idx := map[string]int{}
	out := []StreamResult{}
	for _, c := range items {
		key := labelsKey(c.labels)
		i, ok := idx[key]
		if !ok {
			i = len(out)
			idx[key] = i
			out = append(out, StreamResult{Labels: c.labels, StreamLabels: c.stream})
		}
		out[i].Entries = append(out[i].Entries, c.e)
	}
	for i := range out {
		sortEntries(out[i].Entries, dir)
	}
	slices.SortFunc(out, func(a, b StreamResult) int { return labels.Compare(a.Labels, b.Labels) })
	return out
}

func sortEntries(es []ResultEntry, dir Direction) {
	slices.SortStableFunc(es, func(a, b ResultEntry) int {
		c := 0
		switch {
		case a.Timestamp < b.Timestamp:
			c = -1
		case a.Timestamp > b.Timestamp:
			c = 1
		default:
			c = strings.Compare(a.Line, b.Line)
		}
		if dir == Backward {
			return -c
		}
		return c
	})
}

// Categorized regroups the streams of a log result by stream labels alone,
// as Loki's categorize-labels response does; each entry keeps its own
// structured metadata and parsed labels. Entries stay in the result's direction.
func (r *Result) Categorized(dir Direction) []StreamResult {
	idx := map[string]int{}
	out := []StreamResult{}
	for _, s := range r.Streams {
		k := s.StreamLabels.String()
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, StreamResult{Labels: s.StreamLabels, StreamLabels: s.StreamLabels})
		}
		out[i].Entries = append(out[i].Entries, s.Entries...)
	}
	for i := range out {
		sortEntries(out[i].Entries, dir)
	}
	slices.SortFunc(out, func(a, b StreamResult) int { return labels.Compare(a.Labels, b.Labels) })
	return out
}
