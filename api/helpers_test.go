package api_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/api/apitest"
	"github.com/weftdb/weft/query"
)

// Seed data: one hour of samples every 15 s, ending at seedEnd.
var (
	seedEnd   = time.Unix(1700000000, 0)
	seedStart = seedEnd.Add(-time.Hour)
	seedStep  = 15 * time.Second
)

// newTestServer returns a ready server over a seeded Prometheus TSDB. edit,
// when not nil, adjusts the options before the server is built.
func newTestServer(tb testing.TB, edit func(*api.Options)) (*httptest.Server, *apitest.TSDB) {
	tb.Helper()
	db := newSeededDB(tb)
	opts := api.DefaultOptions()
	opts.Storage = db
	opts.Engine = query.NewEngine(query.DefaultEngineOptions())
	opts.Metadata = db
	opts.Admin = db
	opts.Cardinality = db
	opts.EnableAdmin = true
	reg := prometheus.NewRegistry()
	opts.Registerer, opts.Gatherer = reg, reg
	opts.BuildInfo = api.BuildInfo{Version: "0.1.0-test", Revision: "abc", Branch: "main", BuildUser: "test", BuildDate: "20261130"}
	opts.Flags = map[string]string{"data-dir": "/tmp/x"}
	if edit != nil {
		edit(&opts)
	}
	s, err := api.New(opts)
	if err != nil {
		tb.Fatalf("new api: %v", err)
	}
	s.SetReady(true)
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	return srv, db
}

// newSeededDB opens a Prometheus TSDB with the seed data, closed on cleanup.
func newSeededDB(tb testing.TB) *apitest.TSDB {
	tb.Helper()
	db, err := apitest.OpenTSDB()
	if err != nil {
		tb.Fatalf("open tsdb: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	seed(tb, db)
	return db
}

// seed writes a counter, a gauge, a classic histogram, a metric with
// exemplars and a metric with a UTF-8 label name.
func seed(tb testing.TB, db *apitest.TSDB) {
	tb.Helper()
	app := db.Appender(context.Background())
	add := func(ls labels.Labels, t time.Time, v float64) {
		ref, err := app.Append(0, ls, t.UnixMilli(), v)
		if err != nil {
			tb.Fatalf("append %s: %v", ls, err)
		}
		if ls.Get(labels.MetricName) == "test" {
			if _, err := app.AppendExemplar(ref, ls, exemplar.Exemplar{
				Labels: labels.FromStrings("trace_id", "abc123"), Value: v, Ts: t.UnixMilli(), HasTs: true,
			}); err != nil {
				tb.Fatalf("append exemplar: %v", err)
			}
		}
	}
	les := []string{"0.1", "0.5", "1", "+Inf"}
	i := 0
	for t := seedStart; !t.After(seedEnd); t = t.Add(seedStep) {
		f := float64(i)
		for _, inst := range []string{"a", "b"} {
			add(labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", inst, "code", "200"), t, f*3)
			add(labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", inst, "code", "500"), t, f)
		}
		add(labels.FromStrings("__name__", "gpu_temperature_celsius", "gpu", "0", "host", "n1"), t, 60+math.Sin(f/10)*5)
		for j, le := range les {
			add(labels.FromStrings("__name__", "request_duration_seconds_bucket", "job", "api", "le", le), t, f*float64(j+1))
		}
		add(labels.FromStrings("__name__", "test", "job", "probe"), t, f)
		add(labels.FromStrings("__name__", "utf8_metric", "foo.bar", "baz"), t, 1)
		i++
	}
	if err := app.Commit(); err != nil {
		tb.Fatalf("commit: %v", err)
	}
	db.SetMetadata("http_requests_total", metadata.Metadata{Type: model.MetricTypeCounter, Help: "Requests served.", Unit: ""})
	db.SetMetadata("gpu_temperature_celsius", metadata.Metadata{Type: model.MetricTypeGauge, Help: "GPU temperature.", Unit: "celsius"})
}

// apiResponse is Prometheus' response envelope as clients decode it.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Infos     []string        `json:"infos"`
}

// call makes one request; method POST sends params as a form body.
func call(tb testing.TB, srv *httptest.Server, method, path string, params url.Values) (int, []byte, http.Header) {
	tb.Helper()
	var req *http.Request
	var err error
	if method == http.MethodPost || method == http.MethodPut {
		req, err = http.NewRequest(method, srv.URL+path, strings.NewReader(params.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		u := srv.URL + path
		if len(params) > 0 {
			u += "?" + params.Encode()
		}
		req, err = http.NewRequest(method, u, nil)
	}
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, body, resp.Header
}

// decode parses a Prometheus envelope or fails the test.
func decode(tb testing.TB, body []byte) apiResponse {
	tb.Helper()
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		tb.Fatalf("decode %q: %v", body, err)
	}
	return r
}

// ts formats a time the way Grafana sends it: float seconds with
// milliseconds.
func ts(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
