package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/weftdb/weft/api"
)

type cardinalityData struct {
	HeadStats struct {
		NumSeries     uint64 `json:"numSeries"`
		NumLabelPairs int    `json:"numLabelPairs"`
	} `json:"headStats"`
	SeriesCountByMetricName      []stat `json:"seriesCountByMetricName"`
	LabelValueCountByLabelName   []stat `json:"labelValueCountByLabelName"`
	MemoryInBytesByLabelName     []stat `json:"memoryInBytesByLabelName"`
	SeriesCountByLabelValuePair  []stat `json:"seriesCountByLabelValuePair"`
	SeriesCountByFocusLabelValue []stat `json:"seriesCountByFocusLabelValue"`
	Truncated                    bool   `json:"truncated"`
}

type stat struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

func asMap(s []stat) map[string]uint64 {
	m := map[string]uint64{}
	for _, x := range s {
		m[x.Name] = x.Value
	}
	return m
}

// TestWeftCardinality drills into the seed data by selector: counts are
// exact over the selected series only, several selectors are a union
// without double counting, and the focus label lists its values.
func TestWeftCardinality(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	rng := url.Values{"start": {ts(seedStart)}, "end": {ts(seedEnd)}}
	get := func(t *testing.T, extra url.Values) (int, cardinalityData, apiResponse) {
		t.Helper()
		p := url.Values{}
		for k, v := range rng {
			p[k] = v
		}
		for k, v := range extra {
			p[k] = v
		}
		code, body, _ := call(t, srv, http.MethodGet, "/weft/api/v1/cardinality", p)
		env := decode(t, body)
		var d cardinalityData
		if env.Status == "success" {
			if err := json.Unmarshal(env.Data, &d); err != nil {
				t.Fatal(err)
			}
		}
		return code, d, env
	}

	t.Run("one selector", func(t *testing.T) {
		code, d, env := get(t, url.Values{"match[]": {`{job="api"}`}, "focusLabel": {"instance"}})
		if code != 200 {
			t.Fatalf("%d %+v", code, env)
		}
		// 4 http_requests_total + 4 request_duration_seconds_bucket series.
		if d.HeadStats.NumSeries != 8 {
			t.Fatalf("numSeries %d, want 8", d.HeadStats.NumSeries)
		}
		names := asMap(d.SeriesCountByMetricName)
		if len(names) != 2 || names["http_requests_total"] != 4 || names["request_duration_seconds_bucket"] != 4 {
			t.Errorf("by name %v", names)
		}
		pairs := asMap(d.SeriesCountByLabelValuePair)
		if pairs["job=api"] != 8 {
			t.Errorf("pairs %v", pairs)
		}
		vals := asMap(d.LabelValueCountByLabelName)
		if vals["le"] != 4 || vals["instance"] != 2 || vals["__name__"] != 2 {
			t.Errorf("values by name %v", vals)
		}
		focus := asMap(d.SeriesCountByFocusLabelValue)
		if len(focus) != 2 || focus["a"] != 2 || focus["b"] != 2 {
			t.Errorf("focus %v", focus)
		}
		// job="api" is 1+3+1+3 bytes per series, in 8 series.
		if b := asMap(d.MemoryInBytesByLabelName)["job"]; b != 8*(1+3+1+3) {
			t.Errorf("job bytes %d", b)
		}
	})
	t.Run("union without doubles", func(t *testing.T) {
		_, d, _ := get(t, url.Values{"match[]": {`{job="api"}`, `http_requests_total`, `{__name__="test"}`}})
		if d.HeadStats.NumSeries != 9 {
			t.Fatalf("numSeries %d, want 9", d.HeadStats.NumSeries)
		}
	})
	t.Run("limit", func(t *testing.T) {
		_, d, _ := get(t, url.Values{"match[]": {`{job="api"}`}, "limit": {"1"}})
		if len(d.SeriesCountByLabelValuePair) != 1 || d.SeriesCountByLabelValuePair[0].Name != "job=api" {
			t.Errorf("top pair %v", d.SeriesCountByLabelValuePair)
		}
	})
	t.Run("whole store with focus", func(t *testing.T) {
		code, d, env := get(t, url.Values{"focusLabel": {"job"}})
		if code != 200 {
			t.Fatalf("%d %+v", code, env)
		}
		focus := asMap(d.SeriesCountByFocusLabelValue)
		if focus["api"] != 8 || focus["probe"] != 1 {
			t.Errorf("focus %v", focus)
		}
	})
	for name, p := range map[string]url.Values{
		"bad selector": {"match[]": {`{job=`}},
		"bad limit":    {"match[]": {`up`}, "limit": {"0"}},
		"huge limit":   {"match[]": {`up`}, "limit": {"10001"}},
		"bad time":     {"match[]": {`up`}, "end": {"yesterday"}},
		"end first":    {"match[]": {`up`}, "start": {"200"}, "end": {"100"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, env := get(t, p)
			if code != http.StatusBadRequest || env.ErrorType != "bad_data" || env.Error == "" {
				t.Fatalf("%d %+v, want 400 bad_data with a reason", code, env)
			}
		})
	}
}

