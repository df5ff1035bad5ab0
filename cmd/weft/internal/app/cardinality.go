package app

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

// cardinalityWindow is the time range status/tsdb reports on, ending at the
// newest sample: one index partition, the streams active "today". Prometheus
// reports its head (the last two to three hours); a day covers that and
// stays one partition's postings.
const cardinalityWindow = 24 * time.Hour

// cardinality adapts weft's index statistics to api.CardinalityReader.
type cardinality struct {
	db *storage.DB
}

func (c *cardinality) Cardinality(ctx context.Context, limit int) (api.Cardinality, error) {
	st := c.db.Stats()
	if st.MaxTime < st.MinTime { // empty store
		return api.Cardinality{ChunkCount: st.HeadChunks, MinTime: st.MinTime, MaxTime: st.MaxTime}, nil
	}
	maxt := st.MaxTime
	mint := maxt - cardinalityWindow.Milliseconds()
	is, err := c.db.Index().Stats(ctx, index.KindMetric, mint, maxt, limit)
	if err != nil {
		return api.Cardinality{}, fmt.Errorf("index stats: %w", err)
	}
	conv := func(in []index.Stat) []api.CardinalityStat {
		out := make([]api.CardinalityStat, len(in))
		for i, s := range in {
			out[i] = api.CardinalityStat{Name: s.Name, Value: s.Count}
		}
		return out
	}
	return api.Cardinality{
		NumSeries:                   is.NumStreams,
		NumLabelPairs:               is.NumLabelPairs,
		ChunkCount:                  st.HeadChunks,
		MinTime:                     st.MinTime,
		MaxTime:                     st.MaxTime,
		SeriesCountByMetricName:     conv(is.SeriesCountByMetricName),
		LabelValueCountByLabelName:  conv(is.LabelValueCountByLabelName),
		MemoryInBytesByLabelName:    conv(is.MemoryInBytesByLabelName),
		SeriesCountByLabelValuePair: conv(is.SeriesCountByLabelValuePair),
	}, nil
}

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

// Churn answers the cardinality explorer's churn over the metric series.
func (c *cardinality) Churn(ctx context.Context, mint, maxt int64, sets ...[]*labels.Matcher) (index.Churn, error) {
	return c.db.Index().Churn(ctx, index.KindMetric, mint, maxt, sets...)
}
