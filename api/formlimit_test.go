package api

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A query form over the limit answers 413 naming it, instead of the
// handler seeing an empty form ("query must not be empty").
func TestLokiFormLimit(t *testing.T) {
	e := newLokiEnv(t)
	h := e.srv.Config.Handler
	big := url.Values{"query": {`{app="api"} |= "` + strings.Repeat("x", 12<<20) + `"`}}.Encode()
	for _, c := range []struct {
		name, ct, body string
		code           int
		want           string
	}{
		{"12 MB urlencoded", "application/x-www-form-urlencoded", big, http.StatusRequestEntityTooLarge, "request body too large: a query's form may be at most 10485760 bytes"},
		{"bad urlencoded", "application/x-www-form-urlencoded", "query=%zz", http.StatusBadRequest, "parse form"},
		{"small urlencoded", "application/x-www-form-urlencoded; charset=utf-8", url.Values{"query": {`{app="api"}`}}.Encode(), http.StatusOK, `"status":"success"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/loki/api/v1/query_range", strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
				t.Fatalf("%d %.200s, want %d with %q", rec.Code, rec.Body, c.code, c.want)
			}
		})
	}
	// multipart bodies are bounded the same way, and read in memory.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("query", "q")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte("x"), 11<<20)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/loki/api/v1/query_range", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("multipart: %d %.200s", rec.Code, rec.Body)
	}
	// A push is no form: it keeps its own limit (MaxPushBodySize).
	req = httptest.NewRequest(http.MethodPost, "/loki/api/v1/push", strings.NewReader(`{"streams":[]}`))
	req.Header.Set("Content-Type", "application/json")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("push: %d %s", rec.Code, rec.Body)
	}
}
