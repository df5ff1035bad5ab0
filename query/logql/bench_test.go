package logql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
)

// sliceSource serves pre-sorted streams without copying, so that the
// benchmarks measure the engine, not the test source.
type sliceSource struct{ streams []memStream }

func (s *sliceSource) Select(_ context.Context, p SelectParams) (EntryIterator, error) {
	it := &sliceIter{p: p, s: s.streams, i: 0, j: -1}
	return it, nil
}

type sliceIter struct {
	p       SelectParams
	s       []memStream
	i, j    int
	checked bool // the matchers were checked for stream i
	ok      bool
}

func (it *sliceIter) Next() bool {
	for it.i < len(it.s) {
		st := &it.s[it.i]
		if !it.checked {
			it.ok, it.checked = true, true
			for _, m := range it.p.Matchers {
				if !m.Matches(st.labels.Get(m.Name)) {
					it.ok = false
					break
				}
			}
		}
		if it.ok {
			for it.j++; it.j < len(st.entries); it.j++ {
				ts := st.entries[it.j].Timestamp
				if ts >= it.p.Start && ts < it.p.End {
					return true
				}
			}
		}
		it.i++
		it.j = -1
		it.checked = false
	}
	return false
}

func (it *sliceIter) At() (labels.Labels, Entry) {
	st := &it.s[it.i]
	return st.labels, st.entries[it.j]
}
func (it *sliceIter) Err() error   { return nil }
func (it *sliceIter) Close() error { return nil }

// benchSource: 20 streams, one entry per stream every 100 ms for an hour
// (720,000 entries), logfmt lines; one line in the whole hour carries the needle.
func benchSource(tb testing.TB) *sliceSource {
	tb.Helper()
	const streams, perStream = 20, 36000
	src := &sliceSource{}
	for s := range streams {
		ms := memStream{labels: labels.FromStrings("app", "bench", "pod", fmt.Sprintf("pod-%02d", s))}
		ms.entries = make([]Entry, perStream)
		for i := range perStream {
			line := fmt.Sprintf(`level=info status=%d dur=%dms msg="request served" path=/api/v1/items/%d`, 200+i%3, i%500, i%1000)
			if s == 7 && i == 12345 {
				line += " trace_id=4bf92f3577b34da6a3ce929d0e0e4736"
			}
			ms.entries[i] = Entry{Timestamp: int64(i) * int64(100*time.Millisecond), Line: line}
		}
		src.streams = append(src.streams, ms)
	}
	return src
}

func BenchmarkQuery(b *testing.B) {
	src := benchSource(b)
	eng := NewEngine(src, DefaultEngineOptions())
	hour := int64(time.Hour)
	for _, bc := range []struct {
		name string
		p    QueryParams
	}{
		{"needle", QueryParams{Query: `{app="bench"} |= "4bf92f3577b34da6a3ce929d0e0e4736"`, Start: 0, End: hour, Limit: 100, Direction: Backward}},
		{"count_over_time_1h_step1m", QueryParams{Query: `sum by (pod) (count_over_time({app="bench"}[1m]))`, Start: int64(time.Minute), End: hour, Step: time.Minute}},
		{"count_over_time_instant_1h", QueryParams{Query: `count_over_time({app="bench"}[1h])`, End: hour, Instant: true}},
		{"logfmt_filter_rate", QueryParams{Query: `sum by (status) (rate({app="bench"} | logfmt | dur > 250ms [5m]))`, Start: int64(5 * time.Minute), End: hour, Step: time.Minute}},
		{"tail_100_backward", QueryParams{Query: `{app="bench"}`, Start: 0, End: hour, Limit: 100, Direction: Backward}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var entries int64
			for b.Loop() {
				res, err := eng.Query(context.Background(), bc.p)
				if err != nil {
					b.Fatal(err)
				}
				entries = res.Stats.EntriesScanned
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(entries), "ns/entry")
		})
	}
}
