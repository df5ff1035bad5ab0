package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The requests below are the ones Grafana's Prometheus datasource sends
// (health check, metadata for the query editor, exemplars probe, rules,
// queries), with Grafana's default HTTP method POST and its fallback to GET
// when an endpoint answers 400 or 405. Each answer is decoded the way Grafana
// decodes it.

// sample is a [float-seconds, "value"] pair as Grafana reads it.
func parseSample(tb testing.TB, raw json.RawMessage) (float64, float64) {
	tb.Helper()
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		tb.Fatalf("sample %s is not a [time, value] pair: %v", raw, err)
	}
	var t float64
	if err := json.Unmarshal(pair[0], &t); err != nil {
		tb.Fatalf("sample time %s is not a number: %v", pair[0], err)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		tb.Fatalf("sample value %s is not a string: %v", pair[1], err)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		tb.Fatalf("sample value %q does not parse: %v", s, err)
	}
	return t, v
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type vectorSample struct {
	Metric map[string]string `json:"metric"`
	Value  json.RawMessage   `json:"value"`
}

type matrixSeries struct {
	Metric map[string]string `json:"metric"`
	Values []json.RawMessage `json:"values"`
}

func TestGrafanaDatasource(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	start, end := seedStart.Add(123*time.Millisecond), seedEnd.Add(123*time.Millisecond)
	rangeParams := url.Values{"start": {ts(start)}, "end": {ts(end)}}

	// do sends POST, falling back to GET on 400/405 as Grafana does, and
	// returns the decoded success envelope.
	do := func(t *testing.T, path string, params url.Values, wantFallback bool) apiResponse {
		t.Helper()
		code, body, hdr := call(t, srv, http.MethodPost, path, params)
		fellBack := false
		if code == http.StatusBadRequest || code == http.StatusMethodNotAllowed {
			fellBack = true
			code, body, hdr = call(t, srv, http.MethodGet, path, params)
		}
		if fellBack != wantFallback {
			t.Errorf("POST %s: fallback to GET = %v, want %v", path, fellBack, wantFallback)
		}
		if code != http.StatusOK {
			t.Fatalf("%s: status %d, body %s", path, code, body)
		}
		if ct := hdr.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", path, ct)
		}
		r := decode(t, body)
		if r.Status != "success" {
			t.Fatalf("%s: status %q, body %s", path, r.Status, body)
		}
		return r
	}

	t.Run("health check 1+1", func(t *testing.T) {
		params := url.Values{"query": {"1+1"}, "time": {"1700000000.123"}}
		code, body, _ := call(t, srv, http.MethodPost, "/api/v1/query", params)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		// Byte-exact: this is what Prometheus answers.
		want := `{"status":"success","data":{"resultType":"scalar","result":[1700000000.123,"2"]}}`
		if string(body) != want {
			t.Errorf("body\n got %s\nwant %s", body, want)
		}
	})

	t.Run("buildinfo", func(t *testing.T) {
		code, body, _ := call(t, srv, http.MethodGet, "/api/v1/status/buildinfo", nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var bi struct {
			Version, Revision, Branch, BuildUser, BuildDate, GoVersion string
		}
		if err := json.Unmarshal(decode(t, body).Data, &bi); err != nil {
			t.Fatal(err)
		}
		if bi.Version != "0.1.0-test" || bi.Revision != "abc" || bi.GoVersion == "" {
			t.Errorf("buildinfo %+v", bi)
		}
	})

	t.Run("metric names", func(t *testing.T) {
		// Prometheus only serves label values over GET: Grafana's POST gets
		// 405 and falls back.
		r := do(t, "/api/v1/label/__name__/values", rangeParams, true)
		var names []string
		if err := json.Unmarshal(r.Data, &names); err != nil {
			t.Fatal(err)
		}
		want := []string{"gpu_temperature_celsius", "http_requests_total", "request_duration_seconds_bucket", "test", "utf8_metric"}
		if !slices.Equal(names, want) {
			t.Errorf("names %v, want %v", names, want)
		}
	})

	t.Run("label names", func(t *testing.T) {
		r := do(t, "/api/v1/labels", rangeParams, false)
		var names []string
		if err := json.Unmarshal(r.Data, &names); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"__name__", "code", "foo.bar", "instance", "job", "le"} {
			if !slices.Contains(names, n) {
				t.Errorf("label %q missing from %v", n, names)
			}
		}
	})

	t.Run("series", func(t *testing.T) {
		p := url.Values{"match[]": {`{__name__!=""}`}, "limit": {"40000"}, "start": rangeParams["start"], "end": rangeParams["end"]}
		r := do(t, "/api/v1/series", p, false)
		var series []map[string]string
		if err := json.Unmarshal(r.Data, &series); err != nil {
			t.Fatal(err)
		}
		// 4 http_requests_total + 1 gpu + 4 buckets + test + utf8_metric.
		if len(series) != 11 {
			t.Errorf("got %d series, want 11: %v", len(series), series)
		}
		for _, s := range series {
			if s["__name__"] == "" {
				t.Errorf("series without a name: %v", s)
			}
		}
	})

	t.Run("metadata", func(t *testing.T) {
		code, body, _ := call(t, srv, http.MethodGet, "/api/v1/metadata", nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var md map[string][]struct{ Type, Help, Unit string }
		if err := json.Unmarshal(decode(t, body).Data, &md); err != nil {
			t.Fatal(err)
		}
		if got := md["gpu_temperature_celsius"]; len(got) != 1 || got[0].Type != "gauge" || got[0].Unit != "celsius" {
			t.Errorf("gpu metadata %+v", got)
		}
		if got := md["http_requests_total"]; len(got) != 1 || got[0].Type != "counter" {
			t.Errorf("counter metadata %+v", got)
		}
	})

	t.Run("exemplars probe", func(t *testing.T) {
		p := url.Values{"query": {"test"}, "start": rangeParams["start"], "end": rangeParams["end"]}
		r := do(t, "/api/v1/query_exemplars", p, false)
		var res []struct {
			SeriesLabels map[string]string `json:"seriesLabels"`
			Exemplars    []struct {
				Labels    map[string]string `json:"labels"`
				Value     string            `json:"value"`
				Timestamp float64           `json:"timestamp"`
			} `json:"exemplars"`
		}
		if err := json.Unmarshal(r.Data, &res); err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].SeriesLabels["job"] != "probe" || len(res[0].Exemplars) == 0 {
			t.Fatalf("exemplars %+v", res)
		}
		ex := res[0].Exemplars[0]
		if ex.Labels["trace_id"] != "abc123" || ex.Timestamp < float64(seedStart.Unix()) {
			t.Errorf("exemplar %+v", ex)
		}
		if _, err := strconv.ParseFloat(ex.Value, 64); err != nil {
			t.Errorf("exemplar value %q: %v", ex.Value, err)
		}
	})

	t.Run("rules", func(t *testing.T) {
		code, body, _ := call(t, srv, http.MethodGet, "/api/v1/rules", nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		if want := `{"status":"success","data":{"groups":[]}}`; string(body) != want {
			t.Errorf("rules %s, want %s", body, want)
		}
	})

	t.Run("query_range float seconds", func(t *testing.T) {
		p := url.Values{
			"query": {`sum by (code) (rate(http_requests_total[5m]))`},
			"start": {ts(end.Add(-10 * time.Minute))}, "end": {ts(end)}, "step": {"15"},
		}
		r := do(t, "/api/v1/query_range", p, false)
		var qd queryData
		if err := json.Unmarshal(r.Data, &qd); err != nil {
			t.Fatal(err)
		}
		if qd.ResultType != "matrix" {
			t.Fatalf("resultType %q", qd.ResultType)
		}
		var m []matrixSeries
		if err := json.Unmarshal(qd.Result, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) != 2 {
			t.Fatalf("got %d series, want 2", len(m))
		}
		for _, s := range m {
			// Two instances, each increasing by 3 (code 200) or 1 (code
			// 500) per 15 s.
			want := 2 * 3.0 / 15
			if s.Metric["code"] == "500" {
				want = 2 * 1.0 / 15
			}
			if len(s.Values) != 41 {
				t.Errorf("code %s: %d points, want 41", s.Metric["code"], len(s.Values))
			}
			prev := 0.0
			for i, raw := range s.Values {
				tt, v := parseSample(t, raw)
				if i > 0 && tt-prev != 15 {
					t.Errorf("step %v between points", tt-prev)
				}
				prev = tt
				if d := v - want; d > 1e-9 || d < -1e-9 {
					t.Errorf("code %s at %v: %v, want %v", s.Metric["code"], tt, v, want)
				}
			}
			if first, _ := parseSample(t, s.Values[0]); first != float64(end.Add(-10*time.Minute).UnixMilli())/1000 {
				t.Errorf("first timestamp %v, want %v", first, ts(end.Add(-10*time.Minute)))
			}
		}
	})

	t.Run("instant vector", func(t *testing.T) {
		p := url.Values{"query": {`gpu_temperature_celsius`}, "time": {ts(end)}}
		r := do(t, "/api/v1/query", p, false)
		var qd queryData
		if err := json.Unmarshal(r.Data, &qd); err != nil {
			t.Fatal(err)
		}
		var v []vectorSample
		if qd.ResultType != "vector" || json.Unmarshal(qd.Result, &v) != nil || len(v) != 1 {
			t.Fatalf("result %s %s", qd.ResultType, qd.Result)
		}
		tt, val := parseSample(t, v[0].Value)
		if tt != float64(end.UnixMilli())/1000 || val < 55 || val > 65 {
			t.Errorf("sample %v %v", tt, val)
		}
		if v[0].Metric["gpu"] != "0" || v[0].Metric["__name__"] != "gpu_temperature_celsius" {
			t.Errorf("metric %v", v[0].Metric)
		}
	})
}
