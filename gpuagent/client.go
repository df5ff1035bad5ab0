package gpuagent

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weftdb/weft/internal/tenantid"
)

// Timeouts of one push; a push that takes longer is retried.
const (
	// remoteWriteTimeout bounds one remote-write request: a 10 s
	// collection's request is a few KiB, so 30 s means the receiver is stuck.
	remoteWriteTimeout = 30 * time.Second
	// lokiPushTimeout bounds one Loki push of an event line.
	lokiPushTimeout = 10 * time.Second
)

// ClientOptions configures how the agent reaches weft: the tenant, TLS and
// credentials, the same for remote write and Loki push. The zero value is
// plain HTTP without credentials.
type ClientOptions struct {
	// TenantID is sent as X-Scope-OrgID on every push (Mimir's and Loki's
	// tenant header); empty sends none.
	TenantID string
	// TLSCAFile is a PEM file of the CAs that sign weft's certificate;
	// empty uses the system roots.
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are the client certificate and key for
	// mutual TLS, both or neither. Both are re-read when either changes, so
	// a rotated certificate is used from the next connection on.
	TLSCertFile, TLSKeyFile string
	// TLSServerName overrides the name weft's certificate is checked
	// against (default: the URL's host).
	TLSServerName string
	// TLSInsecureSkipVerify accepts any server certificate. Off by default;
	// it gives up the protection TLS exists for.
	TLSInsecureSkipVerify bool
	// BasicAuthUser and BasicAuthPasswordFile send HTTP basic auth, the
	// password read from the file (trailing newline trimmed) and re-read
	// when the file changes.
	BasicAuthUser, BasicAuthPasswordFile string
	// BearerTokenFile sends "Authorization: Bearer <token>", the token read
	// from the file and re-read when it changes. Exclusive with basic auth.
	BearerTokenFile string
}

func (o *ClientOptions) credentials() bool {
	return o.BasicAuthUser != "" || o.BearerTokenFile != ""
}

func (o *ClientOptions) validate() error {
	if err := validTenantID(o.TenantID); err != nil {
		return err
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return fmt.Errorf("tls client certificate needs both a cert file and a key file")
	}
	if o.BasicAuthPasswordFile != "" && o.BasicAuthUser == "" {
		return fmt.Errorf("basic auth password file given without a user")
	}
	if o.BasicAuthUser != "" && o.BearerTokenFile != "" {
		return fmt.Errorf("basic auth and bearer token are mutually exclusive")
	}
	return nil
}

// validTenantID accepts no tenant (the header is not sent) or an ID by the
// rule weft and its peers share (internal/tenantid).
func validTenantID(id string) error {
	if id == "" {
		return nil
	}
	return tenantid.Validate(id)
}

// newPushTransport returns the round tripper both pushers share: TLS as
// configured, then the tenant header and credentials on every request. It
// reads every configured file once, so a wrong path fails at start-up.
func newPushTransport(o ClientOptions) (*pushTransport, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.TLSServerName,
		InsecureSkipVerify: o.TLSInsecureSkipVerify, // opt-in only
	}
	if o.TLSCAFile != "" {
		pem, err := os.ReadFile(o.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("read tls ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca file %s holds no PEM certificate", o.TLSCAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if o.TLSCertFile != "" {
		kp := &keyPairFile{certPath: o.TLSCertFile, keyPath: o.TLSKeyFile}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsCfg
	t := &pushTransport{base: base, tenant: o.TenantID, user: o.BasicAuthUser}
	if o.BasicAuthPasswordFile != "" {
		t.password = &secretFile{path: o.BasicAuthPasswordFile, what: "basic auth password"}
		if _, err := t.password.get(); err != nil {
			return nil, err
		}
	}
	if o.BearerTokenFile != "" {
		t.token = &secretFile{path: o.BearerTokenFile, what: "bearer token"}
		if _, err := t.token.get(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// pushTransport adds the tenant header and credentials to each request it
// forwards. Safe for concurrent use.
type pushTransport struct {
	base     *http.Transport
	tenant   string
	user     string
	password *secretFile // nil: empty password
	token    *secretFile // nil: no bearer token
}

// RoundTrip implements http.RoundTripper; it leaves req unchanged.
func (t *pushTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.tenant == "" && t.user == "" && t.token == nil {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if t.tenant != "" {
		r.Header.Set("X-Scope-OrgID", t.tenant)
	}
	switch {
	case t.token != nil:
		tok, err := t.token.get()
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	case t.user != "":
		var pw string
		if t.password != nil {
			p, err := t.password.get()
			if err != nil {
				return nil, err
			}
			pw = p
		}
		r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(t.user+":"+pw)))
	}
	return t.base.RoundTrip(r)
}

// CloseIdleConnections closes the pooled connections, so the next request
// handshakes again (with a rotated client certificate).
func (t *pushTransport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// fileStamp identifies one version of a file: a rewrite changes the
// modification time or the size.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size()}, nil
}

// secretFile is a credential kept in a file (a Kubernetes secret mount),
// re-read when the file changes. Safe for concurrent use.
type secretFile struct {
	path, what string

	mu    sync.Mutex
	stamp fileStamp
	value string
}

// secretMaxBytes bounds a credential file: tokens are a few KiB at most, a
// larger file is a wrong path.
const secretMaxBytes = 64 << 10

func (s *secretFile) get() (string, error) {
	st, err := stampOf(s.path)
	if err != nil {
		return "", fmt.Errorf("read %s file: %w", s.what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == s.stamp && s.value != "" {
		return s.value, nil
	}
	if st.size > secretMaxBytes {
		return "", fmt.Errorf("%s file %s is %d bytes; max %d", s.what, s.path, st.size, secretMaxBytes)
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return "", fmt.Errorf("read %s file: %w", s.what, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s file %s is empty", s.what, s.path)
	}
	s.stamp, s.value = st, v
	return v, nil
}

// keyPairFile is a client certificate and key in two files, reloaded when
// either changes. Safe for concurrent use.
type keyPairFile struct {
	certPath, keyPath string

	mu     sync.Mutex
	stamps [2]fileStamp
	cert   *tls.Certificate
}

func (k *keyPairFile) get() (*tls.Certificate, error) {
	cs, err := stampOf(k.certPath)
	if err != nil {
		return nil, fmt.Errorf("read tls cert file: %w", err)
	}
	ks, err := stampOf(k.keyPath)
	if err != nil {
		return nil, fmt.Errorf("read tls key file: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cert != nil && k.stamps == [2]fileStamp{cs, ks} {
		return k.cert, nil
	}
	c, err := tls.LoadX509KeyPair(k.certPath, k.keyPath)
	if err != nil {
		return nil, fmt.Errorf("load tls client certificate: %w", err)
	}
	k.cert, k.stamps = &c, [2]fileStamp{cs, ks}
	return k.cert, nil
}
