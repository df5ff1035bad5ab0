package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/query"
)

// Prometheus' status code for each error type.
var codeForErrorType = map[string]int{
	"bad_data":  http.StatusBadRequest,
	"execution": http.StatusUnprocessableEntity,
	"timeout":   http.StatusServiceUnavailable,
	"canceled":  499,
	"internal":  http.StatusInternalServerError,
}

// newFuzzHandler is a ready server over the seed data whose engine is bounded
// so that no fuzzed input runs long.
func newFuzzHandler(tb testing.TB) http.Handler {
	db := newSeededDB(tb)
	opts := api.DefaultOptions()
	opts.Storage = db
	opts.Metadata = db
	eo := query.DefaultEngineOptions()
	eo.MaxSamples = 100_000
	eo.Timeout = 5 * time.Second
	opts.Engine = query.NewEngine(eo)
	s, err := api.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.SetReady(true)
	return s
}

// checkAnswer asserts the answer is Prometheus' envelope with a status code
// that matches its error type, and that bad input never caused a 5xx.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	var r apiResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.Bytes())
	}
	switch {
	case rec.Code == http.StatusOK:
		if r.Status != "success" {
			t.Fatalf("200 with status %q", r.Status)
		}
	case r.Status != "error" || codeForErrorType[r.ErrorType] != rec.Code || r.Error == "":
		t.Fatalf("code %d with envelope %s", rec.Code, rec.Body.Bytes())
	case rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable:
		t.Fatalf("input caused a server error: %s", rec.Body.Bytes())
	}
}

func serve(h http.Handler, method, path string, params url.Values) *httptest.ResponseRecorder {
	var req *http.Request
	if method == http.MethodPost {
		req = httptest.NewRequest(method, path, strings.NewReader(params.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path+"?"+params.Encode(), nil)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzQueryRangeParams fuzzes the time and duration parameters of a range
// query (float seconds, RFC 3339, Prometheus durations).
func FuzzQueryRangeParams(f *testing.F) {
	h := newFuzzHandler(f)
	for _, s := range [][3]string{
		{"1699996400.123", "1700000000.123", "15"},
		{"2023-11-14T21:00:00Z", "2023-11-14T22:13:20.5Z", "1m"},
		{"0", "11001", "1"},
		{"1700000000", "1600000000", "15"},
		{"NaN", "Inf", "-1"},
		{"1e300", "-1e300", "1e-300"},
		{"", "", ""},
		{"1700000000", "1700000000", "9223372036.854775807"},
		{"0x10", "1_000", "1h30m"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, start, end, step string) {
		p := url.Values{"query": {"sum(rate(http_requests_total[5m]))"}, "start": {start}, "end": {end}, "step": {step}}
		checkAnswer(t, serve(h, http.MethodPost, "/api/v1/query_range", p))
		q := url.Values{"query": {"gpu_temperature_celsius"}, "time": {start}, "timeout": {step}}
		checkAnswer(t, serve(h, http.MethodGet, "/api/v1/query", q))
	})
}

// FuzzMatchers fuzzes series selectors in match[] and label names in the
// label values path.
func FuzzMatchers(f *testing.F) {
	h := newFuzzHandler(f)
	for _, s := range []string{
		`{__name__!=""}`, `http_requests_total{code=~"5.."}`, `{"foo.bar"="baz"}`, `{job=~"("}`,
		`{job=""}`, `up{`, `{__name__=~".*"}`, "\xff", `{a="\u00e9"}`, `{"a b"!~"x|y"}`,
	} {
		f.Add(s, "job")
	}
	f.Add("", "U__foo_2e_bar")
	f.Add("", "U__%ff")
	f.Fuzz(func(t *testing.T, match, name string) {
		p := url.Values{"match[]": {match}, "start": {"1699996400"}, "end": {"1700000000"}}
		checkAnswer(t, serve(h, http.MethodGet, "/api/v1/series", p))
		checkAnswer(t, serve(h, http.MethodPost, "/api/v1/labels", p))
		path := "/api/v1/label/" + url.PathEscape(name) + "/values"
		if name == "" || name == "." || name == ".." {
			return // not a label values route
		}
		checkAnswer(t, serve(h, http.MethodGet, path, p))
	})
}
