package api

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
)

// TestRemoteWriteConcurrentPooledBuffers sends many requests at once through
// one handler over weft's storage. Request buffers and decoded batches are
// pooled and reused, and labels point into them until they are built; if
// anything handed to storage still pointed into a reused buffer, the stored
// label sets (checked through a Querier) would come back corrupted.
func TestRemoteWriteConcurrentPooledBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(testing.TB) rwStorage
	}{
		{"weft storage", func(tb testing.TB) rwStorage { return rwOpenWeft(tb) }},
		{"prometheus tsdb", func(tb testing.TB) rwStorage { return teststorage.New(tb) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testConcurrentPooledBuffers(t, tc.open(t)) })
	}
}

// rwStorage is what the receiver writes to and the test reads back from.
type rwStorage interface {
	storage.AppendableV2
	storage.Queryable
}

func testConcurrentPooledBuffers(t *testing.T, db rwStorage) {
	h := NewRemoteWriteHandler(db, DefaultRemoteWriteOptions())
	const workers, requests, series = 6, 15, 20
	t0 := time.Now().Add(-time.Minute).UnixMilli()
	var wg sync.WaitGroup
	errs := make(chan string, workers*requests)
	for w := range workers {
		wg.Go(func() {
			for r := range requests {
				st := writev2.NewSymbolTable()
				req := &writev2.Request{}
				for s := range series {
					ls := labels.FromStrings("__name__", fmt.Sprintf("m_w%d", w), "req", fmt.Sprintf("r%03d", r), "series", fmt.Sprintf("s%03d", s))
					req.Timeseries = append(req.Timeseries, rwV2Series(&st, ls, writev2.Sample{Value: float64(s), Timestamp: t0 + int64(r)}))
				}
				req.Symbols = st.Symbols()
				if rec := rwPost(t, h, rwCTV2, rwMarshal(t, req)); rec.Code != http.StatusNoContent {
					errs <- fmt.Sprintf("worker %d request %d: %d %s", w, r, rec.Code, rec.Body.String())
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	got := rwStored(t, db)
	if len(got) != workers*requests*series {
		t.Fatalf("stored %d series, want %d", len(got), workers*requests*series)
	}
	for w := range workers {
		for r := range requests {
			for s := range series {
				k := fmt.Sprintf(`{__name__="m_w%d", req="r%03d", series="s%03d"}`, w, r, s)
				if got[k] != 1 {
					t.Fatalf("series %s has %d samples (corrupted labels?)", k, got[k])
				}
			}
		}
	}
}
