// Package apitest provides a backend for weft's HTTP API over Prometheus' own
// TSDB, for tests of the API and of the server wiring that must not depend on
// weft's storage engine. It also serves as the reference in differential
// tests: the same handlers over Prometheus' storage must answer as Prometheus
// does.
package apitest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/weftdb/weft/api"
)

// TSDB is an api.Storage, api.MetadataReader, api.SeriesDeleter and
// api.CardinalityReader over a Prometheus TSDB in a temporary directory.
// Safe for concurrent use; Close removes the directory.
type TSDB struct {
	*tsdb.DB
	dir string

	mu   sync.Mutex
	meta map[string][]metadata.Metadata
}

// OpenTSDB opens a TSDB in a new temporary directory with exemplar storage
// and a wide out-of-order window, so tests may append in any order.
func OpenTSDB() (*TSDB, error) {
	dir, err := os.MkdirTemp("", "weft-apitest-")
	if err != nil {
		return nil, fmt.Errorf("create temp dir: %w", err)
	}
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = 0
	opts.EnableExemplarStorage = true
	opts.MaxExemplars = 100_000
	opts.OutOfOrderTimeWindow = 365 * 24 * 3600 * 1000
	db, err := tsdb.Open(dir, nil, nil, opts, tsdb.NewDBStats())
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("open tsdb: %w", err)
	}
	return &TSDB{DB: db, dir: dir, meta: map[string][]metadata.Metadata{}}, nil
}

// Close closes the database and removes its directory.
func (t *TSDB) Close() error {
	err := t.DB.Close()
	if rmErr := os.RemoveAll(t.dir); err == nil {
		err = rmErr
	}
	return err
}

// SetMetadata records metadata for a metric name.
func (t *TSDB) SetMetadata(metric string, m metadata.Metadata) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.meta[metric] = []metadata.Metadata{m}
}

// Metadata implements api.MetadataReader.
func (t *TSDB) Metadata(_ context.Context, metric string, limit int) (map[string][]metadata.Metadata, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string][]metadata.Metadata{}
	names := make([]string, 0, len(t.meta))
	for n := range maps.Keys(t.meta) {
		if metric == "" || n == metric {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if limit >= 0 && len(out) >= limit {
			break
		}
		out[n] = append([]metadata.Metadata(nil), t.meta[n]...)
	}
	return out, nil
}

// DeleteSeries implements api.SeriesDeleter.
func (t *TSDB) DeleteSeries(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	return t.DB.Delete(ctx, mint, maxt, ms...)
}

// CleanTombstones implements api.SeriesDeleter.
func (t *TSDB) CleanTombstones(context.Context) error { return t.DB.CleanTombstones() }

// Cardinality implements api.CardinalityReader from the head's postings.
func (t *TSDB) Cardinality(_ context.Context, limit int) (api.Cardinality, error) {
	s := t.DB.Head().Stats(labels.MetricName, limit)
	conv := func(in []index.Stat) []api.CardinalityStat {
		out := make([]api.CardinalityStat, len(in))
		for i, s := range in {
			out[i] = api.CardinalityStat{Name: s.Name, Value: s.Count}
		}
		return out
	}
	return api.Cardinality{
		NumSeries:                   s.NumSeries,
		NumLabelPairs:               s.IndexPostingStats.NumLabelPairs,
		ChunkCount:                  -1, // not exposed by tsdb.Head
		MinTime:                     s.MinTime,
		MaxTime:                     s.MaxTime,
		SeriesCountByMetricName:     conv(s.IndexPostingStats.CardinalityMetricsStats),
		LabelValueCountByLabelName:  conv(s.IndexPostingStats.CardinalityLabelStats),
		MemoryInBytesByLabelName:    conv(s.IndexPostingStats.LabelValueStats),
		SeriesCountByLabelValuePair: conv(s.IndexPostingStats.LabelValuePairsStats),
	}, nil
}
