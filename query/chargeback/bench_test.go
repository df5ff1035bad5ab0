package chargeback_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
	"github.com/weftdb/weft/query"
	"github.com/weftdb/weft/query/chargeback"
	"github.com/weftdb/weft/storage"
)

// BenchmarkReportDay: the report of one day at a one-minute step over 64
// GPUs of 8 teams (92,224 GPU samples), by team.
func BenchmarkReportDay(b *testing.B) {
	opts := storage.DefaultOptions()
	opts.Logs.MaintenanceInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	ctx := tenant.With(context.Background(), "acme")
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-24 * time.Hour)
	const gpus = 64
	ap := sub.Metrics().AppenderV2(ctx)
	for g := range gpus {
		ls := labels.FromStrings(labels.MetricName, chargeback.GPUUtilMetric, "gpu_uuid", fmt.Sprintf("GPU-%d", g), "team", fmt.Sprintf("team-%d", g%8))
		for i := 0; i <= 1440; i++ {
			if _, err := ap.Append(0, ls, 0, start.Add(time.Duration(i)*time.Minute).UnixMilli(), float64(g), nil, nil, promstorage.AOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := ap.Commit(); err != nil {
		b.Fatal(err)
	}
	o := chargeback.Options{Engine: query.NewEngine(query.DefaultEngineOptions()), Queryable: sub.Metrics()}
	b.ReportAllocs()
	for b.Loop() {
		rows, err := chargeback.Report(ctx, o, start, end, chargeback.ByTeam)
		if err != nil || len(rows) != 8 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
}
