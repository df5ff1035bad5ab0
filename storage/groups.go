package storage

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// SelectGroups is Select for an aggregation "by (by...)": it returns the
// series matching ms with samples in the hinted range grouped by the values
// of the labels by, without building their label sets (the index reads
// the values off its compact in-memory records). groups holds each group's
// grouping labels, as PromQL's aggregation output has them; the set yields
// the groups' series one group after the other, each group in ascending
// series ID order, which is the order Select yields them in. The series
// have no labels, and the set's Group method returns the group of the
// current one.
//
// hints bound the range as for Select. When hints.Step and hints.Range
// are 0 (an instant selector evaluated at hints.End) a series yields only
// its latest sample in the range where the head knows it, as with
// WithLatestSampleSelects. hints.Limit and the series API's Func are not
// supported. Closing the querier releases the set.
func (q *querier) SelectGroups(ctx context.Context, hints *promstorage.SelectHints, by []string, ms ...*labels.Matcher) ([]labels.Labels, promstorage.SeriesSet, error) {
	if hints == nil || hints.Limit > 0 || hints.Func == "series" {
		return nil, nil, fmt.Errorf("select groups: hints are required, limit and series hints are not supported")
	}
	ss, err := q.newSeriesSet(ctx, hints, ms)
	if err != nil || ss == nil {
		return nil, emptyGroupedSet{}, err
	}
	ss.latestOnly = hints.Step == 0 && hints.Range == 0
	gs, err := q.db.idx.GroupBy(ctx, ss.ids, by)
	if err != nil {
		return nil, nil, fmt.Errorf("select groups: %w", err)
	}
	groups := make([]labels.Labels, len(gs))
	ss.ids, ss.groupOf = ss.ids[:0], make([]int32, 0, len(ss.ids))
	for i, g := range gs {
		groups[i] = g.Labels
		ss.ids = append(ss.ids, g.IDs...)
		for range g.IDs {
			ss.groupOf = append(ss.groupOf, int32(i))
		}
	}
	q.sets = append(q.sets, ss)
	return groups, ss, nil
}

// Group returns the group of the current series of a SelectGroups set.
func (ss *seriesSet) Group() int { return int(ss.groupOf[ss.curPos]) }

// Latest returns, for an instant SelectGroups set (hints.Step and Range 0),
// the only sample the current series has to offer when the head knows it:
// its latest at or before the end of the range. ok is false when the
// series must be read with At().Iterator. It spares building a series and
// an iterator for each of a million series.
func (ss *seriesSet) Latest() (t int64, v float64, ok bool) {
	e := ss.curEntry
	if e == nil || e.latest != latestOne {
		return 0, 0, false
	}
	x := ss.points[e.point]
	return x.t, x.v, true
}

type emptyGroupedSet struct{}

func (emptyGroupedSet) Next() bool                        { return false }
func (emptyGroupedSet) At() promstorage.Series            { return nil }
func (emptyGroupedSet) Err() error                        { return nil }
func (emptyGroupedSet) Warnings() annotations.Annotations { return nil }
func (emptyGroupedSet) Group() int                        { return 0 }
