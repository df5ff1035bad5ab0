package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestAPIGzip checks that API answers are gzipped once for a client that
// accepts gzip, decode to the plain answer, and that remote read is left
// alone.
func TestAPIGzip(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	get := func(path, enc string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Encoding", enc) // set: the transport does not decode
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	path := "/api/v1/series?" + url.Values{"match[]": {`{__name__=~".+"}`}}.Encode()
	plainResp, plain := get(path, "identity")
	if ce := plainResp.Header.Get("Content-Encoding"); ce != "" || !bytes.HasPrefix(plain, []byte(`{"status":"success"`)) {
		t.Fatalf("identity: Content-Encoding %q, body %.80s", ce, plain)
	}
	for _, enc := range []string{"gzip", "deflate, gzip;q=0.5", "br, GZIP"} {
		resp, body := get(path, enc)
		if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
			t.Fatalf("%s: Content-Encoding %q", enc, ce)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("%s: decoded answer differs from the plain one:\n%.200s\n%.200s", enc, got, plain)
		}
	}
	// Not accepted: the upstream handler's own choice (deflate) applies.
	if resp, _ := get(path, "deflate, gzip;q=0"); resp.Header.Get("Content-Encoding") != "deflate" {
		t.Errorf("gzip;q=0: Content-Encoding %q, want deflate", resp.Header.Get("Content-Encoding"))
	}
	// Remote read keeps its own framing.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/read", bytes.NewReader([]byte("not snappy")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce == "gzip" {
		t.Errorf("remote read answered gzipped")
	}
}
