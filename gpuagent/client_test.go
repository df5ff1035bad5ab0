package gpuagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a throwaway certificate authority made by the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(tb testing.TB, name string) *testCA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for cn, a server certificate for
// 127.0.0.1 or a client certificate.
func (ca *testCA) issue(tb testing.TB, cn string, server bool) (certPEM, keyPEM []byte) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"weft.test"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// seen is one request as the TLS receiver saw it.
type seen struct {
	path, tenant, auth, clientCN string
	user, password               string
	basic                        bool
}

// tlsReceiver is a loopback HTTPS server that requires a client certificate
// signed by clientCA and records what each request carried.
type tlsReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
}

func newTLSReceiver(t *testing.T, serverCA, clientCA *testCA) *tlsReceiver {
	t.Helper()
	r := &tlsReceiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := seen{path: req.URL.Path, tenant: req.Header.Get("X-Scope-OrgID"), auth: req.Header.Get("Authorization")}
		s.user, s.password, s.basic = req.BasicAuth()
		if len(req.TLS.PeerCertificates) > 0 {
			s.clientCN = req.TLS.PeerCertificates[0].Subject.CommonName
		}
		r.mu.Lock()
		r.got = append(r.got, s)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	certPEM, keyPEM := serverCA.issue(t, "weft", true)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tlsReceiver) last(t *testing.T) seen {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatal("no request reached the receiver")
	}
	return r.got[len(r.got)-1]
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientFiles writes the test CA and a client certificate issued by clientCA
// and returns ClientOptions using them.
func clientFiles(t *testing.T, serverCA, clientCA *testCA, cn string) (ClientOptions, string) {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM := clientCA.issue(t, cn, false)
	return ClientOptions{
		TLSCAFile:   writeFile(t, dir, "ca.pem", serverCA.pem),
		TLSCertFile: writeFile(t, dir, "client.pem", certPEM),
		TLSKeyFile:  writeFile(t, dir, "client-key.pem", keyPEM),
	}, dir
}

