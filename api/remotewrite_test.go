package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// rwFakeAppendable counts what its appenders do; optionally it blocks in
// AppenderV2 (to hold a request in flight) or fails appends or commits.
type rwFakeAppendable struct {
	// If set, the first AppenderV2 call signals entered and waits for hold.
	entered, hold chan struct{}
	calls         atomic.Int64

	appendErr, commitErr error

	mu                         sync.Mutex
	appended, commits, rollbks int
}

func (f *rwFakeAppendable) AppenderV2(context.Context) storage.AppenderV2 {
	if f.calls.Add(1) == 1 && f.entered != nil {
		f.entered <- struct{}{}
		<-f.hold
	}
	return &rwFakeAppender{f: f}
}

type rwFakeAppender struct {
	f *rwFakeAppendable
	n int
}

func (a *rwFakeAppender) Append(storage.SeriesRef, labels.Labels, int64, int64, float64, *histogram.Histogram, *histogram.FloatHistogram, storage.AOptions) (storage.SeriesRef, error) {
	if a.f.appendErr != nil {
		return 0, a.f.appendErr
	}
	a.n++
	return 1, nil
}

func (a *rwFakeAppender) AppendExemplars(ref storage.SeriesRef, _ labels.Labels, _ []exemplar.Exemplar) (storage.SeriesRef, error) {
	return ref, nil
}

func (a *rwFakeAppender) Commit() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	if a.f.commitErr != nil {
		return a.f.commitErr
	}
	a.f.commits++
	a.f.appended += a.n
	return nil
}

func (a *rwFakeAppender) Rollback() error {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.rollbks++
	return nil
}

func rwValidV1(tb testing.TB) []byte {
	tb.Helper()
	t0 := time.Now().UnixMilli()
	return rwMarshal(tb, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		rwV1Series(labels.FromStrings("__name__", "up", "job", "a"), prompb.Sample{Value: 1, Timestamp: t0}),
		rwV1Series(labels.FromStrings("__name__", "up", "job", "b"), prompb.Sample{Value: 1, Timestamp: t0}, prompb.Sample{Value: 0, Timestamp: t0 + 1}),
	}})
}

func rwValidV2(tb testing.TB) []byte {
	tb.Helper()
	t0 := time.Now().UnixMilli()
	st := writev2.NewSymbolTable()
	s := rwV2Series(&st, labels.FromStrings("__name__", "gpu_temp_celsius", "gpu", "0"), writev2.Sample{Value: 61, Timestamp: t0})
	s.Exemplars = []writev2.Exemplar{{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("trace_id", "t1"), nil), Value: 61, Timestamp: t0}}
	s.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("GPU temperature."), UnitRef: st.Symbolize("celsius")}
	h := rwV2Series(&st, labels.FromStrings("__name__", "step_seconds"))
	h.Histograms = []writev2.Histogram{writev2.FromIntHistogram(0, t0, tsdbutil.GenerateTestHistogram(1))}
	return rwMarshal(tb, &writev2.Request{Symbols: st.Symbols(), Timeseries: []writev2.TimeSeries{s, h}})
}

