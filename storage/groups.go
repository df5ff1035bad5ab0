package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/weftdb/weft/index/tenant"
)

// SelectGroups is Select for an aggregation "by (by...)": it returns the
// series matching ms with samples in the hinted range grouped by the values
// of the labels by, without building their label sets (the index reads
// the values off its compact in-memory records). groups holds each group's
// grouping labels, as PromQL's aggregation output has them; the set yields
// the series in ascending ID order, the order Select yields them in (and
// the order of their memory: a million series are read several times
// faster in it than group by group). The series have no labels, and the
// set's Group method returns the group of the current one.
//
// hints bound the range as for Select. When hints.Step and hints.Range
// are 0 (an instant selector evaluated at hints.End) a series yields only
// its latest sample in the range where the head knows it, as with
// WithLatestSampleSelects. hints.Limit and the series API's Func are not
// supported, nor grouping by a tenant label (the stored tenant label, or
// the federated one a read of several tenants sees: the index knows only
// the first, and a reader sees it under the second or not at all): the
// caller leaves those aggregations to the engine. Closing the querier
// releases the set.
func (q *querier) SelectGroups(ctx context.Context, hints *promstorage.SelectHints, by []string, ms ...*labels.Matcher) ([]labels.Labels, promstorage.SeriesSet, error) {
	if hints == nil || hints.Limit > 0 || hints.Func == "series" {
		return nil, nil, fmt.Errorf("select groups: hints are required, limit and series hints are not supported")
	}
	if slices.Contains(by, tenant.LabelName) || slices.Contains(by, tenant.FederatedLabelName) {
		return nil, nil, fmt.Errorf("select groups: grouping by a tenant label is not supported")
	}
	ss, bm, err := q.newSeriesSet(ctx, hints, ms)
	if err != nil || ss == nil {
		return nil, emptyGroupedSet{}, err
	}
	ss.latestOnly = hints.Step == 0 && hints.Range == 0
	g, err := q.db.idx.GroupBy(ctx, bm, ss.mint, ss.maxt, by)
	if err != nil {
		return nil, nil, fmt.Errorf("select groups: %w", err)
	}
	ss.ids, ss.groupOf = g.IDs, g.GroupOf
	q.sets = append(q.sets, ss)
	return g.Groups, ss, nil
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

// Shards splits a SelectGroups set not iterated yet into at most n sets
// over disjoint sets of whole groups with about as many series each, for
// evaluating groups in parallel: each shard is a set of its own (Group and
// Latest included; its Group indexes the same groups), in ascending ID
// order, safe to iterate concurrently with the others. ss itself must not
// be iterated afterwards. Shards are released with the querier.
func (ss *seriesSet) Shards(n int) []promstorage.SeriesSet {
	if n < 2 || ss.next != 0 || ss.groupOf == nil {
		return []promstorage.SeriesSet{ss}
	}
	var sizes []int
	for _, g := range ss.groupOf {
		for int(g) >= len(sizes) {
			sizes = append(sizes, 0)
		}
		sizes[g]++
	}
	n = min(n, len(sizes))
	if n < 2 {
		return []promstorage.SeriesSet{ss}
	}
	// Largest groups first, each to the shard with the fewest series.
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return sizes[b] - sizes[a] })
	shardOf, load := make([]int, len(sizes)), make([]int, n)
	for _, g := range order {
		least := 0
		for i := range load {
			if load[i] < load[least] {
				least = i
			}
		}
		shardOf[g] = least
		load[least] += sizes[g]
	}
	shards := make([]*seriesSet, n)
	out := make([]promstorage.SeriesSet, n)
	for i := range shards {
		shards[i] = &seriesSet{
			q: ss.q, ctx: ss.ctx, mint: ss.mint, maxt: ss.maxt, latestOnly: ss.latestOnly,
			ids: make([]uint64, 0, load[i]), groupOf: make([]int32, 0, load[i]),
		}
		ss.q.sets = append(ss.q.sets, shards[i])
		out[i] = shards[i]
	}
	for i, id := range ss.ids {
		sh := shards[shardOf[ss.groupOf[i]]]
		sh.ids = append(sh.ids, id)
		sh.groupOf = append(sh.groupOf, ss.groupOf[i])
	}
	return out
}

type emptyGroupedSet struct{}

func (emptyGroupedSet) Next() bool                        { return false }
func (emptyGroupedSet) At() promstorage.Series            { return nil }
func (emptyGroupedSet) Err() error                        { return nil }
func (emptyGroupedSet) Warnings() annotations.Annotations { return nil }
func (emptyGroupedSet) Group() int                        { return 0 }
