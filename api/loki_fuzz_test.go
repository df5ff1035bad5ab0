package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/klauspost/compress/s2"
)

// FuzzLokiPush: whatever the body, the push endpoint answers 204, 400 or
// 413, never 5xx, and never panics.
func FuzzLokiPush(f *testing.F) {
	e := newLokiEnv(f)
	h := e.srv.Config.Handler
	f.Add(true, []byte(`{"streams":[{"stream":{"app":"a"},"values":[["1796039400000000000","x",{"k":"v"}]]}]}`))
	f.Add(true, []byte(`{"streams":[{"stream":{},"values":[["-1",""]]}]}`))
	f.Add(false, s2.EncodeSnappy(nil, []byte("\x0a\x0f\x0a\x09{app=\"a\"}\x12\x02\x12\x00")))
	f.Fuzz(func(t *testing.T, isJSON bool, body []byte) {
		ct := "application/x-protobuf"
		if isJSON {
			ct = "application/json"
		}
		req := httptest.NewRequest(http.MethodPost, "/loki/api/v1/push", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusNoContent, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// FuzzLokiPatterns: whatever the parameters, the patterns endpoint answers
// 200 with a JSON body or 400, never 5xx, and never panics.
func FuzzLokiPatterns(f *testing.F) {
	e := newLokiEnv(f)
	pushSample(f, e)
	h := e.srv.Config.Handler
	f.Add(`{app="api"}`, "", "", "1m")
	f.Add(`{app=~".+"} |= "x"`, "1796038800", "1796040000", "15")
	f.Add(`{app="api"}`, "2026-11-30T11:00:00Z", "-1", "0.001")
	f.Fuzz(func(t *testing.T, query, start, end, step string) {
		q := url.Values{"query": {query}, "start": {start}, "end": {end}, "step": {step}}
		req := httptest.NewRequest(http.MethodGet, "/loki/api/v1/patterns?"+q.Encode(), nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("invalid JSON: %s", rec.Body)
			}
		case http.StatusBadRequest:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