func TestRemoteWriteStatusCodes(t *testing.T) {
	v1, v2 := rwValidV1(t), rwValidV2(t)
	big := bytes.Repeat([]byte{0}, 2048)
	for _, tc := range []struct {
		name        string
		method      string
		contentType string
		encoding    string
		body        []byte
		chunked     bool // hide Content-Length
		code        int
		msg         string
		headers     map[string]string
	}{
		{name: "rw1", contentType: rwCTV1, encoding: "snappy", body: s2.EncodeSnappy(nil, v1), code: 204},
		{name: "rw1 explicit proto", contentType: "application/x-protobuf; proto=prometheus.WriteRequest", encoding: "snappy", body: s2.EncodeSnappy(nil, v1), code: 204},
		{name: "rw1 without content type or encoding", body: s2.EncodeSnappy(nil, v1), code: 204},
		{name: "rw2", contentType: rwCTV2, encoding: "snappy", body: s2.EncodeSnappy(nil, v2), code: 204, headers: map[string]string{
			rwSamplesWrittenHeader: "1", rwHistogramsWrittenHeader: "1", rwExemplarsWrittenHeader: "1",
		}},
		{name: "get", method: http.MethodGet, code: 405, msg: "method not allowed"},
		{name: "json", contentType: "application/json", encoding: "snappy", body: s2.EncodeSnappy(nil, v1), code: 415, msg: "unsupported content type"},
		{name: "unknown proto", contentType: "application/x-protobuf;proto=io.prometheus.write.v3.Request", body: s2.EncodeSnappy(nil, v1), code: 415, msg: "unsupported remote write message"},
		{name: "gzip", contentType: rwCTV1, encoding: "gzip", body: s2.EncodeSnappy(nil, v1), code: 415, msg: `unsupported content encoding "gzip"`},
		{name: "body over limit", contentType: rwCTV1, encoding: "snappy", body: big, code: 413, msg: "exceeds the limit of 1024 bytes"},
		{name: "chunked body over limit", contentType: rwCTV1, encoding: "snappy", body: big, chunked: true, code: 413, msg: "exceeds the limit of 1024 bytes"},
		{name: "decoded over limit", contentType: rwCTV2, encoding: "snappy", body: s2.EncodeSnappy(nil, bytes.Repeat([]byte{'a'}, 8192)), code: 413, msg: "decompressed body of 8192 bytes exceeds the limit of 4096 bytes",
			headers: map[string]string{rwSamplesWrittenHeader: "0"}},
		{name: "corrupt snappy", contentType: rwCTV1, encoding: "snappy", body: []byte{0x20, 0xff, 0xff, 0xff, 0xff, 1, 2}, code: 400, msg: "corrupt snappy body"},
		{name: "snappy length lies", contentType: rwCTV1, encoding: "snappy", body: append([]byte{0x40}, s2.EncodeSnappy(nil, v1)[1:]...), code: 400, msg: "corrupt snappy body"},
		{name: "truncated protobuf", contentType: rwCTV2, encoding: "snappy", body: s2.EncodeSnappy(nil, v2[:len(v2)-3]), code: 400, msg: "malformed remote write request",
			headers: map[string]string{rwSamplesWrittenHeader: "0", rwHistogramsWrittenHeader: "0", rwExemplarsWrittenHeader: "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &rwFakeAppendable{}
			opts := DefaultRemoteWriteOptions()
			opts.MaxBodyBytes, opts.MaxDecodedBytes = 1024, 4096
			h := NewRemoteWriteHandler(app, opts)
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // no Len(): ContentLength stays unknown
			}
			req := httptest.NewRequest(method, "/api/v1/write", body)
			if tc.chunked {
				req.ContentLength = -1
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d; body %q", rec.Code, tc.code, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), tc.msg) {
				t.Errorf("body %q does not contain %q", rec.Body.String(), tc.msg)
			}
			for k, v := range tc.headers {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tc.code == 204 {
				if app.commits != 1 {
					t.Errorf("commits %d", app.commits)
				}
			} else if app.appended != 0 {
				t.Errorf("failed request appended %d samples", app.appended)
			}
			if tc.contentType == rwCTV1 && rec.Header().Get(rwSamplesWrittenHeader) != "" {
				t.Errorf("rw1 response carries rw2 headers")
			}
		})
	}
}

func TestRemoteWriteRetryableFailures(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		appendErr, commitErr error
		rollbacks            int
	}{
		{"append fails", errors.New("wal: disk full"), nil, 1},
		{"commit fails", nil, errors.New("wal: fsync failed"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &rwFakeAppendable{appendErr: tc.appendErr, commitErr: tc.commitErr}
			h := NewRemoteWriteHandler(app, DefaultRemoteWriteOptions())
			rec := rwPost(t, h, rwCTV2, rwValidV2(t))
			if rec.Code != http.StatusInternalServerError {
				t.Fatalf("code %d, body %q", rec.Code, rec.Body.String())
			}
			if want := errors.Join(tc.appendErr, tc.commitErr).Error(); !strings.Contains(rec.Body.String(), want) {
				t.Errorf("body %q lacks cause %q", rec.Body.String(), want)
			}
			if app.rollbks != tc.rollbacks || app.commits != 0 {
				t.Errorf("rollbacks %d commits %d", app.rollbks, app.commits)
			}
			if rec.Header().Get(rwSamplesWrittenHeader) != "0" {
				t.Errorf("written header %q on 5xx, want 0", rec.Header().Get(rwSamplesWrittenHeader))
			}
		})
	}
}

