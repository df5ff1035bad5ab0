package logstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage/logentry"
)

// benchLines makes n log lines of a typical service: logfmt with a trace ID.
func benchLines(start, n int) []logentry.Entry {
	es := make([]logentry.Entry, n)
	for i := range es {
		j := start + i
		es[i] = logentry.Entry{
			Timestamp: int64(j) * 1e6,
			Line: fmt.Sprintf(`ts=2026-11-30T12:00:%02d.%03dZ level=info caller=server.go:%d msg="request done" method=GET path=/api/v1/items/%d status=200 duration=%dms trace_id=%032x`,
				j%60, j%1000, 100+j%50, j%977, j%300, uint64(j)*0x9e3779b97f4a7c15),
			Metadata: labels.FromStrings("detected_level", "info"),
		}
	}
	return es
}

// BenchmarkPush: one synced batch per push of 100 lines.
func BenchmarkPush(b *testing.B) {
	db := openTestDB(b, b.TempDir())
	defer db.close(b)
	s := openTestStore(b, db, testOptions())
	ls := labels.FromStrings("app", "api", "pod", "api-0")
	const per = 100
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: benchLines(i*per, per)}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkPushParallel: 8 pushers per CPU on their own streams; Pebble's
// commit pipeline lets them share fsyncs.
func BenchmarkPushParallel(b *testing.B) {
	db := openTestDB(b, b.TempDir())
	defer db.close(b)
	s := openTestStore(b, db, testOptions())
	const per = 100
	var next atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := next.Add(1)
		ls := labels.FromStrings("app", "api", "pod", fmt.Sprint("api-", g))
		for i := 0; pb.Next(); i++ {
			if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: benchLines(i*per, per)}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkSealedSize reports the stored bytes per line of sealed chunks.
func BenchmarkSealedSize(b *testing.B) {
	es := benchLines(0, 4096)
	raw := 0
	for _, e := range es {
		raw += len(e.Line)
	}
	var n int
	b.ReportAllocs()
	for range b.N {
		head, filter, data := encodeChunk(es)
		n = len(head) + len(filter) + len(data)
	}
	_, filter, _ := encodeChunk(es)
	b.ReportMetric(float64(n)/float64(len(es)), "B/line")
	b.ReportMetric(float64(raw)/float64(len(es)), "raw-B/line")
	b.ReportMetric(float64(len(filter))/float64(len(es)), "filter-B/line")
}

// BenchmarkNeedleSearch: |= "<trace id>" over 100 sealed chunks; the token
// filter leaves one to decode.
func BenchmarkNeedleSearch(b *testing.B) {
	db := openTestDB(b, b.TempDir())
	defer db.close(b)
	o := testOptions()
	o.SealEntries = 1000
	s := openTestStore(b, db, o)
	ls := labels.FromStrings("app", "api")
	const total = 100_000
	for i := 0; i < total; i += 1000 {
		if err := s.Push(context.Background(), []PushStream{{Labels: ls, Entries: benchLines(i, 1000)}}); err != nil {
			b.Fatal(err)
		}
	}
	needle := benchLines(54321, 1)[0].Line[len(benchLines(54321, 1)[0].Line)-32:]
	p := logentry.SelectParams{Start: 0, End: 1 << 62, LineFilters: []logentry.LineFilter{{Op: logentry.LineContains, Value: needle}}}
	b.ReportAllocs()
	b.ResetTimer()
	read := 0
	for range b.N {
		it, err := s.Select(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		for it.Next() {
		}
		read = it.(*iterator).chunksRead
		it.Close()
	}
	b.ReportMetric(float64(read), "chunks-read")
	b.ReportMetric(float64(total/1000), "chunks")
}
