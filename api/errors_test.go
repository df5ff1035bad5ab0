package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/query"
)

// Bad requests answer with Prometheus' error envelope, error type and status
// code (web/api/v1 getDefaultErrorCode): bad_data 400, execution 422,
// timeout 503, canceled 499, internal 500.
func TestBadRequests(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	end := ts(seedEnd)
	cases := []struct {
		name     string
		method   string
		path     string
		params   url.Values
		code     int
		errType  string
		errMatch string
	}{
		{"unparsable query", "GET", "/api/v1/query", url.Values{"query": {"sum(("}}, 400, "bad_data", `invalid parameter "query"`},
		{"unknown function", "POST", "/api/v1/query", url.Values{"query": {"nope(up)"}}, 400, "bad_data", `unknown function with name "nope"`},
		{"bad time", "GET", "/api/v1/query", url.Values{"query": {"1"}, "time": {"yesterday"}}, 400, "bad_data", `invalid parameter "time": invalid time value for 'time': cannot parse "yesterday" to a valid timestamp`},
		{"bad start", "GET", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"x"}, "end": {end}, "step": {"15"}}, 400, "bad_data", `invalid parameter "start": cannot parse "x" to a valid timestamp`},
		{"end before start", "POST", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {end}, "end": {"1600000000"}, "step": {"15"}}, 400, "bad_data", `invalid parameter "end": end timestamp must not be before start time`},
		{"bad step", "GET", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"0"}, "end": {end}, "step": {"fast"}}, 400, "bad_data", `invalid parameter "step": cannot parse "fast" to a valid duration`},
		{"zero step", "GET", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"0"}, "end": {end}, "step": {"0"}}, 400, "bad_data", "zero or negative query resolution step widths are not accepted"},
		{"too many points", "GET", "/api/v1/query_range", url.Values{"query": {"1"}, "start": {"0"}, "end": {"11001"}, "step": {"1"}}, 400, "bad_data", "exceeded maximum resolution of 11,000 points per timeseries"},
		{"negative limit", "GET", "/api/v1/labels", url.Values{"limit": {"-1"}}, 400, "bad_data", `invalid parameter "limit": limit must be non-negative`},
		{"bad matcher", "GET", "/api/v1/series", url.Values{"match[]": {`{job=~"("}`}}, 400, "bad_data", `invalid parameter "match[]"`},
		{"empty matcher", "GET", "/api/v1/series", url.Values{"match[]": {`{job=""}`}}, 400, "bad_data", "match[] must contain at least one non-empty matcher"},
		{"no match", "GET", "/api/v1/series", nil, 400, "bad_data", "no match[] parameter provided"},
		{"bad label name", "GET", "/api/v1/label/U__%ff/values", nil, 400, "bad_data", "invalid label name"},
		{"bad timeout", "GET", "/api/v1/query", url.Values{"query": {"1"}, "timeout": {"soon"}}, 400, "bad_data", `invalid parameter "timeout"`},
		{"metadata limit", "GET", "/api/v1/metadata", url.Values{"limit": {"ten"}}, 400, "bad_data", "limit must be a number"},
		{"tsdb limit", "GET", "/api/v1/status/tsdb", url.Values{"limit": {"0"}}, 400, "bad_data", "limit must be a positive number"},
		{"many-to-many", "GET", "/api/v1/query", url.Values{"query": {`http_requests_total + on(job) http_requests_total`}, "time": {end}}, 422, "execution", "many-to-many matching not allowed"},
		{"timeout", "GET", "/api/v1/query", url.Values{"query": {"sum(rate(http_requests_total[1h]))"}, "time": {end}, "timeout": {"0.000000001"}}, 503, "timeout", "query timed out"},
		{"snapshot", "POST", "/api/v1/admin/tsdb/snapshot", nil, 500, "internal", "create snapshot: snapshots are not supported by weft"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, hdr := call(t, srv, c.method, c.path, c.params)
			if code != c.code {
				t.Errorf("status %d, want %d (body %s)", code, c.code, body)
			}
			if ct := hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			r := decode(t, body)
			if r.Status != "error" || r.ErrorType != c.errType || !strings.Contains(r.Error, c.errMatch) {
				t.Errorf("got status=%q errorType=%q error=%q, want %q containing %q", r.Status, r.ErrorType, r.Error, c.errType, c.errMatch)
			}
			if !strings.HasPrefix(string(body), `{"status":"error","errorType":"`) {
				t.Errorf("field order: %s", body)
			}
		})
	}
}

func TestMaxSamples(t *testing.T) {
	srv, _ := newTestServer(t, func(o *api.Options) {
		eo := query.DefaultEngineOptions()
		eo.MaxSamples = 100
		o.Engine = query.NewEngine(eo)
	})
	code, body, _ := call(t, srv, "GET", "/api/v1/query", url.Values{"query": {"http_requests_total[1h]"}, "time": {ts(seedEnd)}})
	r := decode(t, body)
	if code != 422 || r.ErrorType != "execution" || !strings.Contains(r.Error, "query processing would load too many samples into memory") {
		t.Errorf("got %d %s", code, body)
	}
}

// A request whose client went away answers 499 with errorType canceled.
func TestCanceledQuery(t *testing.T) {
	db := newSeededDB(t)
	opts := api.DefaultOptions()
	opts.Storage = db
	opts.Engine = query.NewEngine(query.DefaultEngineOptions())
	s, err := api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.SetReady(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/query?query=sum(http_requests_total)&time="+ts(seedEnd), nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	r := decode(t, rec.Body.Bytes())
	if rec.Code != 499 || r.ErrorType != "canceled" {
		t.Errorf("got %d %s", rec.Code, rec.Body.Bytes())
	}
}

func TestAdminDisabled(t *testing.T) {
	srv, _ := newTestServer(t, func(o *api.Options) { o.EnableAdmin = false })
	for _, p := range []string{"/api/v1/admin/tsdb/delete_series", "/api/v1/admin/tsdb/clean_tombstones", "/api/v1/admin/tsdb/snapshot"} {
		code, body, _ := call(t, srv, "POST", p, url.Values{"match[]": {"up"}})
		r := decode(t, body)
		// Prometheus answers errorType "unavailable" with status 500.
		if code != http.StatusInternalServerError || r.ErrorType != "unavailable" || r.Error != "admin APIs disabled" {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

func TestNotReady(t *testing.T) {
	db := newSeededDB(t)
	opts := api.DefaultOptions()
	opts.Storage = db
	opts.Engine = query.NewEngine(query.DefaultEngineOptions())
	s, err := api.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, p := range []string{"/-/ready", "/api/v1/query?query=1", "/api/v1/metadata"} {
		code, body, _ := call(t, srv, "GET", p, nil)
		if code != http.StatusServiceUnavailable || string(body) != "Service Unavailable" {
			t.Errorf("%s before ready: %d %q", p, code, body)
		}
	}
	if code, body, _ := call(t, srv, "GET", "/-/healthy", nil); code != 200 || string(body) != "weft is Healthy.\n" {
		t.Errorf("healthy: %d %q", code, body)
	}
	s.SetReady(true)
	if code, body, _ := call(t, srv, "GET", "/-/ready", nil); code != 200 || string(body) != "weft is Ready.\n" {
		t.Errorf("ready: %d %q", code, body)
	}
}
