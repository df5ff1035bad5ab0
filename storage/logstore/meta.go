package logstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage/logentry"
)

// Metadata queries of the Loki API (labels, series, index stats). Times are
// unix ns, [start, end); they select streams by the index's partitions, so
// a stream is reported for a range if it has data in a partition that
// overlaps it (as Loki answers from its index).

// LabelNames returns the sorted label names of the log streams matching ms.
func (s *Store) LabelNames(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return s.ix.LabelNames(ctx, index.KindLog, nsToMs(start), nsToMs(end-1), ms...)
}

// LabelValues returns the sorted values of name of the log streams
// matching ms.
func (s *Store) LabelValues(ctx context.Context, name string, start, end int64, ms ...*labels.Matcher) ([]string, error) {
	return s.ix.LabelValues(ctx, index.KindLog, name, nsToMs(start), nsToMs(end-1), ms...)
}

// Series returns the label sets of the log streams matching ms, sorted.
func (s *Store) Series(ctx context.Context, start, end int64, ms ...*labels.Matcher) ([]labels.Labels, error) {
	ids, err := s.ix.Postings(ctx, index.KindLog, nsToMs(start), nsToMs(end-1), ms...)
	if err != nil {
		return nil, fmt.Errorf("series: %w", err)
	}
	out := make([]labels.Labels, 0, ids.GetCardinality())
	s.mu.RLock()
	for _, id := range ids.ToArray() {
		if st := s.streams[index.ID(id)]; st != nil {
			out = append(out, st.pub)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, labels.Compare)
	return out, nil
}

// Stats are what /loki/api/v1/index/stats reports.
type Stats struct {
	Streams, Chunks, Entries, Bytes uint64
}

// Stats counts the streams, chunks, entries and line bytes in [start, end)
// of the streams matching ms, exactly. Chunks entirely inside the range are
// counted from their headers; only chunks crossing a bound are read.
func (s *Store) Stats(ctx context.Context, start, end int64, ms ...*labels.Matcher) (Stats, error) {
	var st Stats
	err := s.EachStreamTotal(ctx, start, end, ms, func(_ labels.Labels, t Stats) {
		st.Streams++
		st.Chunks += t.Chunks
		st.Entries += t.Entries
		st.Bytes += t.Bytes
	})
	return st, err
}

// EachStreamTotal calls f with the totals (Chunks, Entries, Bytes; Streams
// is 1) in [start, end) of each stream matching ms that has entries there.
func (s *Store) EachStreamTotal(ctx context.Context, start, end int64, ms []*labels.Matcher, f func(ls labels.Labels, t Stats)) error {
	ei, err := s.Select(ctx, logentry.SelectParams{Start: start, End: end, Matchers: ms})
	if err != nil {
		return err
	}
	it := ei.(*iterator)
	defer it.Close()
	if it.snap == nil {
		return nil
	}
	for _, sel := range it.streams {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := Stats{Streams: 1}
		if len(sel.dels) > 0 { // headers count deleted entries: read them
			if err := it.entryTotals(sel, &t); err != nil {
				return err
			}
			if t.Entries > 0 {
				f(sel.st.pub, t)
			}
			continue
		}
		for _, e := range sel.head {
			t.Entries++
			t.Bytes += uint64(len(e.Line))
		}
		for _, part := range sel.parts {
			if err := s.chunkTotals(it, sel, part, &t); err != nil {
				return err
			}
		}
		if t.Entries > 0 {
			f(sel.st.pub, t)
		}
	}
	return nil
}

func (s *Store) chunkTotals(it *iterator, sel selStream, part int64, t *Stats) error {
	start, end := it.p.Start, it.p.End
	iter, err := it.snap.NewIter(&pebble.IterOptions{LowerBound: chunkPrefix(part, sel.st.id), UpperBound: chunkKey(part, sel.st.id, end, 0)})
	if err != nil {
		return fmt.Errorf("stream totals: %w", err)
	}
	defer iter.Close()
	for iter.First(); iter.Valid(); iter.Next() {
		v, err := iter.ValueAndErr()
		if err != nil {
			return fmt.Errorf("stream totals: %w", err)
		}
		m, err := decodeChunkMeta(v)
		if err != nil {
			return fmt.Errorf("stream totals: chunk of stream %d: %w", sel.st.id, err)
		}
		if m.maxT < start {
			continue
		}
		t.Chunks++
		if m.minT >= start && m.maxT < end {
			t.Entries += uint64(m.n)
			t.Bytes += m.lineBytes
			continue
		}
		es, err := it.readChunk(iter.Key(), m)
		if err != nil {
			return fmt.Errorf("stream totals: %w", err)
		}
		for _, e := range es {
			if e.Timestamp >= start && e.Timestamp < end {
				t.Entries++
				t.Bytes += uint64(len(e.Line))
			}
		}
	}
	return nil
}

// EachEntry calls f for every selected entry (newStream is true for the
// first entry of each stream) and adds the number of chunks read to
// *chunks when chunks is not nil.
func (s *Store) EachEntry(ctx context.Context, p logentry.SelectParams, f func(ls labels.Labels, newStream bool, e logentry.Entry), chunks *uint64) error {
	it, err := s.Select(ctx, p)
	if err != nil {
		return err
	}
	si := it.(*iterator)
	var prev *selStream
	for it.Next() {
		ls, e := it.At()
		cur := &si.streams[si.next-1]
		f(ls, cur != prev, e)
		prev = cur
	}
	if chunks != nil {
		*chunks += uint64(si.chunksRead)
	}
	if err := it.Err(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}
