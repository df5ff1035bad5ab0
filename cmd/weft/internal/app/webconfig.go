package app

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// webConfig is a web configuration file in the format of Prometheus'
// exporter-toolkit (-web.config.file of Prometheus, Alertmanager and the
// exporters), so that a Prometheus user's file works unchanged: TLS with
// optional client certificates, basic auth users with bcrypt hashes, and
// response headers. weft reads it with the toolkit's own types and builds
// the TLS configuration with the toolkit's ConfigToTLSConfig; weft serves
// it on every listener (main HTTP, OTLP HTTP, OTLP gRPC) and authenticates
// the users itself, as the toolkit's Serve knows neither gRPC nor bearer
// tokens.
type webConfig struct {
	// tls is nil when the file configures no TLS.
	tls *tls.Config
	// http2 is http_server_config.http2 (default true).
	http2 bool
	// headers are set on every HTTP answer.
	headers map[string]string
	// users are basic_auth_users: name → bcrypt hash.
	users map[string]string
}

// loadWebConfig reads and validates a web configuration file. Relative
// certificate paths are relative to the file, as in the toolkit.
func loadWebConfig(path string) (*webConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read web config: %w", err)
	}
	// The toolkit's defaults (its getConfig is not exported).
	c := web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)                                             // the toolkit's UnmarshalStrict
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // an empty file: no TLS, no users
		return nil, fmt.Errorf("web config %s: %w", path, err)
	}
	if c.RateLimiterConfig.Interval != 0 || c.RateLimiterConfig.Burst != 0 {
		return nil, fmt.Errorf("web config %s: rate_limit is not supported by weft; use the ingest and query limits (docs/configuration.md)", path)
	}
	out := &webConfig{http2: c.HTTPConfig.HTTP2, headers: c.HTTPConfig.Header, users: map[string]string{}}
	for name := range c.HTTPConfig.Header {
		switch http.CanonicalHeaderKey(name) {
		case "Strict-Transport-Security", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "X-Xss-Protection":
		default:
			return nil, fmt.Errorf("web config %s: http_server_config.headers: %q is not a header the format allows (Strict-Transport-Security, Content-Security-Policy, X-Frame-Options, X-Content-Type-Options, X-XSS-Protection)", path, name)
		}
	}
	for name, hash := range c.Users {
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("web config %s: basic_auth_users: %q: not a bcrypt hash (make one with htpasswd -nBC 10 \"\" or promtool): %w", path, name, err)
		}
		out.users[name] = string(hash)
	}
	if c.TLSConfig.IsEnabled() {
		c.TLSConfig.SetDirectory(filepath.Dir(path))
		cfg, err := web.ConfigToTLSConfig(&c.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("web config %s: tls_server_config: %w", path, err)
		}
		out.tls = cfg
	}
	return out, nil
}

// withHeaders sets the configured headers on every answer of h.
func (c *webConfig) withHeaders(h http.Handler) http.Handler {
	if c == nil || len(c.headers) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range c.headers {
			w.Header().Set(k, v)
		}
		h.ServeHTTP(w, r)
	})
}

// serverTLS returns the TLS configuration for an HTTP server, or nil.
func (c *webConfig) serverTLS(srv *http.Server) *tls.Config {
	if c == nil || c.tls == nil {
		return nil
	}
	if !c.http2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	return c.tls.Clone()
}
