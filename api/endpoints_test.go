package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/query"
)

// getData requests path and returns the success envelope's data.
func getData(t *testing.T, body []byte, code int) json.RawMessage {
	t.Helper()
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	r := decode(t, body)
	if r.Status != "success" {
		t.Fatalf("status %q: %s", r.Status, body)
	}
	return r.Data
}

func TestEndpoints(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	get := func(t *testing.T, path string, params url.Values) (json.RawMessage, []byte) {
		t.Helper()
		code, body, _ := call(t, srv, "GET", path, params)
		return getData(t, body, code), body
	}

	t.Run("label values U__ escaping", func(t *testing.T) {
		data, _ := get(t, "/api/v1/label/U__foo_2e_bar/values", nil)
		if string(data) != `["baz"]` {
			t.Errorf("values %s", data)
		}
	})
	t.Run("label values with match and limit", func(t *testing.T) {
		code, body, _ := call(t, srv, "GET", "/api/v1/label/code/values", url.Values{"match[]": {"http_requests_total"}, "limit": {"1"}})
		want := `{"status":"success","data":["200"],"warnings":["results truncated due to limit"]}`
		if code != 200 || string(body) != want {
			t.Errorf("got %d %s, want %s", code, body, want)
		}
	})
	t.Run("series limit", func(t *testing.T) {
		data, body := get(t, "/api/v1/series", url.Values{"match[]": {"http_requests_total"}, "limit": {"2"}})
		var s []map[string]string
		if err := json.Unmarshal(data, &s); err != nil || len(s) != 2 {
			t.Errorf("series %s (%v)", data, err)
		}
		if !strings.Contains(string(body), `"warnings":["results truncated due to limit"]`) {
			t.Errorf("no truncation warning: %s", body)
		}
	})
	t.Run("format_query", func(t *testing.T) {
		data, _ := get(t, "/api/v1/format_query", url.Values{"query": {"sum by(job)(rate(x[5m]))"}})
		if string(data) != `"sum by (job) (rate(x[5m]))"` {
			t.Errorf("formatted %s", data)
		}
	})
	t.Run("parse_query", func(t *testing.T) {
		data, _ := get(t, "/api/v1/parse_query", url.Values{"query": {"up"}})
		var ast map[string]any
		if err := json.Unmarshal(data, &ast); err != nil || ast["type"] != "vectorSelector" || ast["name"] != "up" {
			t.Errorf("ast %s (%v)", data, err)
		}
	})
	t.Run("alerts", func(t *testing.T) {
		_, body := get(t, "/api/v1/alerts", nil)
		if string(body) != `{"status":"success","data":{"alerts":[]}}` {
			t.Errorf("alerts %s", body)
		}
	})
	t.Run("targets", func(t *testing.T) {
		_, body := get(t, "/api/v1/targets", nil)
		if string(body) != `{"status":"success","data":{"activeTargets":[],"droppedTargets":[],"droppedTargetCounts":{}}}` {
			t.Errorf("targets %s", body)
		}
	})
	t.Run("flags", func(t *testing.T) {
		data, _ := get(t, "/api/v1/status/flags", nil)
		if string(data) != `{"data-dir":"/tmp/x"}` {
			t.Errorf("flags %s", data)
		}
	})
	t.Run("runtimeinfo", func(t *testing.T) {
		data, _ := get(t, "/api/v1/status/runtimeinfo", nil)
		var ri map[string]any
		if err := json.Unmarshal(data, &ri); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"startTime", "CWD", "hostname", "serverTime", "reloadConfigSuccess", "lastConfigTime", "corruptionCount", "goroutineCount", "GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "storageRetention"} {
			if _, ok := ri[k]; !ok {
				t.Errorf("runtimeinfo lacks %q: %s", k, data)
			}
		}
		if ri["storageRetention"] != "unlimited" {
			t.Errorf("retention %v", ri["storageRetention"])
		}
	})
	t.Run("status tsdb", func(t *testing.T) {
		data, _ := get(t, "/api/v1/status/tsdb", url.Values{"limit": {"2"}})
		var st struct {
			HeadStats struct {
				NumSeries     uint64 `json:"numSeries"`
				NumLabelPairs int    `json:"numLabelPairs"`
				MinTime       int64  `json:"minTime"`
				MaxTime       int64  `json:"maxTime"`
			} `json:"headStats"`
			SeriesCountByMetricName []struct {
				Name  string
				Value uint64
			} `json:"seriesCountByMetricName"`
			LabelValueCountByLabelName []struct {
				Name  string
				Value uint64
			} `json:"labelValueCountByLabelName"`
			SeriesCountByLabelValuePair []struct {
				Name  string
				Value uint64
			} `json:"seriesCountByLabelValuePair"`
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		if st.HeadStats.NumSeries != 11 || st.HeadStats.MinTime != seedStart.UnixMilli() || st.HeadStats.MaxTime != seedEnd.UnixMilli() {
			t.Errorf("head stats %+v", st.HeadStats)
		}
		// http_requests_total and request_duration_seconds_bucket tie at 4.
		top := map[string]uint64{}
		for _, s := range st.SeriesCountByMetricName {
			top[s.Name] = s.Value
		}
		if len(top) != 2 || top["http_requests_total"] != 4 || top["request_duration_seconds_bucket"] != 4 {
			t.Errorf("by metric name %+v", st.SeriesCountByMetricName)
		}
		if len(st.SeriesCountByLabelValuePair) != 2 || len(st.LabelValueCountByLabelName) != 2 {
			t.Errorf("limit not applied: %s", data)
		}
	})
	t.Run("metadata limits", func(t *testing.T) {
		data, _ := get(t, "/api/v1/metadata", url.Values{"limit": {"1"}})
		var md map[string]json.RawMessage
		if err := json.Unmarshal(data, &md); err != nil || len(md) != 1 {
			t.Errorf("limit 1: %s", data)
		}
		data, _ = get(t, "/api/v1/metadata", url.Values{"metric": {"gpu_temperature_celsius"}})
		if string(data) != `{"gpu_temperature_celsius":[{"type":"gauge","unit":"celsius","help":"GPU temperature."}]}` {
			t.Errorf("metric filter: %s", data)
		}
		data, _ = get(t, "/api/v1/metadata", url.Values{"limit": {"0"}})
		if string(data) != `{}` {
			t.Errorf("limit 0: %s", data)
		}
	})
	t.Run("config", func(t *testing.T) {
		data, _ := get(t, "/api/v1/status/config", nil)
		var c struct{ YAML string }
		if err := json.Unmarshal(data, &c); err != nil || !strings.Contains(c.YAML, "scrape_interval") {
			t.Errorf("config %s (%v)", data, err)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		// Runs after the subtests above, which made these requests.
		code, body, _ := call(t, srv, "GET", "/metrics", nil)
		if code != 200 {
			t.Fatalf("metrics: %d", code)
		}
		for _, want := range []string{
			`weft_http_requests_total{code="200",handler="/api/v1/label/:name/values"} 2`,
			`weft_http_requests_total{code="200",handler="/api/v1/metadata"} 3`,
			`weft_http_request_duration_seconds_count{handler="/api/v1/series"} 1`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})
}

func TestDeleteSeries(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	code, body, _ := call(t, srv, "POST", "/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {`http_requests_total{code="500"}`}})
	if code != 204 || len(body) != 0 {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, body, _ := call(t, srv, "POST", "/api/v1/admin/tsdb/clean_tombstones", nil); code != 204 {
		t.Fatalf("clean tombstones: %d %s", code, body)
	}
	// The deleted samples are gone; (Prometheus' head keeps the series in
	// its postings until the next head compaction, so label APIs may still
	// list them.)
	code, body, _ = call(t, srv, "GET", "/api/v1/query", url.Values{"query": {"count by (code) (http_requests_total)"}, "time": {ts(seedEnd)}})
	data := getData(t, body, code)
	if want := `{"resultType":"vector","result":[{"metric":{"code":"200"},"value":[1700000000,"2"]}]}`; string(data) != want {
		t.Errorf("after delete: %s, want %s", data, want)
	}
}

func TestExtraHandlers(t *testing.T) {
	srv, _ := newTestServer(t, func(o *api.Options) {
		o.Handlers = map[string]http.Handler{
			"/loki/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "loki "+r.URL.Path) }),
		}
	})
	if code, body, _ := call(t, srv, "GET", "/loki/api/v1/labels", nil); code != 200 || string(body) != "loki /loki/api/v1/labels" {
		t.Errorf("mounted handler: %d %q", code, body)
	}
	db := newSeededDB(t)
	opts := api.DefaultOptions()
	opts.Storage = db
	opts.Engine = query.NewEngine(query.DefaultEngineOptions())
	opts.Handlers = map[string]http.Handler{"GET /-/ready": http.NotFoundHandler()}
	if _, err := api.New(opts); err == nil || !strings.Contains(err.Error(), `mount "GET /-/ready"`) {
		t.Errorf("conflicting pattern: %v", err)
	}
}

// The Go runtime profiles are served where Prometheus serves them.
func TestPprof(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	code, body, _ := call(t, srv, "GET", "/debug/pprof/heap?debug=1", nil)
	if code != 200 || !strings.Contains(string(body), "heap profile:") {
		t.Errorf("heap profile: %d %.80q", code, body)
	}
	if code, body, _ := call(t, srv, "GET", "/debug/pprof/", nil); code != 200 || !strings.Contains(string(body), "goroutine") {
		t.Errorf("index: %d %.80q", code, body)
	}
}
