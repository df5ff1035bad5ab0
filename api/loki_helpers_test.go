package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weftdb/weft/index"
	"github.com/weftdb/weft/query/logql"
	"github.com/weftdb/weft/storage/logstore"
)

// lokiNow is the fixed "now" of the Loki API tests.
var lokiNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type lokiEnv struct {
	srv   *httptest.Server
	store *logstore.Store
}

// newLokiEnv serves the Loki API over a fresh log store in a Pebble
// database shared with an index, as cmd/weft wires it.
func newLokiEnv(tb testing.TB) *lokiEnv {
	tb.Helper()
	return newLokiEnvWith(tb, nil)
}

// newLokiEnvWith is newLokiEnv with options changed by mod (if not nil).
func newLokiEnvWith(tb testing.TB, mod func(*LokiOptions)) *lokiEnv {
	tb.Helper()
	return newLokiEnvEngine(tb, logql.EngineOptions{}, mod)
}

// newLokiEnvEngine is newLokiEnvWith with the LogQL engine's options.
func newLokiEnvEngine(tb testing.TB, eo logql.EngineOptions, mod func(*LokiOptions)) *lokiEnv {
	tb.Helper()
	db, err := pebble.Open(tb.TempDir(), &pebble.Options{Merger: index.Merger(), Logger: lokiQuietLogger{}})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := index.Open(db, index.DefaultOptions())
	if err != nil {
		tb.Fatal(err)
	}
	so := logstore.DefaultOptions()
	so.MaintenanceInterval = -1
	so.Now = func() time.Time { return lokiNow }
	store, err := logstore.Open(context.Background(), db, ix, so)
	if err != nil {
		tb.Fatal(err)
	}
	eng := logql.NewEngine(store, eo)
	o := DefaultLokiOptions()
	o.Now = func() time.Time { return lokiNow }
	if mod != nil {
		mod(&o)
	}
	srv := httptest.NewServer(NewLokiHandler(store, eng, o))
	tb.Cleanup(func() {
		srv.Close()
		store.Close()
		ix.Close()
		db.Close()
	})
	return &lokiEnv{srv: srv, store: store}
}

type lokiQuietLogger struct{}

func (lokiQuietLogger) Infof(string, ...any)         {}
func (lokiQuietLogger) Errorf(string, ...any)        {}
func (lokiQuietLogger) Fatalf(f string, args ...any) { panic(f) }

// do sends a request and returns status and body.
func (e *lokiEnv) do(tb testing.TB, method, path string, body io.Reader, hdr map[string]string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (e *lokiEnv) get(tb testing.TB, path string, params url.Values, hdr map[string]string) (int, string) {
	tb.Helper()
	if params != nil {
		path += "?" + params.Encode()
	}
	return e.do(tb, http.MethodGet, path, nil, hdr)
}

func (e *lokiEnv) pushJSON(tb testing.TB, body string) {
	tb.Helper()
	code, resp := e.do(tb, http.MethodPost, "/loki/api/v1/push", strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	if code != http.StatusNoContent {
		tb.Fatalf("push: %d %s", code, resp)
	}
}

// withoutStats cuts the "stats" object (execution times vary) from a query
// response, checks that it is a JSON object with a summary, and returns the
// rest with the closing braces.
func withoutStats(tb testing.TB, body string) string {
	tb.Helper()
	i := strings.Index(body, `,"stats":`)
	if i < 0 || !strings.HasSuffix(body, "}}") {
		tb.Fatalf("no stats in %s", body)
	}
	var st struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal([]byte(body[i+len(`,"stats":`):len(body)-2]), &st); err != nil || st.Summary == nil {
		tb.Fatalf("stats %s: %v", body[i:], err)
	}
	return body[:i] + "}}"
}

func ns(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }
