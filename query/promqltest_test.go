package query_test

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/storage"
)

// TestPromQLConformance runs Prometheus' built-in PromQL test files against
// weft's store, with the engine configured as promqltest.NewTestEngine does
// and weft's optimizations applied from the same list the server uses.
func TestPromQLConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("promqltest suite is long")
	}
	// Same engine as Prometheus' own TestEvaluations (promql_test.go).
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	// The test engine delays name removal and uses start timestamps; the
	// optimizations must know.
	eo := query.DefaultEngineOptions()
	eo.DelayedNameRemoval, eo.StartTimestamps = true, true
	for _, tc := range []struct {
		name            string
		samplesPerChunk int
		engine          promql.QueryEngine
	}{
		// Default chunking: most test series stay in the head. Queries
		// run as weft's server runs them (query.DefaultOptimizations):
		// instant queries with latest-sample selects, aggregations pushed
		// down.
		{"default", 0, query.Optimize(engine, query.DefaultOptimizations(eo)...)},
		// The engine alone, as a Prometheus server would run it.
		{"engine_only", 0, query.Optimize(engine)},
		// 30 samples per chunk: most samples are read back from sealed
		// chunks in Pebble, across many chunk boundaries. (With 4, two evals
		// of native_histograms.test at line 2017/2022 fail: a Prometheus
		// histogram chunk reports its first sample's counter-reset hint as
		// "unknown", and those evals need the "not_reset" hint of a sample
		// that then starts a chunk; Prometheus' own head fails them the same
		// way with such small chunks.)
		// Aggregations are pushed down here too, reading those chunks.
		{"small_chunks", 30, query.Optimize(engine, query.PushdownAggregations(query.PushdownOptions{DelayedNameRemoval: true, StartTimestamps: true}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			promqltest.RunBuiltinTestsWithStorage(t, tc.engine, func(tb testing.TB) promstorage.Storage {
				opts := storage.DefaultOptions()
				opts.CheckpointInterval = -1
				// promqltest loads 1970 timestamps; retention must not drop them.
				opts.Retention, opts.RetentionInterval = -1, -1
				opts.SamplesPerChunk = tc.samplesPerChunk
				db, err := storage.Open(context.Background(), tb.TempDir(), opts)
				if err != nil {
					tb.Fatalf("open: %v", err)
				}
				tb.Cleanup(func() { _ = db.Close() })
				return db
			})
		})
	}
}
