package logstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query/logql"
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
			out = append(out, st.ls)
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
// of the streams matching ms. It reads the entries (exact, not estimated).
func (s *Store) Stats(ctx context.Context, start, end int64, ms ...*labels.Matcher) (Stats, error) {
	var st Stats
	err := s.EachEntry(ctx, logql.SelectParams{Start: start, End: end, Matchers: ms}, func(_ labels.Labels, newStream bool, e logql.Entry) {
		if newStream {
			st.Streams++
		}
		st.Entries++
		st.Bytes += uint64(len(e.Line))
	}, &st.Chunks)
	return st, err
}

// EachEntry calls f for every selected entry (newStream is true for the
// first entry of each stream) and adds the number of chunks read to
// *chunks when chunks is not nil.
func (s *Store) EachEntry(ctx context.Context, p logql.SelectParams, f func(ls labels.Labels, newStream bool, e logql.Entry), chunks *uint64) error {
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
