package querier

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// TestRemoteReadStreamsChunks: an ingester answers the querier's remote
// read with streamed XOR chunks, decoded into every sample, in label order;
// a set left unread is released by the querier's Close.
func TestRemoteReadStreamsChunks(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	single := newNode(t, nil)
	fill(t, base, single, nil)
	q, err := New(Options{Ingesters: []string{single.srv.URL}, TotalPartitions: total, StatusInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "__name__", "gpu_util")}
	mint, maxt := base.UnixMilli(), base.Add(time.Hour).UnixMilli()
	set, closer, err := q.remoteRead(context.Background(), single.srv.URL, mint, maxt, nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	if closer == nil {
		t.Fatal("the ingester answered with samples, not streamed chunks")
	}
	series, samples := 0, 0
	var prev labels.Labels
	for set.Next() {
		s := set.At()
		if series > 0 && labels.Compare(prev, s.Labels()) >= 0 {
			t.Fatalf("series out of order: %s after %s", s.Labels(), prev)
		}
		prev = s.Labels()
		series++
		it := s.Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			samples++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	if series != 24 || samples != 24*90 {
		t.Fatalf("read %d series, %d samples; want 24, %d", series, samples, 24*90)
	}
	_ = closer()

	// A select that is never read is released by Close (goleak checks).
	sq, _ := q.Querier(mint, maxt)
	q.topo.refresh(context.Background())
	unread := sq.Select(context.Background(), true, nil, ms...)
	_ = unread
	if err := sq.Close(); err != nil {
		t.Fatal(err)
	}
}
