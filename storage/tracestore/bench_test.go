package tracestore

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftdb/weft/storage/traceentry"
)

func dirBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// BenchmarkPushSeal pushes b.N generated traces (1-6 spans each, every
// field kind) in requests of 50 traces, seals them and compacts the
// database: it reports ns/span for push + seal and the bytes on disk per
// span (the whole Pebble directory, so the index is counted too).
func BenchmarkPushSeal(b *testing.B) {
	dir := b.TempDir()
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(b, dir)
	defer tdb.close(b)
	s := openTestStore(b, tdb, testOptions(c))
	traces := genTraces(rand.New(rand.NewPCG(1, 2)), b.N, c.t, time.Hour)
	spans := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < len(traces); i += 50 {
		var batch []traceentry.Span
		for _, tr := range traces[i:min(i+50, len(traces))] {
			batch = append(batch, tr.Spans...)
			spans += len(tr.Spans)
		}
		push(b, s, batch)
	}
	if err := s.Seal(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := tdb.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		b.Fatal(err)
	}
	if err := tdb.db.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(spans), "ns/span")
	b.ReportMetric(float64(dirBytes(b, dir))/float64(spans), "disk-B/span")
}

// BenchmarkFindTraceByID looks up random traces among 20,000 sealed into
// blocks.
func BenchmarkFindTraceByID(b *testing.B) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(b, b.TempDir())
	defer tdb.close(b)
	o := testOptions(c)
	o.PageBytes = DefaultOptions().PageBytes
	s := openTestStore(b, tdb, o)
	traces := genTraces(rand.New(rand.NewPCG(3, 4)), 20000, c.t, time.Hour)
	for i := 0; i < len(traces); i += 500 {
		var batch []traceentry.Span
		for _, tr := range traces[i : i+500] {
			batch = append(batch, tr.Spans...)
		}
		push(b, s, batch)
		if err := s.Seal(context.Background(), true); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for range b.N {
		tr, err := s.FindTraceByID(context.Background(), traces[rng.IntN(len(traces))].TraceID, 0, 0)
		if err != nil || tr == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindTraceByIDHead looks up random traces among 20,000 still in
// the head (not sealed yet): what a lookup right after a burst of ingest
// costs.
func BenchmarkFindTraceByIDHead(b *testing.B) {
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	tdb := openTestDB(b, b.TempDir())
	defer tdb.close(b)
	s := openTestStore(b, tdb, testOptions(c))
	traces := genTraces(rand.New(rand.NewPCG(3, 4)), 20000, c.t, time.Hour)
	for i := 0; i < len(traces); i += 500 {
		var batch []traceentry.Span
		for _, tr := range traces[i : i+500] {
			batch = append(batch, tr.Spans...)
		}
		push(b, s, batch)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tr, err := s.FindTraceByID(context.Background(), traces[rng.IntN(len(traces))].TraceID, 0, 0)
		if err != nil || tr == nil {
			b.Fatal(err)
		}
	}
}
