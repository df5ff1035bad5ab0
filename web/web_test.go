package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/grafana/regexp"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	r := resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEmbeddedBundle serves the committed bundle: index.html names hashed
// assets that exist and are served with an immutable cache policy.
func TestEmbeddedBundle(t *testing.T) {
	h, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	resp := get(t, h, http.MethodGet, "/", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %v", resp.StatusCode, resp.Header)
	}
	idx := body(t, resp)
	refs := regexp.MustCompile(`(?:src|href)="(assets/[^"]+)"`).FindAllStringSubmatch(idx, -1)
	if len(refs) != 2 {
		t.Fatalf("index.html names %d assets, want the script and the style sheet:\n%s", len(refs), idx)
	}
	for _, m := range refs {
		r := get(t, h, http.MethodGet, "/"+m[1], map[string]string{"Accept-Encoding": "gzip"})
		if r.StatusCode != 200 || r.Header.Get("Cache-Control") != cacheImmutable || r.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("GET /%s: %d %v", m[1], r.StatusCode, r.Header)
		}
		if len(body(t, r)) == 0 {
			t.Fatalf("%s is empty", m[1])
		}
	}
}

func testHandler(t *testing.T, opts Options) *Handler {
	t.Helper()
	fsys := fstest.MapFS{
		"index.html":          {Data: []byte(`<html><head><meta name="csp-nonce" content="%CSP_NONCE%"><base href="/"><script src="assets/main-AB.js"></script></head></html>`)},
		"assets/main-AB.js":   {Data: bytes.Repeat([]byte("console.log(1);"), 100)},
		"favicon.svg":         {Data: []byte("<svg/>")},
		"SOURCES.sha256":      {Data: []byte("x\n")},
		"assets/pic-CD.woff2": {Data: []byte{1, 2, 3}},
	}
	h, err := newHandler(fsys, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHandlerRoutes(t *testing.T) {
	h := testHandler(t, Options{BasePath: "/weft/"})
	for _, tc := range []struct {
		name, method, path string
		code               int
		ctype, cache       string
	}{
		{"root", "GET", "/", 200, "text/html; charset=utf-8", "no-cache"},
		{"index", "GET", "/index.html", 200, "text/html; charset=utf-8", "no-cache"},
		{"asset", "GET", "/assets/main-AB.js", 200, "text/javascript; charset=utf-8", cacheImmutable},
		{"static", "GET", "/favicon.svg", 200, "image/svg+xml", "no-cache"},
		{"spa fallback", "GET", "/graph", 200, "text/html; charset=utf-8", "no-cache"},
		{"deep fallback", "GET", "/workload/run_id/r42", 200, "text/html; charset=utf-8", "no-cache"},
		{"head", "HEAD", "/", 200, "text/html; charset=utf-8", "no-cache"},
		{"stale asset", "GET", "/assets/main-OLD.js", 404, "", ""},
		{"api path", "GET", "/api/v2/query", 404, "", ""},
		{"loki path", "GET", "/loki/api/v2/x", 404, "", ""},
		{"weft api path", "GET", "/weft/api/v1/nope", 404, "", ""},
		{"metrics", "GET", "/metrics", 404, "", ""},
		{"file name", "GET", "/robots.txt", 404, "", ""},
		{"build bookkeeping", "GET", "/SOURCES.sha256", 404, "", ""},
		{"post", "POST", "/", 405, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, h, tc.method, tc.path, nil)
			if resp.StatusCode != tc.code {
				t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.code)
			}
			if tc.code != 200 {
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := resp.Header.Get("Cache-Control"); got != tc.cache {
				t.Errorf("Cache-Control %q, want %q", got, tc.cache)
			}
			csp := resp.Header.Get("Content-Security-Policy")
			isHTML := strings.HasPrefix(tc.ctype, "text/html")
			if !isHTML && csp != ContentSecurityPolicy {
				t.Errorf("CSP %q", csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no nosniff")
			}
			b := body(t, resp)
			if tc.method == "HEAD" && b != "" {
				t.Errorf("HEAD has a body")
			}
			if isHTML && tc.method == "GET" {
				if !strings.Contains(b, `<base href="/weft/">`) {
					t.Errorf("index.html without the base path: %s", b)
				}
				m := regexp.MustCompile(`content="([A-Za-z0-9+/]{22})"`).FindStringSubmatch(b)
				if m == nil || csp != cspWithNonce(m[1]) || !strings.Contains(csp, "style-src 'self' 'nonce-"+m[1]+"'") {
					t.Errorf("index.html nonce and CSP disagree: %s / %s", b, csp)
				}
			}
		})
	}
}

func TestHandlerGzipAndETag(t *testing.T) {
	h := testHandler(t, DefaultOptions())
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"", false},
		{"gzip", true},
		{"br, gzip;q=0.5", true},
		{"gzip;q=0", false},
		{"*", true},
		{"*;q=0", false},
		{"gzip;q=0, *", false},
		{"deflate, br", false},
		{"GZIP", true},
	} {
		resp := get(t, h, "GET", "/assets/main-AB.js", map[string]string{"Accept-Encoding": tc.accept})
		got := resp.Header.Get("Content-Encoding") == "gzip"
		if got != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tc.accept, got, tc.gzip)
		}
		if b := body(t, resp); b != strings.Repeat("console.log(1);", 100) {
			t.Errorf("Accept-Encoding %q: body %q", tc.accept, b[:min(len(b), 40)])
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("no Vary")
		}
	}
	// A binary file is never compressed.
	if resp := get(t, h, "GET", "/assets/pic-CD.woff2", map[string]string{"Accept-Encoding": "gzip"}); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("woff2 compressed")
	}
	first := get(t, h, "GET", "/favicon.svg", nil)
	etag := first.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if resp := get(t, h, "GET", "/favicon.svg", map[string]string{"If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", resp.StatusCode)
	}
	if resp := get(t, h, "GET", "/favicon.svg", map[string]string{"If-None-Match": `"other"`}); resp.StatusCode != 200 {
		t.Fatalf("other etag: %d", resp.StatusCode)
	}
	// index.html carries a fresh nonce each time, so it has no validator.
	a, b := get(t, h, "GET", "/", nil), get(t, h, "GET", "/", nil)
	if a.Header.Get("ETag") != "" || a.Header.Get("Content-Security-Policy") == b.Header.Get("Content-Security-Policy") {
		t.Errorf("index.html: ETag %q, nonces %q %q", a.Header.Get("ETag"), a.Header.Get("Content-Security-Policy"), b.Header.Get("Content-Security-Policy"))
	}
}

func TestOptionsBasePath(t *testing.T) {
	for _, bad := range []string{"weft/", "/weft", "x"} {
		if _, err := New(Options{BasePath: bad}); err == nil {
			t.Errorf("BasePath %q accepted", bad)
		}
	}
	h := testHandler(t, Options{BasePath: `/a"b/`})
	if b := body(t, get(t, h, "GET", "/", nil)); !strings.Contains(b, `<base href="/a&quot;b/">`) {
		t.Fatalf("base not escaped: %s", b)
	}
}
