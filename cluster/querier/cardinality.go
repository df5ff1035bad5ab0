package querier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/readapi"
	"github.com/weftdb/weft/index"
)

// Bounds of TSDBStatus.
const (
	// statusOverfetch: each ingester is asked for this many times the
	// requested top list, so that a name just outside every ingester's
	// top can still make the merged one.
	statusOverfetch = 4
	// statusMaxLimit is the most any ingester is asked for.
	statusMaxLimit = 10000
	// statusWindow is the range label values are counted over: the last
	// day up to the newest sample, as an ingester's statistics are.
	statusWindow = 24 * time.Hour
)

// TSDBStatus is /api/v1/status/tsdb's data: an ingester's, as decoded,
// and the querier's merge of them.
type TSDBStatus struct {
	HeadStats                   HeadStats `json:"headStats"`
	SeriesCountByMetricName     []Stat    `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName  []Stat    `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName    []Stat    `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair []Stat    `json:"seriesCountByLabelValuePair"`
}

// HeadStats is status/tsdb's headStats (times in unix ms).
type HeadStats struct {
	NumSeries     uint64 `json:"numSeries"`
	NumLabelPairs int    `json:"numLabelPairs"`
	ChunkCount    int64  `json:"chunkCount"`
	MinTime       int64  `json:"minTime"`
	MaxTime       int64  `json:"maxTime"`
}

// Stat is one named count of a top list.
type Stat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// TSDBStatus merges the ingesters' status/tsdb, one ingester per
// partition (a replica is not counted twice): series are disjoint across
// partitions, so series counts (in total, per metric name, per label
// pair), chunks and memory are summed; the number of values of a label
// name is counted exactly for the candidate names (every ingester's top
// list) over the cluster's last day, since values repeat across
// partitions. NumLabelPairs is the ingesters' sum (a pair on two ingesters
// counts twice). An ingester that owns partitions another answers for
// (overlapping ownership that is not a replica) would count them twice:
// it is logged.
func (q *Querier) TSDBStatus(ctx context.Context, limit int) (TSDBStatus, error) {
	if limit <= 0 {
		limit = 10
	}
	ask := strconv.Itoa(min(max(limit*statusOverfetch, limit), statusMaxLimit))
	got, missing, err := fanout(ctx, q, func(ctx context.Context, in *ingester, parts []int32, total int32) (TSDBStatus, error) {
		if st, _ := in.snapshot(); len(owned(st.Partitions, total)) != len(parts) {
			q.logger.Warn("querier_status_overlap", "ingester", in.base, "answers_for", parts, "owns", st.Partitions)
		}
		var s TSDBStatus
		err := q.promGet(ctx, in.base, "/api/v1/status/tsdb", map[string][]string{"limit": {ask}}, &s)
		return s, err
	})
	if err != nil {
		return TSDBStatus{}, err
	}
	if _, err := q.partial(ctx, missing); err != nil {
		return TSDBStatus{}, err
	}
	out := TSDBStatus{HeadStats: HeadStats{MinTime: math.MaxInt64, MaxTime: math.MinInt64}}
	byName, byPair, memory := map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	candidates := map[string]bool{}
	for _, s := range got {
		h := s.HeadStats
		out.HeadStats.NumSeries += h.NumSeries
		out.HeadStats.NumLabelPairs += h.NumLabelPairs
		if h.ChunkCount > 0 {
			out.HeadStats.ChunkCount += h.ChunkCount
		}
		if h.MinTime <= h.MaxTime { // an empty ingester reports none
			out.HeadStats.MinTime = min(out.HeadStats.MinTime, h.MinTime)
			out.HeadStats.MaxTime = max(out.HeadStats.MaxTime, h.MaxTime)
		}
		add(byName, s.SeriesCountByMetricName)
		add(byPair, s.SeriesCountByLabelValuePair)
		add(memory, s.MemoryInBytesByLabelName)
		for _, st := range s.LabelValueCountByLabelName {
			candidates[st.Name] = true
		}
	}
	out.SeriesCountByMetricName = top(byName, limit)
	out.SeriesCountByLabelValuePair = top(byPair, limit)
	out.MemoryInBytesByLabelName = top(memory, limit)
	out.LabelValueCountByLabelName = []Stat{}
	if out.HeadStats.MinTime > out.HeadStats.MaxTime { // no samples anywhere
		return out, nil
	}
	maxt := out.HeadStats.MaxTime
	sq, err := q.Querier(maxt-statusWindow.Milliseconds(), maxt)
	if err != nil {
		return TSDBStatus{}, err
	}
	defer sq.Close()
	values := map[string]uint64{}
	for name := range candidates {
		vs, _, err := sq.LabelValues(ctx, name, nil)
		if err != nil {
			return TSDBStatus{}, fmt.Errorf("values of %s: %w", name, err)
		}
		values[name] = uint64(len(vs))
	}
	out.LabelValueCountByLabelName = top(values, limit)
	return out, nil
}

// owned returns the partitions of ps below total.
func owned(ps []int32, total int32) []int32 {
	var out []int32
	for _, p := range ps {
		if p < total {
			out = append(out, p)
		}
	}
	return out
}

func add(m map[string]uint64, ss []Stat) {
	for _, s := range ss {
		m[s.Name] += s.Value
	}
}

// top returns m's largest limit entries, largest first (by name on ties).
func top(m map[string]uint64, limit int) []Stat {
	out := make([]Stat, 0, len(m))
	for n, v := range m {
		out = append(out, Stat{Name: n, Value: v})
	}
	slices.SortFunc(out, func(a, b Stat) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Churn implements the cardinality explorer's churn over the ingesters
// (one per partition): series are disjoint across partitions, so the
// series created per hour and the series active, created and ended per
// index partition are summed. A count some ingester does not know (its
// index began later) is unknown in the sum; an hour only some ingesters
// report is the sum of theirs. A range the ingesters refuse is
// index.ErrChurnRange.
func (q *Querier) Churn(ctx context.Context, mint, maxt int64, sets ...[]*labels.Matcher) (index.Churn, error) {
	form := url.Values{"start": {formatMs(mint)}, "end": {formatMs(maxt)}}
	for _, ms := range sets {
		form.Add("match[]", selector(ms))
	}
	type hour struct {
		Start   int64  `json:"start"` // unix seconds
		Created uint64 `json:"created"`
	}
	type part struct {
		Start   int64   `json:"start"` // unix seconds
		End     int64   `json:"end"`
		Active  uint64  `json:"active"`
		Created *uint64 `json:"created"` // null: not known
		Ended   *uint64 `json:"ended"`   // null: the newest partition
	}
	type answer struct {
		Hours      []hour `json:"hours"`
		Partitions []part `json:"partitions"`
	}
	got, missing, err := fanout(ctx, q, func(ctx context.Context, in *ingester, _ []int32, _ int32) (answer, error) {
		var a answer
		err := q.promGet(ctx, in.base, "/weft/api/v1/cardinality/churn", form, &a)
		return a, err
	})
	if errors.Is(err, readapi.ErrBadRequest) {
		return index.Churn{}, fmt.Errorf("%w: %w", index.ErrChurnRange, err)
	}
	if err != nil {
		return index.Churn{}, err
	}
	if _, err := q.partial(ctx, missing); err != nil {
		return index.Churn{}, err
	}
	hours := map[int64]uint64{}
	type key struct{ start, end int64 }
	parts := map[key]*index.PartitionChurn{}
	for _, a := range got {
		for _, h := range a.Hours {
			hours[h.Start*1000] += h.Created
		}
		for _, p := range a.Partitions {
			k := key{p.Start * 1000, p.End * 1000}
			m := parts[k]
			if m == nil {
				m = &index.PartitionChurn{Start: k.start, End: k.end, CreatedKnown: true, EndedKnown: true}
				parts[k] = m
			}
			m.Active += p.Active
			if p.Created == nil {
				m.CreatedKnown = false
			} else {
				m.Created += *p.Created
			}
			if p.Ended == nil {
				m.EndedKnown = false
			} else {
				m.Ended += *p.Ended
			}
		}
	}
	var out index.Churn
	for start, n := range hours {
		out.Hours = append(out.Hours, index.HourChurn{Start: start, Created: n})
	}
	slices.SortFunc(out.Hours, func(a, b index.HourChurn) int { return cmp.Compare(a.Start, b.Start) })
	for _, p := range parts {
		if !p.CreatedKnown {
			p.Created = 0
		}
		if !p.EndedKnown {
			p.Ended = 0
		}
		out.Partitions = append(out.Partitions, *p)
	}
	slices.SortFunc(out.Partitions, func(a, b index.PartitionChurn) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}
