package querier

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/internal/logiter"
	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

// ErrReadOnly is Push's answer: a querier stores nothing.
var ErrReadOnly = errors.New("the querier stores nothing: push to a distributor")

// Logs returns the querier's log store: the Loki API's reads over the
// cluster. Safe for concurrent use.
func (q *Querier) Logs() *Logs { return &Logs{q: q} }

// Logs is the fan-out log store (see Querier.Logs).
type Logs struct{ q *Querier }

// nsRanges splits [start, end) (unix ns) at the blocks/ingesters boundary.
func (l *Logs) nsRanges(start, end int64) (ingStart, ingEnd int64, ing bool, blkStart, blkEnd int64, blk bool) {
	splitMs, ok := l.q.split()
	if !ok {
		return start, end, true, 0, 0, false
	}
	split := splitMs * 1e6
	if end > split {
		ingStart, ingEnd, ing = max(start, split), end, true
	}
	if start < split {
		blkStart, blkEnd, blk = start, min(end, split), true
	}
	return
}

func request(start, end int64, ms []*labels.Matcher, parts []int32, total int32) readapi.Request {
	return readapi.Request{Start: start, End: end, Matchers: readapi.EncodeMatchers(ms), Partitions: parts, TotalPartitions: total}
}

// Select implements logql.Source. With the ingesters only, their answers
// are disjoint by stream and concatenated as they arrive; with blocks, a
// stream can come from several places, so the answer is merged in memory
// (bounded by the LogQL engine's limits on what a query reads).
func (l *Logs) Select(ctx context.Context, p logentry.SelectParams) (logentry.Iterator, error) {
	ingStart, ingEnd, ing, blkStart, blkEnd, blk := l.nsRanges(p.Start, p.End)
	var its []logentry.Iterator
	closeAll := func() {
		for _, it := range its {
			_ = it.Close()
		}
	}
	if ing {
		got, missing, err := fanout(ctx, l.q, func(ctx context.Context, in *ingester, parts []int32, total int32) (logentry.Iterator, error) {
			req := request(ingStart, ingEnd, p.Matchers, parts, total)
			req.LineFilters, req.Direction = p.LineFilters, p.Direction
			return in.client.Select(ctx, req)
		})
		if err != nil {
			return nil, err
		}
		its = append(its, got...)
		if _, err := l.q.partial(ctx, missing); err != nil {
			closeAll()
			return nil, err
		}
	}
	if blk {
		bp := p
		bp.Start, bp.End = blkStart, blkEnd
		it, err := l.q.opts.Blocks.Select(ctx, bp)
		if err != nil {
			closeAll()
			return nil, err
		}
		l.q.m.blockReads.Inc()
		its = append(its, it)
		return mergeStreams(its)
	}
	return logiter.Concat(its, nil), nil
}

// mergedStream is one stream gathered from several iterators.
type mergedStream struct {
	ls      labels.Labels
	entries []logentry.Entry
}

// mergeStreams reads every iterator and yields each stream once, its
// entries sorted by time (stable: one source's order of equal timestamps
// is kept).
func mergeStreams(its []logentry.Iterator) (logentry.Iterator, error) {
	byHash := map[uint64][]int{}
	var streams []mergedStream
	for _, it := range its {
		for it.Next() {
			ls, e := it.At()
			h := ls.Hash()
			idx := -1
			for _, j := range byHash[h] {
				if labels.Equal(streams[j].ls, ls) {
					idx = j
					break
				}
			}
			if idx < 0 {
				idx = len(streams)
				streams = append(streams, mergedStream{ls: ls.Copy()})
				byHash[h] = append(byHash[h], idx)
			}
			e.Metadata = e.Metadata.Copy()
			streams[idx].entries = append(streams[idx].entries, e)
		}
		err := it.Err()
		_ = it.Close()
		if err != nil {
			for _, rest := range its {
				_ = rest.Close()
			}
			return nil, err
		}
	}
	for i := range streams {
		sort.SliceStable(streams[i].entries, func(a, b int) bool { return streams[i].entries[a].Timestamp < streams[i].entries[b].Timestamp })
	}
	return &sliceIterator{streams: streams, ei: -1}, nil
}

type sliceIterator struct {
	streams []mergedStream
	si, ei  int
}

func (s *sliceIterator) Next() bool {
	for s.si < len(s.streams) {
		s.ei++
		if s.ei < len(s.streams[s.si].entries) {
			return true
		}
		s.si, s.ei = s.si+1, -1
	}
	return false
}

func (s *sliceIterator) At() (labels.Labels, logentry.Entry) {
	st := &s.streams[s.si]
	return st.ls, st.entries[s.ei]
}
func (s *sliceIterator) Err() error   { return nil }
func (s *sliceIterator) Close() error { return nil }

