package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"

	weftstorage "github.com/weftdb/weft/storage"
)

const (
	rwCTV1 = "application/x-protobuf"
	rwCTV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
)

// rwOpenWeft opens weft's storage in a temp dir, without background work.
func rwOpenWeft(tb testing.TB) *weftstorage.DB {
	tb.Helper()
	o := weftstorage.DefaultOptions()
	o.CheckpointInterval = -1
	db, err := weftstorage.Open(tb.Context(), tb.TempDir(), o)
	if err != nil {
		tb.Fatalf("open storage: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close storage: %v", err)
		}
	})
	return db
}

func rwMarshal(tb testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	tb.Helper()
	b, err := m.Marshal()
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return b
}

// rwPost sends body (snappy-encoded here) to h and returns the recorded response.
func rwPost(tb testing.TB, h http.Handler, contentType string, raw []byte) *httptest.ResponseRecorder {
	tb.Helper()
	return rwPostRaw(tb, h, contentType, "snappy", s2.EncodeSnappy(nil, raw))
}

func rwPostRaw(tb testing.TB, h http.Handler, contentType, encoding string, body []byte) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	req.Header.Set("X-Prometheus-Remote-Write-Version", "2.0.0")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// rwV2Series symbolizes ls into st.
func rwV2Series(st *writev2.SymbolsTable, ls labels.Labels, samples ...writev2.Sample) writev2.TimeSeries {
	return writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(ls, nil), Samples: samples}
}

func rwV1Series(ls labels.Labels, samples ...prompb.Sample) prompb.TimeSeries {
	return prompb.TimeSeries{Labels: prompb.FromLabels(ls, nil), Samples: samples}
}

// rwStored returns every series in q's range as "labels" → sample count.
func rwStored(tb testing.TB, q storage.Queryable, ms ...*labels.Matcher) map[string]int {
	tb.Helper()
	if len(ms) == 0 {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}
	}
	qr, err := q.Querier(0, 1<<62)
	if err != nil {
		tb.Fatalf("querier: %v", err)
	}
	defer qr.Close()
	ss := qr.Select(tb.Context(), false, nil, ms...)
	out := map[string]int{}
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		n := 0
		for it.Next() != 0 {
			n++
		}
		if err := it.Err(); err != nil {
			tb.Fatalf("iterate: %v", err)
		}
		out[s.Labels().String()] = n
	}
	if err := ss.Err(); err != nil {
		tb.Fatalf("select: %v", err)
	}
	return out
}

func rwKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
