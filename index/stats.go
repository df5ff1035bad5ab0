package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index/tenant"
)

// Stat is one entry of a cardinality top list.
type Stat struct {
	Name  string
	Count uint64
}

// Stats are cardinality statistics in the shape of Prometheus'
// /api/v1/status/tsdb (tsdb/index.PostingsStats plus the head's series count).
// Every list is sorted by Count descending, then Name ascending, and cut to
// the requested top N.
type Stats struct {
	// NumStreams is the number of distinct streams (numSeries).
	NumStreams uint64
	// NumLabelPairs is the number of distinct label pairs.
	NumLabelPairs int
	// SeriesCountByMetricName: streams per value of __name__.
	SeriesCountByMetricName []Stat
	// LabelValueCountByLabelName: distinct values per label name.
	LabelValueCountByLabelName []Stat
	// MemoryInBytesByLabelName: per label name, the sum over its values of
	// the label's size times its stream count — Prometheus' estimate of the
	// bytes label sets spend on that name (stringlabels layout: uvarint
	// length prefixes plus bytes).
	MemoryInBytesByLabelName []Stat
	// SeriesCountByLabelValuePair: streams per "name=value".
	SeriesCountByLabelValuePair []Stat
}

// Stats computes cardinality statistics over the streams of kind (KindAny:
// all kinds) marked in partitions overlapping [mint, maxt], from the bitmaps'
// cardinalities. topN <= 0 returns every entry. A ctx restricted to tenants
// counts only their streams; tenant.LabelName is never counted as a label.
func (ix *Index) Stats(ctx context.Context, kind Kind, mint, maxt int64, topN int) (Stats, error) {
	var st Stats
	var sel *roaring64.Bitmap // the tenants' streams; nil: all
	if _, restricted := tenant.FromContext(ctx); restricted {
		var err error
		if sel, err = ix.Postings(ctx, kind, mint, maxt); err != nil {
			return st, fmt.Errorf("stats: %w", err)
		}
	}
	ps, err := ix.partitionsIn(mint, maxt)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	for _, p := range ps {
		p.rlock()
		defer p.mu.RUnlock()
	}
	type pair struct{ name, value uint32 }
	pairs := map[pair][]*roaring64.Bitmap{}
	var alls []*roaring64.Bitmap
	for _, p := range ps {
		for _, k := range kindsOf(kind) {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if p.all[k] != nil && !p.all[k].IsEmpty() {
				alls = append(alls, p.all[k])
			}
			p.names.each(k, func(_ Kind, nameRef uint32, ne *nameEntry) {
				for v, pl := range ne.values.all() {
					pr := pair{nameRef, v}
					pairs[pr] = append(pairs[pr], pl.bitmap())
				}
			})
		}
	}
	st.NumStreams = unionCardinality(alls)
	if sel != nil {
		st.NumStreams = sel.GetCardinality()
	}

	tenantRef, hasTenant := ix.syms.lookupName(tenant.LabelName)
	metricRef, hasMetric := ix.syms.lookupName(labels.MetricName)
	valuesPerName := map[uint32]uint64{}
	bytesPerName := map[uint32]uint64{}
	for pr, bms := range pairs {
		if hasTenant && pr.name == tenantRef {
			continue
		}
		var n uint64
		if sel == nil {
			n = unionCardinality(bms)
		} else if n = orAll(bms).AndCardinality(sel); n == 0 {
			continue // another tenant's pair
		}
		st.NumLabelPairs++
		name, _ := ix.syms.name(pr.name)
		value, _ := ix.syms.value(pr.name, pr.value)
		valuesPerName[pr.name]++
		bytesPerName[pr.name] += labelSize(name, value) * n
		st.SeriesCountByLabelValuePair = append(st.SeriesCountByLabelValuePair, Stat{Name: name + "=" + value, Count: n})
		if hasMetric && pr.name == metricRef {
			st.SeriesCountByMetricName = append(st.SeriesCountByMetricName, Stat{Name: value, Count: n})
		}
	}
	for ref, n := range valuesPerName {
		name, _ := ix.syms.name(ref)
		st.LabelValueCountByLabelName = append(st.LabelValueCountByLabelName, Stat{Name: name, Count: n})
		st.MemoryInBytesByLabelName = append(st.MemoryInBytesByLabelName, Stat{Name: name, Count: bytesPerName[ref]})
	}
	st.SeriesCountByMetricName = topStats(st.SeriesCountByMetricName, topN)
	st.LabelValueCountByLabelName = topStats(st.LabelValueCountByLabelName, topN)
	st.MemoryInBytesByLabelName = topStats(st.MemoryInBytesByLabelName, topN)
	st.SeriesCountByLabelValuePair = topStats(st.SeriesCountByLabelValuePair, topN)
	return st, nil
}

// unionCardinality returns |∪ bms| without building the union when there is
// only one.
func unionCardinality(bms []*roaring64.Bitmap) uint64 {
	switch len(bms) {
	case 0:
		return 0
	case 1:
		return bms[0].GetCardinality()
	}
	return roaring64.FastOr(bms...).GetCardinality()
}

// labelSize is the bytes one label takes in Prometheus' stringlabels layout
// (labels.SizeOfLabels in the default build): each string is a length — one
// byte below 255, else four — followed by its bytes.
func labelSize(name, value string) uint64 {
	return uint64(stringSize(name) + stringSize(value))
}

func stringSize(s string) int {
	if len(s) < 255 {
		return 1 + len(s)
	}
	return 4 + len(s)
}

// topStats sorts s by Count descending, Name ascending, and keeps n entries.
func topStats(s []Stat, n int) []Stat {
	slices.SortFunc(s, func(a, b Stat) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if n > 0 && len(s) > n {
		s = s[:n:n]
	}
	if s == nil {
		s = []Stat{}
	}
	return s
}
