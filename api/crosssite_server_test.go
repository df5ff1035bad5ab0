package api_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/weftdb/weft/api"
)

// TestCrossSiteFormDeleteRefused: the attack of issue 20, a form on another
// site POSTing delete_series through an operator's browser, is refused and
// deletes nothing, while the same form POST of a query still answers.
func TestCrossSiteFormDeleteRefused(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	post := func(path string, form url.Values, site string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if site != "" { // what a browser adds
			req.Header.Set("Sec-Fetch-Site", site)
			req.Header.Set("Origin", "https://evil.example")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	count := func() string {
		code, body, _ := call(t, srv, http.MethodGet, "/api/v1/query", url.Values{"query": {"count(http_requests_total)"}, "time": {ts(seedEnd)}})
		if code != 200 {
			t.Fatalf("query: %d %s", code, body)
		}
		return string(body)
	}
	before := count()
	code, body := post("/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {"http_requests_total"}}, "cross-site")
	if code != http.StatusForbidden || !strings.Contains(body, "cross-site request refused") {
		t.Fatalf("cross-site delete: %d %s, want 403 with the reason", code, body)
	}
	if after := count(); after != before {
		t.Fatalf("cross-site delete deleted: before %s, after %s", before, after)
	}
	// A cross-site query form POST is read-only and answers.
	code, body = post("/api/v1/query", url.Values{"query": {"up"}, "time": {ts(seedEnd)}}, "cross-site")
	if code != http.StatusOK {
		t.Fatalf("cross-site query form: %d %s", code, body)
	}
	// curl --data-urlencode (no browser headers) still deletes.
	code, body = post("/api/v1/admin/tsdb/delete_series", url.Values{"match[]": {"http_requests_total"}}, "")
	if code != http.StatusNoContent {
		t.Fatalf("curl delete: %d %s", code, body)
	}
	if after := count(); after == before {
		t.Fatalf("curl delete deleted nothing: %s", after)
	}
}

// TestCORSOffByDefault: without a configured origin no answer carries
// Access-Control-Allow-Origin; a configured one is answered its own origin.
func TestCORSOffByDefault(t *testing.T) {
	get := func(srv interface{ Client() *http.Client }, base, origin string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+"/api/v1/labels", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Access-Control-Allow-Origin")
	}
	off, _ := newTestServer(t, nil)
	if got := get(off, off.URL, "https://evil.example"); got != "" {
		t.Errorf("default: Access-Control-Allow-Origin %q, want none", got)
	}
	on, _ := newTestServer(t, func(o *api.Options) { o.CORSOrigin = `https://grafana\.example\.com` })
	if got := get(on, on.URL, "https://grafana.example.com"); got != "https://grafana.example.com" {
		t.Errorf("configured: Access-Control-Allow-Origin %q, want the origin", got)
	}
	if got := get(on, on.URL, "https://evil.example"); got != "" {
		t.Errorf("configured, other origin: Access-Control-Allow-Origin %q, want none", got)
	}
}
