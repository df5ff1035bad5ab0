package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestClientFlagsTLSAndCredentials: with -tls-ca-file and a credential
// flag, weft-bench verifies the target's certificate and sends the
// credential; without the CA it refuses the certificate.
func TestClientFlagsTLSAndCredentials(t *testing.T) {
	var got string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") }))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	tok := filepath.Join(dir, "token")
	pw := filepath.Join(dir, "pw")
	for p, b := range map[string][]byte{
		ca:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		tok: []byte("tok-123\n"),
		pw:  []byte("secret\n"),
	} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		flags clientFlags
		want  string
	}{
		{"bearer", clientFlags{caFile: ca, tokenFile: tok}, "Bearer tok-123"},
		{"basic", clientFlags{caFile: ca, user: "bench", passwordFile: pw}, "Basic YmVuY2g6c2VjcmV0"},
	} {
		c, authz, err := tc.flags.build(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Authorization", authz)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if got != tc.want {
			t.Errorf("%s: server got %q, want %q", tc.name, got, tc.want)
		}
	}
	c, _, err := (&clientFlags{}).build(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a certificate of an unknown CA was accepted")
	}
	if _, _, err := (&clientFlags{user: "u", tokenFile: tok}).build(time.Second); err == nil {
		t.Fatal("basic auth and a token together were accepted")
	}
}
