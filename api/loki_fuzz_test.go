package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang/snappy"
)

// FuzzLokiPush: whatever the body, the push endpoint answers 204, 400 or
// 413, never 5xx, and never panics.
func FuzzLokiPush(f *testing.F) {
	e := newLokiEnv(f)
	h := e.srv.Config.Handler
	f.Add(true, []byte(`{"streams":[{"stream":{"app":"a"},"values":[["1796039400000000000","x",{"k":"v"}]]}]}`))
	f.Add(true, []byte(`{"streams":[{"stream":{},"values":[["-1",""]]}]}`))
	f.Add(false, snappy.Encode(nil, []byte("\x0a\x0f\x0a\x09{app=\"a\"}\x12\x02\x12\x00")))
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
