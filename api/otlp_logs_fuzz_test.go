package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/storage/logstore"
)

// discardLogPusher accepts every push and stores nothing.
type discardLogPusher struct{}

func (discardLogPusher) Push(context.Context, []logstore.PushStream) error { return nil }

// fuzzOTLPLogs posts arbitrary bodies of one content type to the logs
// handler. The handler must never panic and must
// answer 200 or 400 (the store is healthy), and a valid request afterwards
// must still be stored.
func fuzzOTLPLogs(f *testing.F, ct string) {
	f.Add(logsBody(f, testLogs("seed", 3, 0), ct))
	f.Add(logsBody(f, testLogs("seed", 3, 1), ct))
	f.Add(logsBody(f, richOTLPLogs(), ct))
	f.Add([]byte{})
	f.Add([]byte("{}"))
	opts := api.DefaultOTLPLogsOptions()
	opts.MaxRequestBytes = 1 << 20
	// A discarding store keeps the fuzzer fast (no fsync per input); the
	// decoding, mapping and validation under test are the same. The
	// handler tests run over a real store.
	h := api.NewOTLPLogsHandler(discardLogPusher{}, opts)
	good := logsBody(f, testLogs("fuzz_canary", 1, 0), ct)
	post := func(body []byte) int {
		req := httptest.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(body))
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

func FuzzOTLPLogsHTTPProtobuf(f *testing.F) { fuzzOTLPLogs(f, "application/x-protobuf") }

func FuzzOTLPLogsHTTPJSON(f *testing.F) { fuzzOTLPLogs(f, "application/json") }