// TestUIMount: the UI handler gets "/" and unknown paths, never the routes
// weft's APIs own.
func TestUIMount(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-UI", "1")
		w.WriteHeader(http.StatusTeapot)
	})
	srv, _ := newTestServer(t, nil)
	if code, _, _ := call(t, srv, http.MethodGet, "/", nil); code != http.StatusNotFound {
		t.Fatalf("without UI, GET / = %d, want 404", code)
	}
	srv, _ = newTestServer(t, func(o *api.Options) { o.UI = ui })
	for _, p := range []string{"/", "/graph", "/assets/x.js"} {
		if code, _, h := call(t, srv, http.MethodGet, p, nil); code != http.StatusTeapot || h.Get("X-UI") != "1" {
			t.Errorf("GET %s = %d, want the UI", p, code)
		}
	}
	for _, p := range []string{"/api/v1/labels", "/-/healthy", "/metrics"} {
		if _, _, h := call(t, srv, http.MethodGet, p, nil); h.Get("X-UI") != "" {
			t.Errorf("GET %s went to the UI", p)
		}
	}
}

// TestWrongMethodBesideUI: a path only other methods serve answers 405 with
// Allow, not the UI's 404, though the UI takes every other GET.
func TestWrongMethodBesideUI(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv, _, _ := newSubstrateServer(t, func(o *api.Options) { o.UI = ui })
	for _, tc := range []struct{ path, allow string }{
		{"/loki/api/v1/push", "POST"},
		{"/api/v1/write", "POST"},
		{"/weft/api/v1/investigate", ""}, // GET is served: not the UI's either
	} {
		code, body, h := call(t, srv, http.MethodGet, tc.path, nil)
		if tc.allow == "" {
			if code == http.StatusTeapot || code == http.StatusMethodNotAllowed {
				t.Errorf("GET %s = %d, want its own handler", tc.path, code)
			}
			continue
		}
		if code != http.StatusMethodNotAllowed || !strings.Contains(h.Get("Allow"), tc.allow) {
			t.Errorf("GET %s = %d Allow %q %q, want 405 naming %s", tc.path, code, h.Get("Allow"), body, tc.allow)
		}
	}
	if _, body, _ := call(t, srv, http.MethodGet, "/loki/api/v1/push", nil); !strings.Contains(string(body), "use POST") {
		t.Errorf("the 405 does not say what to use: %q", body)
	}
	if code, _, _ := call(t, srv, http.MethodGet, "/graph", nil); code != http.StatusTeapot {
		t.Errorf("GET /graph = %d, want the UI", code)
	}
}

func TestWithRoutePrefix(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("inner " + r.URL.Path)) })
	if h, err := api.WithRoutePrefix("/", inner); err != nil || h == nil {
		t.Fatalf("prefix /: %v", err)
	}
	if _, err := api.WithRoutePrefix("weft", inner); err == nil {
		t.Fatal("prefix without / accepted")
	}
	h, err := api.WithRoutePrefix("/weft/", inner)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/weft/api/v1/query", "inner /api/v1/query", 200},
		{"/weft/", "inner /", 200},
		{"/weft", "", http.StatusFound},
		{"/", "", http.StatusFound},
		{"/api/v1/query", "", http.StatusNotFound},
		{"/weftx/", "", http.StatusNotFound},
	} {
		resp, err := noFollow.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.code)
		}
		if tc.code == 200 && string(b) != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, b, tc.want)
		}
		if tc.code == http.StatusFound && resp.Header.Get("Location") != "/weft/" {
			t.Errorf("%s: redirect to %q", tc.path, resp.Header.Get("Location"))
		}
	}
}