func TestRemoteWriteThrottles(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(*RemoteWriteOptions)
		msg  string
	}{
		{"concurrency", func(o *RemoteWriteOptions) { o.MaxConcurrency = 1 }, "too many concurrent remote write requests"},
		{"in-flight bytes", func(o *RemoteWriteOptions) { o.MaxInFlightBytes = 64 }, "too many remote write bytes in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &rwFakeAppendable{entered: make(chan struct{}), hold: make(chan struct{})}
			opts := DefaultRemoteWriteOptions()
			opts.RetryAfter = 1500 * time.Millisecond
			tc.opts(&opts)
			h := NewRemoteWriteHandler(app, opts)
			first := make(chan *httptest.ResponseRecorder)
			go func() { first <- rwPost(t, h, rwCTV1, rwValidV1(t)) }()
			<-app.entered // the first request holds its slot and bytes
			rec := rwPost(t, h, rwCTV1, rwValidV1(t))
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "2" || !strings.Contains(rec.Body.String(), tc.msg) {
				t.Fatalf("code %d retry-after %q body %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
			}
			close(app.hold) // release the first request
			if r := <-first; r.Code != http.StatusNoContent {
				t.Fatalf("first request: %d %q", r.Code, r.Body.String())
			}
			if rec := rwPost(t, h, rwCTV1, rwValidV1(t)); rec.Code != http.StatusNoContent {
				t.Fatalf("after the overload: %d %q", rec.Code, rec.Body.String())
			}
		})
	}
}

func TestRemoteWriteMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := DefaultRemoteWriteOptions()
	opts.Registerer = reg
	h := NewRemoteWriteHandler(&rwFakeAppendable{}, opts)
	// A second handler on the same registry shares the counters.
	h2 := NewRemoteWriteHandler(&rwFakeAppendable{}, opts)
	if rec := rwPost(t, h, rwCTV2, rwValidV2(t)); rec.Code != 204 {
		t.Fatalf("code %d", rec.Code)
	}
	st := writev2.NewSymbolTable()
	bad := rwMarshal(t, &writev2.Request{Timeseries: []writev2.TimeSeries{
		rwV2Series(&st, labels.FromStrings("job", "nameless"), writev2.Sample{Value: 1, Timestamp: time.Now().UnixMilli()}),
	}, Symbols: st.Symbols()})
	if rec := rwPost(t, h2, rwCTV2, bad); rec.Code != 400 {
		t.Fatalf("code %d", rec.Code)
	}
	m := newRWMetrics(reg)
	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.samples, 1}, {m.histograms, 1}, {m.exemplars, 1},
		{m.rejected.WithLabelValues("invalid_labels"), 1},
		{m.requests.WithLabelValues("2.0", "204"), 1},
		{m.requests.WithLabelValues("2.0", "400"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%v = %v, want %v", c.c, got, c.want)
		}
	}
}

func TestRemoteWriteContentTypes(t *testing.T) {
	for ct, want := range map[string]string{
		"":                       "prometheus.WriteRequest",
		"application/x-protobuf": "prometheus.WriteRequest",
		"Application/X-Protobuf; proto=\"io.prometheus.write.v2.Request\"":   "io.prometheus.write.v2.Request",
		"application/x-protobuf;charset=utf-8;proto=prometheus.WriteRequest": "prometheus.WriteRequest",
		"application/x-protobuf;proto=bogus":                                 "error",
		"text/plain":                                                         "error",
	} {
		p, err := parseRemoteWriteContentType(ct)
		got := p.String()
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("%q: %s, want %s", ct, got, want)
		}
	}
}

func ExampleNewRemoteWriteHandler() {
	h := NewRemoteWriteHandler(&rwFakeAppendable{}, DefaultRemoteWriteOptions())
	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", strings.NewReader("not snappy"))
	req.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
	req.Header.Set("Content-Encoding", "snappy")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	// Output: 400 corrupt snappy body: s2: corrupt input
}
