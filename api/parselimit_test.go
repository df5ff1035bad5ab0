package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The parser limits of issue 14 (item 7) through the Prometheus API: a
// query nested 100,000 levels deep is refused as bad_data before
// Prometheus' parser runs, and a 12 MB form names its limit.
func TestPrometheusParserLimits(t *testing.T) {
	h := newFuzzHandler(t)
	deep := strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000)
	for _, c := range []struct {
		name, method, path string
		params             url.Values
		code               int
		want               string
	}{
		{"deep instant", http.MethodGet, "/api/v1/query", url.Values{"query": {deep}}, http.StatusBadRequest, "query is nested too deeply"},
		{"deep range", http.MethodPost, "/api/v1/query_range", url.Values{"query": {"x" + strings.Repeat(" + x", 100_000)}, "start": {"0"}, "end": {"60"}, "step": {"15"}}, http.StatusBadRequest, "query is nested too deeply"},
		{"deep format_query", http.MethodPost, "/api/v1/format_query", url.Values{"query": {deep}}, http.StatusBadRequest, "query is nested too deeply"},
		{"deep series", http.MethodPost, "/api/v1/series", url.Values{"match[]": {"{" + strings.Repeat("(", 100_000)}}, http.StatusBadRequest, "query is nested too deeply"},
		{"12 MB form", http.MethodPost, "/api/v1/query", url.Values{"query": {`up{job="` + strings.Repeat("x", 12<<20) + `"}`}}, http.StatusRequestEntityTooLarge, "request body too large: a query's form may be at most 10485760 bytes"},
		{"small form", http.MethodPost, "/api/v1/query", url.Values{"query": {"1 + 1"}, "time": {"1700000000"}}, http.StatusOK, `"result":[1700000000,"2"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := serve(h, c.method, c.path, c.params)
			var r apiResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatalf("%d %.200s: not JSON", rec.Code, rec.Body)
			}
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
				t.Fatalf("%d %.300s, want %d with %q", rec.Code, rec.Body, c.code, c.want)
			}
			if rec.Code != http.StatusOK && r.ErrorType != "bad_data" {
				t.Fatalf("error type %q", r.ErrorType)
			}
		})
	}
}
