package app

import (
	"context"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cluster/querier"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

// tenantSeriesCounter counts the metric series of the tenant of ctx that
// match ms in the partitions of the last day: the active series of the
// per-tenant max_active_series and max_series_per_metric limits.
func tenantSeriesCounter(db *storage.DB) func(ctx context.Context, ms ...*labels.Matcher) (int, error) {
	return func(ctx context.Context, ms ...*labels.Matcher) (int, error) {
		now := time.Now()
		bm, err := db.Index().Postings(ctx, index.KindMetric, now.Add(-24*time.Hour).UnixMilli(), now.UnixMilli(), ms...)
		if err != nil {
			return 0, err
		}
		return int(bm.GetCardinality()), nil
	}
}

// querierCardinality adapts a scale-out querier's merge of its ingesters'
// statistics (querier.TSDBStatus) to api.CardinalityReader.
type querierCardinality struct{ q *querier.Querier }

func (c querierCardinality) Cardinality(ctx context.Context, limit int) (api.Cardinality, error) {
	s, err := c.q.TSDBStatus(ctx, limit)
	if err != nil {
		return api.Cardinality{}, err
	}
	conv := func(in []querier.Stat) []api.CardinalityStat {
		out := make([]api.CardinalityStat, len(in))
		for i, st := range in {
			out[i] = api.CardinalityStat{Name: st.Name, Value: st.Value}
		}
		return out
	}
	h := s.HeadStats
	return api.Cardinality{
		NumSeries:                   h.NumSeries,
		NumLabelPairs:               h.NumLabelPairs,
		ChunkCount:                  h.ChunkCount,
		MinTime:                     h.MinTime,
		MaxTime:                     h.MaxTime,
		SeriesCountByMetricName:     conv(s.SeriesCountByMetricName),
		LabelValueCountByLabelName:  conv(s.LabelValueCountByLabelName),
		MemoryInBytesByLabelName:    conv(s.MemoryInBytesByLabelName),
		SeriesCountByLabelValuePair: conv(s.SeriesCountByLabelValuePair),
	}, nil
}
