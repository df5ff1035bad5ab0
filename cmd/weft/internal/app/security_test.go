package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.uber.org/goleak"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/internal/testca"
)

func writeFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

func bcryptHash(tb testing.TB, pw string) string {
	tb.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	return string(h)
}

// TestTLSAndAuthEveryListener: with a web configuration file (TLS with
// required client certificates from a CA made here, basic auth users) and
// bearer tokens, every listener (main HTTP, OTLP HTTP, OTLP gRPC) serves
// TLS only, refuses a client without a certificate, wrong passwords,
// expired tokens and a token used for another tenant, and serves the admin
// endpoints and pprof to admins only.
func TestTLSAndAuthEveryListener(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	ca := testca.New(t, "weft test CA")
	ca.Issue(t, dir, "server", true)
	cliCert, cliKey := ca.Issue(t, dir, "client", false)
	other := testca.New(t, "another CA")
	badCert, badKey := other.Issue(t, dir, "stranger", false)
	ca.WriteCA(t, dir, "ca.crt")
	// Relative paths are relative to the web configuration file.
	writeFile(t, filepath.Join(dir, "web.yml"), `
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_ca_file: ca.crt
  client_auth_type: RequireAndVerifyClientCert
http_server_config:
  headers:
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: `+bcryptHash(t, "alice-pw")+`
  ops: `+bcryptHash(t, "ops-pw")+`
`)
	now := time.Now()
	opts := testOptions(t, filepath.Join(dir, "data"))
	opts.Security.WebConfigFile = filepath.Join(dir, "web.yml")
	opts.Security.Users = map[string]UserSettings{"alice": {Tenant: "team-a"}, "ops": {Admin: true}}
	opts.Security.Tokens = []api.BearerToken{
		{Name: "ci-a", SHA256: sha256.Sum256([]byte("token-team-a-0123456789")), Tenant: "team-a", Expires: now.Add(time.Hour)},
		{Name: "old", SHA256: sha256.Sum256([]byte("token-expired-0123456789")), Expires: now.Add(-time.Minute)},
	}
	ctx := context.Background()
	a, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	addrs := a.Addrs()
	roots := ca.Pool()
	clientTLS := func(certFile, keyFile string) *tls.Config {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			kp, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{kp}
		}
		return cfg
	}
	client := func(cfg *tls.Config) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	}
	good := client(clientTLS(cliCert, cliKey))
	main := "https://" + addrs["http"].String()
	otlpHTTP := "https://" + addrs["otlp_http"].String()

	type creds struct{ user, pass, token, tenant string }
	do := func(c *http.Client, method, u string, cr creds, body []byte, ct string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		switch {
		case cr.token != "":
			req.Header.Set("Authorization", "Bearer "+cr.token)
		case cr.user != "":
			req.SetBasicAuth(cr.user, cr.pass)
		}
		if cr.tenant != "" {
			req.Header.Set("X-Scope-OrgID", cr.tenant)
		}
		resp, err := c.Do(req)
		if err != nil {
			return -1, err.Error(), nil
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String(), resp.Header
	}

	// Plain HTTP and TLS without a client certificate (or with one from
	// another CA) do not get through on either HTTP listener.
	for _, base := range []string{main, otlpHTTP} {
		plain := &http.Client{Timeout: 5 * time.Second}
		if code, msg, _ := do(plain, "GET", "http"+strings.TrimPrefix(base, "https")+"/-/healthy", creds{}, nil, ""); code == 200 {
			t.Errorf("%s: plain HTTP answered 200: %s", base, msg)
		}
		if code, msg, _ := do(client(clientTLS("", "")), "GET", base+"/-/healthy", creds{}, nil, ""); code != -1 {
			t.Errorf("%s: TLS without a client certificate: %d %s, want a handshake failure", base, code, msg)
		}
		if code, msg, _ := do(client(clientTLS(badCert, badKey)), "GET", base+"/-/healthy", creds{}, nil, ""); code != -1 {
			t.Errorf("%s: a client certificate of another CA: %d %s, want a handshake failure", base, code, msg)
		}
	}

	q := main + "/api/v1/query?query=vector(1)"
	for _, tc := range []struct {
		name string
		cr   creds
		want int
		msg  string
	}{
		{"no credentials", creds{}, 401, "authentication required"},
		{"wrong password", creds{user: "alice", pass: "nope"}, 401, "invalid credentials"},
		{"unknown user", creds{user: "mallory", pass: "alice-pw"}, 401, "invalid credentials"},
		{"right password", creds{user: "alice", pass: "alice-pw"}, 200, `"status":"success"`},
		{"user's own tenant", creds{user: "alice", pass: "alice-pw", tenant: "team-a"}, 200, `"status":"success"`},
		{"user claims another tenant", creds{user: "alice", pass: "alice-pw", tenant: "team-b"}, 403, `act as tenant "team-a" only`},
		{"token", creds{token: "token-team-a-0123456789"}, 200, `"status":"success"`},
		{"token claims another tenant", creds{token: "token-team-a-0123456789", tenant: "team-b"}, 403, `names tenant "team-b"`},
		{"expired token", creds{token: "token-expired-0123456789"}, 401, "expired at"},
		{"unknown token", creds{token: "token-nobody-0123456789"}, 401, "invalid credentials"},
	} {
		code, body, hdr := do(good, "GET", q, tc.cr, nil, "")
		if code != tc.want || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.want, tc.msg)
		}
		if code == 401 && hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
		if code == 200 && hdr.Get("Strict-Transport-Security") == "" {
			t.Errorf("%s: the web config's headers are missing", tc.name)
		}
	}
	// Probes answer without credentials (over TLS).
	if code, body, _ := do(good, "GET", main+"/-/healthy", creds{}, nil, ""); code != 200 {
		t.Errorf("healthy: %d %s", code, body)
	}
	// Admin endpoints and pprof: admins only.
	for _, p := range []string{"/debug/pprof/cmdline", "/api/v1/admin/tsdb/clean_tombstones"} {
		method := "GET"
		if strings.Contains(p, "admin") {
			method = "POST"
		}
		if code, body, _ := do(good, method, main+p, creds{user: "alice", pass: "alice-pw"}, nil, ""); code != 403 || !strings.Contains(body, "admin identity") {
			t.Errorf("%s as alice: %d %s, want 403", p, code, body)
		}
		if code, body, _ := do(good, method, main+p, creds{token: "token-team-a-0123456789"}, nil, ""); code != 403 {
			t.Errorf("%s with a tenant token: %d %s, want 403", p, code, body)
		}
		if code, body, _ := do(good, method, main+p, creds{user: "ops", pass: "ops-pw"}, nil, ""); code != 200 && code != 204 {
			t.Errorf("%s as ops: %d %s, want success", p, code, body)
		}
	}

	// OTLP over HTTP, on its own port and the main one.
	metrics, err := otlpGauge("tls", now, 1).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{otlpHTTP + "/v1/metrics", main + "/otlp/v1/metrics"} {
		if code, body, _ := do(good, "POST", u, creds{}, metrics, "application/x-protobuf"); code != 401 {
			t.Errorf("%s without credentials: %d %s", u, code, body)
		}
		if code, body, _ := do(good, "POST", u, creds{token: "token-team-a-0123456789", tenant: "team-b"}, metrics, "application/x-protobuf"); code != 403 {
			t.Errorf("%s for another tenant: %d %s", u, code, body)
		}
		if code, body, _ := do(good, "POST", u, creds{token: "token-team-a-0123456789"}, metrics, "application/x-protobuf"); code != 200 {
			t.Errorf("%s with a token: %d %s", u, code, body)
		}
	}

	// OTLP over gRPC: TLS with the client certificate, credentials in the
	// metadata.
	var conns []*grpc.ClientConn
	defer func() { // before the leak check
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func(cfg *tls.Config) pmetricotlp.GRPCClient {
		conn, err := grpc.NewClient(addrs["otlp_grpc"].String(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		return pmetricotlp.NewGRPCClient(conn)
	}
	g := dial(clientTLS(cliCert, cliKey))
	export := func(c pmetricotlp.GRPCClient, kv ...string) codes.Code {
		cctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, kv...), 10*time.Second)
		defer cancel()
		_, err := c.Export(cctx, otlpGauge("grpc", now, 1))
		return status.Code(err)
	}
	if c := export(g); c != codes.Unauthenticated {
		t.Errorf("grpc without credentials: %v", c)
	}
	if c := export(g, "authorization", "Bearer token-expired-0123456789"); c != codes.Unauthenticated {
		t.Errorf("grpc with an expired token: %v", c)
	}
	if c := export(g, "authorization", "Bearer token-team-a-0123456789", "x-scope-orgid", "team-b"); c != codes.PermissionDenied {
		t.Errorf("grpc for another tenant: %v", c)
	}
	if c := export(g, "authorization", "Bearer token-team-a-0123456789"); c != codes.OK {
		t.Errorf("grpc with a token: %v", c)
	}
	if c := export(g, "authorization", "Basic b3BzOm9wcy1wdw=="); c != codes.OK { // ops:ops-pw
		t.Errorf("grpc with basic auth: %v", c)
	}
	if c := export(dial(clientTLS("", "")), "authorization", "Bearer token-team-a-0123456789"); c != codes.Unavailable {
		t.Errorf("grpc without a client certificate: %v, want the handshake to fail", c)
	}
}

// TestWebConfigInvalid: a broken web configuration file stops the start
// with the reason.
func TestWebConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ file, want string }{
		"unknown key":     {"tls_server_config:\n  cert_fil: x\n", "cert_fil"},
		"not bcrypt":      {"basic_auth_users:\n  alice: plaintext\n", "not a bcrypt hash"},
		"missing key":     {"tls_server_config:\n  cert_file: nope.crt\n", "key"},
		"ca without auth": {"tls_server_config:\n  cert_file: " + filepath.Join(dir, "c.crt") + "\n  key_file: " + filepath.Join(dir, "c.key") + "\n  client_ca_file: x\n", "c.crt"},
		"rate limit":      {"rate_limit:\n  interval: 1s\n  burst: 1\n", "rate_limit"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yml")
			writeFile(t, path, tc.file)
			opts := testOptions(t, filepath.Join(dir, "data-"+strings.ReplaceAll(name, " ", "_")))
			opts.Security.WebConfigFile = path
			a, err := New(context.Background(), opts)
			if err == nil {
				_ = a.Stop(context.Background())
				t.Fatal("New accepted the file")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}
