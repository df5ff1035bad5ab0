package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weftdb/weft/api"
)

// fuzzOTLP posts arbitrary bodies of one content type to the handler. The
// handler must never panic and must answer 200 or 400 (no 5xx: the
// storage is healthy), and a valid request afterwards must still succeed.
func fuzzOTLP(f *testing.F, ct string) {
	for _, md := range []func() []byte{
		func() []byte { return otlpBody(f, otlpRich(f), ct) },
		func() []byte { return otlpBody(f, otlpMixed(), ct) },
		func() []byte { return otlpBody(f, otlpAllBad(), ct) },
	} {
		f.Add(md())
	}
	f.Add([]byte{})
	f.Add([]byte("{}"))
	// A discarding storage: with a TSDB, a fuzzed year-2200 timestamp makes
	// Prometheus' head compact centuries of empty blocks (a storage
	// artifact; weft's storage rejects it by its future window).
	opts := api.DefaultOTLPOptions()
	opts.MaxRequestBytes = 1 << 20
	h := api.NewOTLPHandler(discardAppendable{}, opts)
	good := otlpBody(f, otlpGauge("fuzz_canary"), ct)
	post := func(body []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if code := post(body); code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("status %d for %q", code, body)
		}
		if code := post(good); code != http.StatusOK {
			t.Fatalf("valid request after fuzz input: status %d", code)
		}
	})
}

func FuzzOTLPHTTPProtobuf(f *testing.F) { fuzzOTLP(f, "application/x-protobuf") }

func FuzzOTLPHTTPJSON(f *testing.F) { fuzzOTLP(f, "application/json") }