// strings fans a label names/values read out and merges the answers.
func (l *Logs) strings(ctx context.Context, name string, start, end int64, ms []*labels.Matcher) ([]string, error) {
	ingStart, ingEnd, ing, blkStart, blkEnd, blk := l.nsRanges(start, end)
	var lists [][]string
	if ing {
		got, missing, err := fanout(ctx, l.q, func(ctx context.Context, in *ingester, _ []int32, _ int32) ([]string, error) {
			req := request(ingStart, ingEnd, ms, nil, 0)
			if name == "" {
				return in.client.LabelNames(ctx, req)
			}
			req.Name = name
			return in.client.LabelValues(ctx, req)
		})
		if err != nil {
			return nil, err
		}
		if _, err := l.q.partial(ctx, missing); err != nil {
			return nil, err
		}
		lists = append(lists, got...)
	}
	if blk {
		var vs []string
		var err error
		if name == "" {
			vs, err = l.q.opts.Blocks.LabelNames(ctx, blkStart, blkEnd, ms...)
		} else {
			vs, err = l.q.opts.Blocks.LabelValues(ctx, name, blkStart, blkEnd, ms...)
		}
		if err != nil {
			return nil, err
		}
		l.q.m.blockReads.Inc()
		lists = append(lists, vs)
	}
	return union(lists), nil
}

// LabelNames returns the label names of the streams matching ms.
func (l *Logs) LabelNames(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return l.strings(ctx, "", start, end, ms)
}

// LabelValues returns the values of name of the streams matching ms.
func (l *Logs) LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return l.strings(ctx, name, start, end, ms)
}

// Series returns the label sets of the streams matching ms, sorted.
func (l *Logs) Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	ingStart, ingEnd, ing, blkStart, blkEnd, blk := l.nsRanges(start, end)
	var all []labels.Labels
	if ing {
		got, missing, err := fanout(ctx, l.q, func(ctx context.Context, in *ingester, parts []int32, total int32) ([]labels.Labels, error) {
			return in.client.Series(ctx, request(ingStart, ingEnd, ms, parts, total))
		})
		if err != nil {
			return nil, err
		}
		if _, err := l.q.partial(ctx, missing); err != nil {
			return nil, err
		}
		for _, g := range got {
			all = append(all, g...)
		}
	}
	if blk {
		got, err := l.q.opts.Blocks.Series(ctx, blkStart, blkEnd, ms...)
		if err != nil {
			return nil, err
		}
		l.q.m.blockReads.Inc()
		all = append(all, got...)
	}
	slices.SortFunc(all, labels.Compare)
	return slices.CompactFunc(all, labels.Equal), nil
}

// EachStreamTotal calls f with each matching stream's totals in
// [start, end), once per stream.
func (l *Logs) EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t logstore.Stats)) error {
	ingStart, ingEnd, ing, blkStart, blkEnd, blk := l.nsRanges(start, end)
	var totals []readapi.StreamTotal
	if ing {
		got, missing, err := fanout(ctx, l.q, func(ctx context.Context, in *ingester, parts []int32, total int32) ([]readapi.StreamTotal, error) {
			return in.client.Totals(ctx, request(ingStart, ingEnd, ms, parts, total))
		})
		if err != nil {
			return err
		}
		if _, err := l.q.partial(ctx, missing); err != nil {
			return err
		}
		for _, g := range got {
			totals = append(totals, g...)
		}
	}
	if blk {
		err := l.q.opts.Blocks.EachStreamTotal(ctx, blkStart, blkEnd, ms, func(ls labels.Labels, t logstore.Stats) {
			totals = append(totals, readapi.StreamTotal{Labels: ls.Copy(), Stats: t})
		})
		if err != nil {
			return err
		}
		l.q.m.blockReads.Inc()
	}
	slices.SortStableFunc(totals, func(a, b readapi.StreamTotal) int { return labels.Compare(a.Labels, b.Labels) })
	for i := 0; i < len(totals); {
		t := totals[i]
		j := i + 1
		for ; j < len(totals) && labels.Equal(totals[j].Labels, t.Labels); j++ {
			t.Stats.Chunks += totals[j].Stats.Chunks
			t.Stats.Entries += totals[j].Stats.Entries
			t.Stats.Bytes += totals[j].Stats.Bytes
		}
		t.Stats.Streams = 1
		f(t.Labels, t.Stats)
		i = j
	}
	return nil
}

// Stats sums EachStreamTotal.
func (l *Logs) Stats(ctx context.Context, start, end int64, ms ...*labels.Matcher) (logstore.Stats, error) {
	var st logstore.Stats
	err := l.EachStreamTotal(ctx, start, end, ms, func(_ labels.Labels, t logstore.Stats) {
		st.Streams++
		st.Chunks += t.Chunks
		st.Entries += t.Entries
		st.Bytes += t.Bytes
	})
	return st, err
}

// EachEntry calls f for every selected entry (newStream on each stream's
// first). Chunks read remotely are not counted.
func (l *Logs) EachEntry(ctx context.Context, p logentry.SelectParams, f func(ls labels.Labels, newStream bool, e logentry.Entry), _ *uint64) error {
	it, err := l.Select(ctx, p)
	if err != nil {
		return err
	}
	var prev labels.Labels
	first := true
	for it.Next() {
		ls, e := it.At()
		isNew := first || !labels.Equal(ls, prev)
		if isNew {
			prev = ls.Copy()
		}
		first = false
		f(ls, isNew, e)
	}
	if err := it.Err(); err != nil {
		_ = it.Close()
		return err
	}
	return it.Close()
}

// Push refuses: the querier is read-only (ErrReadOnly).
func (l *Logs) Push(context.Context, []logstore.PushStream) error { return ErrReadOnly }
