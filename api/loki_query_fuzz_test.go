package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/query/logql"
)

// lokiQueryPaths are the Loki query endpoints FuzzLokiQueryParams sends
// every input to; {name} is the fuzzed label name.
var lokiQueryPaths = []string{
	"query", "query_range", "labels", "label/{name}/values", "series",
	"index/stats", "index/volume", "index/volume_range", "patterns",
	"detected_fields", "detected_field/{name}/values", "detected_labels",
	"format_query",
}

// newLokiFuzzEnv is a Loki API over the sample data whose engine is
// bounded so that no fuzzed input runs long or holds much memory.
func newLokiFuzzEnv(tb testing.TB) http.Handler {
	eo := logql.DefaultEngineOptions()
	eo.Timeout = 5 * time.Second
	eo.MaxQueryMemory = 64 << 20
	eo.MaxTemplateBytes = 1 << 20
	e := newLokiEnvEngine(tb, eo, func(o *LokiOptions) { o.PatternMaxLines = 1000 })
	pushSample(tb, e)
	return e.srv.Config.Handler
}

// FuzzLokiQueryParams: whatever the parameters, every Loki query endpoint
// answers 200 with valid JSON or a 4xx with a reason, never 5xx, and never
// panics. Times and durations take every form Loki parses (ns, s, floats,
// RFC 3339, Prometheus durations).
func FuzzLokiQueryParams(f *testing.F) {
	h := newLokiFuzzEnv(f)
	for _, s := range [][8]string{
		{`{app="api"}`, "1796038800", "1796040000", "15", "100", "backward", "app", "GET"},
		{`sum by (level) (count_over_time({app=~".+"} | logfmt [1m]))`, "1796038800000000000", "1796040000000000000", "1m", "10", "forward", "level", "POST"},
		{`{app="api"} | json | line_format "{{.msg}}" | label_format x="{{ upper .level }}"`, "2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z", "0.5", "5000", "", "x", "GET"},
		{`rate({app="db"} |= "checkpoint" [5m]) > 0`, "", "", "", "", "", "", "POST"},
		{`{app="api"} | pattern "<_> msg=<m> <_>" | m != ""`, "-1", "1e300", "NaN", "-5", "sideways", "__name__", "GET"},
		{`{app=~"` + strings.Repeat("(", 50) + `"}`, "1796039400.123", "1796039400.124", "1h30m", "0", "BACKWARD", "", "GET"},
		{`vector(1)+vector(1)`, "0x10", "1_000", "1e-300", "99999999999999999999", "forward", "service_name", "POST"},
		{``, "1796040000", "1796038800", "-1s", "abc", "", "..", "GET"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7] == "POST")
	}
	f.Fuzz(func(t *testing.T, query, start, end, step, limit, direction, name string, post bool) {
		if len(query) > 4096 {
			return
		}
		p := url.Values{
			"query": {query}, "start": {start}, "end": {end}, "step": {step}, "since": {step},
			"interval": {step}, "limit": {limit}, "line_limit": {limit}, "direction": {direction},
			"time": {end}, "match[]": {query}, "targetLabels": {name}, "aggregateBy": {direction},
		}
		for _, path := range lokiQueryPaths {
			if strings.Contains(path, "{name}") {
				if name == "" || strings.ContainsAny(name, "/?#%") || name == "." || name == ".." {
					continue // not this route
				}
				path = strings.ReplaceAll(path, "{name}", url.PathEscape(name))
			}
			rec := lokiServe(h, post, "/loki/api/v1/"+path, p)
			checkLokiAnswer(t, path, rec)
		}
	})
}

func lokiServe(h http.Handler, post bool, path string, p url.Values) *httptest.ResponseRecorder {
	var req *http.Request
	if post {
		req = httptest.NewRequest(http.MethodPost, path, strings.NewReader(p.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(http.MethodGet, path+"?"+p.Encode(), nil)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkLokiAnswer: 200 with a JSON body, or a client error with a reason.
func checkLokiAnswer(t *testing.T, path string, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch {
	case rec.Code == http.StatusOK:
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: 200 with invalid JSON: %.300s", path, rec.Body)
		}
	case rec.Code == http.StatusBadRequest || rec.Code == http.StatusRequestEntityTooLarge:
		if rec.Body.Len() == 0 {
			t.Fatalf("%s: %d without a reason", path, rec.Code)
		}
	default:
		t.Fatalf("%s: status %d: %.300s", path, rec.Code, rec.Body)
	}
}