// push sends one remote-write request and one Loki push through rt.
func push(t *testing.T, rt http.RoundTripper, base string) error {
	t.Helper()
	q, err := OpenQueue(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSender(q, SenderOptions{URL: base + "/api/v1/write", Client: &http.Client{Transport: rt, Timeout: 5 * time.Second}})
	body, err := EncodeRW2([]Series{{Name: "up", Value: 1}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.send(context.Background(), body); err != nil {
		return err
	}
	l := NewLokiPusher(base, &http.Client{Transport: rt, Timeout: 5 * time.Second})
	_, err = l.post(context.Background(), []byte(`{"streams":[]}`))
	return err
}

// mustPush builds the agent's transport from opts, pushes once through it
// to recv and returns it (closed at test end).
func mustPush(t *testing.T, recv *tlsReceiver, opts ClientOptions) *pushTransport {
	t.Helper()
	rt, err := newPushTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.CloseIdleConnections)
	if err := push(t, rt, recv.srv.URL); err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestPushOverMutualTLSWithTenantAndToken(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	recv := newTLSReceiver(t, serverCA, clientCA)
	opts, dir := clientFiles(t, serverCA, clientCA, "weft-agent-node-7")
	opts.TenantID = "team-a"
	opts.BearerTokenFile = writeFile(t, dir, "token", []byte("tok-1\n"))
	rt := mustPush(t, recv, opts)
	recv.mu.Lock()
	got := append([]seen(nil), recv.got...)
	recv.mu.Unlock()
	if len(got) != 2 || got[0].path != "/api/v1/write" || got[1].path != "/loki/api/v1/push" {
		t.Fatalf("requests = %+v, want a remote write and a Loki push", got)
	}
	for _, s := range got {
		if s.tenant != "team-a" || s.auth != "Bearer tok-1" || s.clientCN != "weft-agent-node-7" {
			t.Errorf("%s: tenant %q auth %q client cert %q", s.path, s.tenant, s.auth, s.clientCN)
		}
	}

	// A rotated token (a Kubernetes secret update) is used from the next
	// request on, without a restart.
	writeFile(t, dir, "token", []byte("tok-2-longer\n"))
	if err := push(t, rt, recv.srv.URL); err != nil {
		t.Fatal(err)
	}
	if s := recv.last(t); s.auth != "Bearer tok-2-longer" {
		t.Errorf("after rotation auth = %q", s.auth)
	}

	// A rotated client certificate is used from the next connection on.
	certPEM, keyPEM := clientCA.issue(t, "weft-agent-rotated", false)
	writeFile(t, dir, "client.pem", certPEM)
	writeFile(t, dir, "client-key.pem", keyPEM)
	rt.CloseIdleConnections()
	if err := push(t, rt, recv.srv.URL); err != nil {
		t.Fatal(err)
	}
	if s := recv.last(t); s.clientCN != "weft-agent-rotated" {
		t.Errorf("after certificate rotation the client presented %q", s.clientCN)
	}
}

func TestPushBasicAuth(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	recv := newTLSReceiver(t, serverCA, clientCA)
	opts, dir := clientFiles(t, serverCA, clientCA, "agent")
	opts.BasicAuthUser = "node-7"
	opts.BasicAuthPasswordFile = writeFile(t, dir, "password", []byte("s3cret:with:colons\n"))
	mustPush(t, recv, opts)
	if s := recv.last(t); !s.basic || s.user != "node-7" || s.password != "s3cret:with:colons" || s.tenant != "" {
		t.Errorf("basic auth = %v %q %q, tenant %q", s.basic, s.user, s.password, s.tenant)
	}
}

func TestPushTLSFailures(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	recv := newTLSReceiver(t, serverCA, clientCA)
	good, _ := clientFiles(t, serverCA, clientCA, "agent")
	otherCA := newTestCA(t, "other-ca")
	wrongCA, _ := clientFiles(t, otherCA, clientCA, "agent")
	untrusted, _ := clientFiles(t, serverCA, otherCA, "agent") // client cert the server does not trust
	tests := []struct {
		name    string
		opts    ClientOptions
		wantErr string // "" = the push succeeds
	}{
		{"verified server and client", good, ""},
		{"server not signed by the configured CA", wrongCA, "certificate signed by unknown authority"},
		{"system roots do not know the test CA", ClientOptions{TLSCertFile: good.TLSCertFile, TLSKeyFile: good.TLSKeyFile}, "certificate signed by unknown authority"},
		{"no client certificate", ClientOptions{TLSCAFile: good.TLSCAFile}, "certificate required"},
		{"client certificate of another CA", untrusted, "unknown certificate authority"},
		{"server name mismatch", ClientOptions{TLSCAFile: good.TLSCAFile, TLSCertFile: good.TLSCertFile, TLSKeyFile: good.TLSKeyFile, TLSServerName: "other.test"}, "certificate is valid for"},
		{"server name override that matches", ClientOptions{TLSCAFile: good.TLSCAFile, TLSCertFile: good.TLSCertFile, TLSKeyFile: good.TLSKeyFile, TLSServerName: "weft.test"}, ""},
		{"insecure skip verify, asked for", ClientOptions{TLSInsecureSkipVerify: true, TLSCertFile: good.TLSCertFile, TLSKeyFile: good.TLSKeyFile}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := newPushTransport(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.CloseIdleConnections()
			err = push(t, rt, recv.srv.URL)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("push failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("push error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestClientOptionsRejected(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty", []byte("\n"))
	notPEM := writeFile(t, dir, "ca.txt", []byte("not a certificate"))
	tests := []struct {
		name    string
		opts    ClientOptions
		wantErr string
	}{
		{"tenant with a slash", ClientOptions{TenantID: "a/b"}, "unsupported character '/'"},
		{"federated tenant list", ClientOptions{TenantID: "a|b"}, "unsupported character '|'"},
		{"tenant ..", ClientOptions{TenantID: ".."}, "not allowed"},
		{"tenant too long", ClientOptions{TenantID: strings.Repeat("t", 151)}, "too long"},
		{"cert without key", ClientOptions{TLSCertFile: "c.pem"}, "both a cert file and a key file"},
		{"password without user", ClientOptions{BasicAuthPasswordFile: empty}, "without a user"},
		{"basic and bearer", ClientOptions{BasicAuthUser: "u", BearerTokenFile: empty}, "mutually exclusive"},
		{"missing token file", ClientOptions{BearerTokenFile: filepath.Join(dir, "nope")}, "read bearer token file"},
		{"empty token file", ClientOptions{BearerTokenFile: empty}, "is empty"},
		{"CA file without PEM", ClientOptions{TLSCAFile: notPEM}, "holds no PEM certificate"},
		{"unreadable key pair", ClientOptions{TLSCertFile: notPEM, TLSKeyFile: notPEM}, "load tls client certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newPushTransport(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	for _, id := range []string{"team-a", "Team_B.1", "a!b*c'(d)", strings.Repeat("t", 150)} {
		if err := validTenantID(id); err != nil {
			t.Errorf("valid tenant %q rejected: %v", id, err)
		}
	}
}

// TestAgentPushesWithClientOptions runs the agent (over a source that
// needs no NVML) against the mTLS receiver: remote write carries the tenant,
// the token and the configured instance.
func TestAgentPushesWithClientOptions(t *testing.T) {
	serverCA, clientCA := newTestCA(t, "server-ca"), newTestCA(t, "client-ca")
	recv := newTLSReceiver(t, serverCA, clientCA)
	client, dir := clientFiles(t, serverCA, clientCA, "agent")
	client.TenantID = "team-b"
	client.BearerTokenFile = writeFile(t, dir, "token", []byte("agent-token"))
	opts := DefaultOptions()
	opts.ListenAddr = ""
	opts.Interval = time.Hour
	opts.Hostname = "node-9"
	opts.Instance = "10.0.0.9:9400"
	opts.PodResourcesSocket = ""
	opts.QueueDir = t.TempDir()
	opts.RemoteWriteURL = recv.srv.URL + "/api/v1/write"
	opts.Client = client
	a, err := newAgent(opts, staticSource{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	waitFor(t, "remote write over mTLS", func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		return len(recv.got) > 0
	})
	if s := recv.last(t); s.tenant != "team-b" || s.auth != "Bearer agent-token" || s.clientCN != "agent" {
		t.Errorf("agent push: tenant %q auth %q client %q", s.tenant, s.auth, s.clientCN)
	}
	if a.instance[0].Value != "10.0.0.9:9400" {
		t.Errorf("instance = %v, want the configured one", a.instance)
	}
}

// staticSource is a source without NVML: NVML down, no GPUs, no events.
type staticSource struct{}

func (staticSource) Collect(context.Context) Snapshot { return Snapshot{Time: time.Now()} }
func (staticSource) Events() <-chan Event             { return nil }
func (staticSource) Close() error                     { return nil }
