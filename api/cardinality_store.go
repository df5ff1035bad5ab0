package api

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/storage"
)

// storeCardinalityWindow is the time range status/tsdb reports on, ending at the
// newest sample: one index partition, the streams active "today". Prometheus
// reports its head (the last two to three hours); a day covers that and
// stays one partition's postings.
const storeCardinalityWindow = 24 * time.Hour

// StoreCardinality answers status/tsdb and the cardinality explorer's
// churn (CardinalityReader, ChurnReader) from a single node's metric store
// and its index statistics.
type StoreCardinality struct {
	DB *storage.DB
}

// Cardinality implements CardinalityReader over the store's last day.
func (c StoreCardinality) Cardinality(ctx context.Context, limit int) (Cardinality, error) {
	st := c.DB.Stats()
	if st.MaxTime < st.MinTime { // empty store
		return Cardinality{ChunkCount: st.HeadChunks, MinTime: st.MinTime, MaxTime: st.MaxTime}, nil
	}
	maxt := st.MaxTime
	mint := maxt - storeCardinalityWindow.Milliseconds()
	is, err := c.DB.Index().Stats(ctx, index.KindMetric, mint, maxt, limit)
	if err != nil {
		return Cardinality{}, fmt.Errorf("index stats: %w", err)
	}
	conv := func(in []index.Stat) []CardinalityStat {
		out := make([]CardinalityStat, len(in))
		for i, s := range in {
			out[i] = CardinalityStat{Name: s.Name, Value: s.Count}
		}
		return out
	}
	return Cardinality{
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

// Churn implements ChurnReader over the metric series.
func (c StoreCardinality) Churn(ctx context.Context, mint, maxt int64, sets ...[]*labels.Matcher) (index.Churn, error) {
	return c.DB.Index().Churn(ctx, index.KindMetric, mint, maxt, sets...)
}
