package record

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/storage"
	"github.com/weftdb/weft/storage/logentry"
	"github.com/weftdb/weft/storage/logstore"
)

func openSubstrate(t *testing.T) *storage.Substrate {
	t.Helper()
	opts := storage.DefaultOptions()
	opts.RetentionInterval = -1
	opts.CheckpointInterval = -1
	sub, err := storage.OpenSubstrate(context.Background(), t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// TestApply: decoded records land in the metric and log stores; applying
// the same metric records again (a replay) changes nothing; data a single
// node would refuse is dropped and counted, not an error.
func TestApply(t *testing.T) {
	sub := openSubstrate(t)
	ap := &Applier{Metrics: sub.Metrics(), Logs: sub.Logs()}
	now := time.Now()
	ms := now.UnixMilli()
	e := NewEncoder()
	series := testSeries()
	for i := range series {
		for j := range series[i].Samples {
			series[i].Samples[j].T = ms - int64(10-j)*1000
			series[i].Samples[j].ST = 0
		}
	}
	streams := []logstore.PushStream{{Labels: labels.FromStrings("job", "train"), Entries: []logentry.Entry{{Timestamp: now.UnixNano(), Line: "step"}}}}
	var recs []Record
	for _, b := range [][]byte{e.AppendMetrics(nil, series), e.AppendLogs(nil, streams)} {
		r, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	got, err := ap.Apply(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Samples != 3 || got.Histograms != 2 || got.Entries != 1 || got.Exemplars != 1 || len(got.Rejected) != 0 {
		t.Fatalf("applied %+v", got)
	}
	again, err := ap.Apply(context.Background(), recs[:1])
	if err != nil {
		t.Fatal(err)
	}
	if again.Samples != 3 || len(again.Rejected) != 0 {
		t.Fatalf("replay applied %+v; want the same samples again, idempotently", again)
	}
	q, err := sub.Metrics().Querier(ms-60_000, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_util"))
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != 0 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("gpu_util has %d samples after apply and replay, want 3", n)
	}

	// A sample far in the future is refused by the store, as at a single
	// node: counted, not an error.
	bad := []Series{{Labels: labels.FromStrings("__name__", "late"), Samples: []Sample{{T: now.Add(24 * time.Hour).UnixMilli(), V: 1}}}}
	r, _ := Decode(e.AppendMetrics(nil, bad))
	got, err = ap.Apply(context.Background(), []Record{r})
	if err != nil || got.Rejected["too_far_in_future"] != 1 {
		t.Fatalf("Apply = %+v, %v; want one too_far_in_future rejection", got, err)
	}
}

// TestApplyTraces: a trace record lands in the trace store whole (its spans
// from both resources), a replay reads back once, spans older than the
// retention are counted as rejected, and an applier without a trace store
// counts every span as rejected.
func TestApplyTraces(t *testing.T) {
	sub := openSubstrate(t)
	ap := &Applier{Metrics: sub.Metrics(), Logs: sub.Logs(), Traces: sub.Traces()}
	rs := testResources()
	now := time.Now().UnixNano()
	for i := range rs {
		for j := range rs[i].Spans {
			sp := &rs[i].Spans[j]
			d := sp.EndUnixNano - sp.StartUnixNano
			sp.StartUnixNano = now - int64(time.Minute) + sp.StartUnixNano - 1_700_000_000_000_000_000
			sp.EndUnixNano = sp.StartUnixNano + d
		}
	}
	b := mustTraces(t, NewEncoder(), rs)
	rec, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second Apply is a replay
		out, err := ap.Apply(context.Background(), []Record{rec})
		if err != nil || out.Spans != 3 || len(out.Rejected) != 0 {
			t.Fatalf("Apply = %+v, %v; want 3 spans", out, err)
		}
	}
	tr, err := sub.Traces().FindTraceByID(context.Background(), rs[0].Spans[0].TraceID, 0, 0)
	if err != nil || tr == nil || len(tr.Spans) != 2 {
		t.Fatalf("FindTraceByID = %+v, %v; want trace 1's 2 spans once", tr, err)
	}
	old, err := Decode(mustTraces(t, NewEncoder(), testResources())) // 2023: past the retention
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ap.Apply(context.Background(), []Record{old}); err != nil || out.Spans != 0 || out.Rejected["too_old"] != 3 {
		t.Fatalf("Apply of old spans = %+v, %v; want 3 rejected too_old", out, err)
	}
	if out, err := (&Applier{}).Apply(context.Background(), []Record{rec}); err != nil || out.Rejected["no_trace_store"] != 3 {
		t.Fatalf("Apply without a trace store = %+v, %v", out, err)
	}
}
