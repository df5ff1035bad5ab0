package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/ingest"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// unavailableAppendable takes samples and fails every commit as a
// scale-out distributor whose produce failed does.
type unavailableAppendable struct{}

func (unavailableAppendable) AppenderV2(context.Context) storage.AppenderV2 {
	return unavailableAppender{}
}

type unavailableAppender struct{}

func (unavailableAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AppendV2Options) (storage.SeriesRef, error) {
	return 1, nil
}
func (unavailableAppender) Commit() error {
	return fmt.Errorf("%w: produce to weft-ingest: broker not available", ingest.ErrUnavailable)
}
func (unavailableAppender) Rollback() error { return nil }

// unavailableLogs fails every push as unavailable.
type unavailableLogs struct{ LogStore }

func (unavailableLogs) Push(context.Context, []logstore.PushStream) error {
	return fmt.Errorf("%w: produce to weft-ingest: timed out", ingest.ErrUnavailable)
}

// TestWriteUnavailableIs503: a write the write path cannot take for now
// (ingest.ErrUnavailable) answers 503 with Retry-After on remote write and
// Loki push (OTLP already maps storage failures so), so senders retry it.
func TestWriteUnavailableIs503(t *testing.T) {
	rw := NewRemoteWriteHandler(unavailableAppendable{}, DefaultRemoteWriteOptions())
	for _, tc := range []struct {
		ct   string
		body []byte
	}{{rwCTV1, rwValidV1(t)}, {rwCTV2, rwValidV2(t)}} {
		rec := rwPost(t, rw, tc.ct, tc.body)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("remote write %s: %d Retry-After %q, want 503 with Retry-After", tc.ct, rec.Code, rec.Header().Get("Retry-After"))
		}
	}

	store := unavailableLogs{}
	lh := NewLokiHandler(store, logql.NewEngine(store, logql.DefaultEngineOptions()), DefaultLokiOptions())
	body := fmt.Sprintf(`{"streams":[{"stream":{"job":"x"},"values":[["%d","line"]]}]}`, time.Now().UnixNano())
	req := httptest.NewRequest(http.MethodPost, "/loki/api/v1/push", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	lh.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("loki push: %d Retry-After %q body %q, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}
