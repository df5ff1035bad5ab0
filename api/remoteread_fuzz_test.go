package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/weftdb/weft/query"
)

// newRemoteReadFuzzHandler is the Prometheus API over weft's own storage
// with a few series, so that remote read exercises weft's queriers.
func newRemoteReadFuzzHandler(tb testing.TB, t0 int64) http.Handler {
	db := rwOpenWeft(tb)
	app := db.Appender(tb.Context())
	for i, ls := range []labels.Labels{
		labels.FromStrings("__name__", "up", "job", "api", "instance", "a:9090"),
		labels.FromStrings("__name__", "up", "job", "db", "instance", "b:9090"),
		labels.FromStrings("__name__", "gpu_temperature_celsius", "gpu", "0", "run_id", "r42"),
	} {
		for k := range 240 {
			if _, err := app.Append(0, ls, t0+int64(k)*15_000, float64(i*k)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		tb.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Storage = db
	eo := query.DefaultEngineOptions()
	eo.Timeout = 5 * time.Second
	opts.Engine = query.NewEngine(eo)
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.SetReady(true)
	return s
}

// FuzzRemoteRead fuzzes remote read requests (snappy, protobuf
// ReadRequest: queries, matchers, hints, accepted response types) over
// weft's storage: the handler never panics, decodes nothing it should
// refuse, and answers 200, or 400 for a body that does not decode; a bad
// matcher is the client's error too (400, see remoteReadGuard).
func FuzzRemoteRead(f *testing.F) {
	// The store accepts samples within its out-of-order window of now.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Hour).UnixMilli()
	h := newRemoteReadFuzzHandler(f, t0)
	for _, rr := range []prompb.ReadRequest{
		{Queries: []*prompb.Query{{StartTimestampMs: t0, EndTimestampMs: t0 + 3600_000,
			Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "up"}}}}},
		{Queries: []*prompb.Query{{StartTimestampMs: 0, EndTimestampMs: 1 << 62,
			Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "job", Value: "a.*|d."}, {Type: prompb.LabelMatcher_NRE, Name: "gpu", Value: ".+"}},
			Hints:    &prompb.ReadHints{StepMs: 15000, Func: "rate", StartMs: t0, EndMs: t0 + 3600_000, RangeMs: 300000, Grouping: []string{"job"}, By: true}}},
			AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_STREAMED_XOR_CHUNKS}},
		{Queries: []*prompb.Query{{StartTimestampMs: t0 + 3600_000, EndTimestampMs: t0,
			Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_NEQ, Name: "__name__", Value: ""}}}, {}},
			AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{prompb.ReadRequest_SAMPLES, 7}},
		{Queries: []*prompb.Query{{Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_RE, Name: "job", Value: "("}}}}},
	} {
		b, err := rr.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
	}
	f.Add([]byte("\xff\x00not snappy"), false)
	f.Fuzz(func(t *testing.T, body []byte, encode bool) {
		if encode {
			body = s2.EncodeSnappy(nil, body)
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/read", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
		case http.StatusBadRequest:
			if rec.Body.Len() == 0 || strings.TrimSpace(rec.Body.String()) == "" {
				t.Fatal("400 without a reason")
			}
		default:
			t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
		}
	})
}
