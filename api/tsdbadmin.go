package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"
	"google.golang.org/protobuf/proto"
)

var (
	errNoScrapePools = errors.New("weft does not scrape: there are no scrape pools")
	errNoSnapshots   = errors.New("snapshots are not supported by weft")
	errNoAdmin       = errors.New("series deletion is not available")
	errNoCardinality = errors.New("cardinality statistics are not available")
)

// statsTimeout bounds a status/tsdb computation, which upstream's interface
// calls without a context.
const statsTimeout = time.Minute

// headChunksMetric is the metric Prometheus' status/tsdb handler reads the
// head chunk count from.
const headChunksMetric = "prometheus_tsdb_head_chunks"

// tsdbAdmin adapts weft's series deletion and cardinality statistics to
// Prometheus' TSDBAdminStats. It is safe for concurrent use when its parts are.
type tsdbAdmin struct {
	admin SeriesDeleter
	card  CardinalityReader
}

func (a *tsdbAdmin) CleanTombstones() error {
	if a.admin == nil {
		return errNoAdmin
	}
	if err := a.admin.CleanTombstones(context.Background()); err != nil {
		return fmt.Errorf("clean tombstones: %w", err)
	}
	return nil
}

func (a *tsdbAdmin) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	if a.admin == nil {
		return errNoAdmin
	}
	if err := a.admin.DeleteSeries(ctx, mint, maxt, ms...); err != nil {
		return fmt.Errorf("delete series: %w", err)
	}
	return nil
}

func (*tsdbAdmin) Snapshot(string, bool) error { return errNoSnapshots }

// Stats converts weft's cardinality statistics into Prometheus' shape. The
// label name is always __name__ in Prometheus' API.
func (a *tsdbAdmin) Stats(_ string, limit int) (*tsdb.Stats, error) {
	if a.card == nil {
		return nil, errNoCardinality
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	c, err := a.card.Cardinality(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("cardinality: %w", err)
	}
	return &tsdb.Stats{
		NumSeries: c.NumSeries,
		MinTime:   c.MinTime,
		MaxTime:   c.MaxTime,
		IndexPostingStats: &index.PostingsStats{
			CardinalityMetricsStats: toIndexStats(c.SeriesCountByMetricName, limit),
			CardinalityLabelStats:   toIndexStats(c.LabelValueCountByLabelName, limit),
			LabelValueStats:         toIndexStats(c.MemoryInBytesByLabelName, limit),
			LabelValuePairsStats:    toIndexStats(c.SeriesCountByLabelValuePair, limit),
			NumLabelPairs:           c.NumLabelPairs,
		},
	}, nil
}

func toIndexStats(in []CardinalityStat, limit int) []index.Stat {
	if limit > 0 && len(in) > limit {
		in = in[:limit]
	}
	out := make([]index.Stat, len(in))
	for i, s := range in {
		out[i] = index.Stat{Name: s.Name, Count: s.Value}
	}
	return out
}

func (*tsdbAdmin) WALReplayStatus() (tsdb.WALReplayStatus, error) {
	return tsdb.WALReplayStatus{}, nil
}

func (*tsdbAdmin) BlockMetas() ([]tsdb.BlockMeta, error) { return []tsdb.BlockMeta{}, nil }

// withHeadChunks adds the gauge Prometheus' status/tsdb handler reads the
// head chunk count from to the gatherer the API sees (and only that one: it
// is not exported on /metrics).
func withHeadChunks(g prometheus.Gatherer, card CardinalityReader) prometheus.Gatherer {
	if card == nil {
		return g
	}
	return prometheus.Gatherers{g, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
		defer cancel()
		c, err := card.Cardinality(ctx, 1)
		if err != nil {
			return nil, fmt.Errorf("cardinality: %w", err)
		}
		if c.ChunkCount < 0 {
			return nil, nil
		}
		return []*dto.MetricFamily{{
			Name:   proto.String(headChunksMetric),
			Help:   proto.String("Chunks in the head."),
			Type:   dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(c.ChunkCount))}}},
		}}, nil
	})}
}
