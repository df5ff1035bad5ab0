package app

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/ingest/redact"
)

// SecurityOptions are weft's TLS, authentication and cross-site settings
// (docs/security.md).
type SecurityOptions struct {
	// TrustedOrigins may send state-changing requests from browser pages
	// of another origin ("scheme://host[:port]"); the origin of
	// Web.ExternalURL is always trusted.
	TrustedOrigins []string
	// WebConfigFile is a web configuration file in Prometheus'
	// exporter-toolkit format (TLS, client certificates, basic auth
	// users), served on every listener; "" serves plain HTTP without
	// basic auth.
	WebConfigFile string
	// Users binds users of the web configuration file to a tenant and
	// makes them admins; a user not named here is neither.
	Users map[string]UserSettings
	// Tokens are the accepted bearer tokens.
	Tokens []api.BearerToken
	// Redaction are the rules that remove secrets at ingest, on every
	// ingest path; none by default.
	Redaction []redact.Rule
}

// UserSettings are what weft adds to a basic auth user of the web
// configuration file.
type UserSettings struct {
	// Tenant is the only tenant the user acts as; "" for any.
	Tenant string
	// Admin may use the admin endpoints.
	Admin bool
}

// applySecurity loads the web configuration file and fills the API's
// authentication and cross-site options. The returned web configuration
// (nil without a file) gives the listeners their TLS.
func applySecurity(opts Options, aopts *api.Options) (*webConfig, error) {
	var err error
	if aopts.TrustedOrigins, err = trustedOrigins(opts); err != nil {
		return nil, err
	}
	so := opts.Security
	aopts.Redaction.Rules = slices.Clone(so.Redaction)
	aopts.Auth.Tokens = slices.Clone(so.Tokens)
	if so.WebConfigFile == "" {
		if len(so.Users) > 0 {
			return nil, fmt.Errorf("security.users names users but there is no web configuration file (-web.config.file) to hold their passwords")
		}
		return nil, nil
	}
	wc, err := loadWebConfig(so.WebConfigFile)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(so.Users))
	for name := range so.Users {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := wc.users[name]; !ok {
			return nil, fmt.Errorf("security.users: %q is not a user of %s (basic_auth_users)", name, so.WebConfigFile)
		}
	}
	if len(wc.users) > 0 {
		aopts.Auth.Users = map[string]api.User{}
		for name, hash := range wc.users {
			s := so.Users[name]
			aopts.Auth.Users[name] = api.User{PasswordHash: hash, Tenant: s.Tenant, Admin: s.Admin}
		}
	}
	return wc, nil
}

// grpcCreds returns the OTLP gRPC server's TLS option, if any.
func (c *webConfig) grpcCreds() []grpc.ServerOption {
	if c == nil || c.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(c.tls.Clone()))}
}

// trustedOrigins is opts.Security.TrustedOrigins plus the origin of the
// external URL, which the UI is reached under behind a proxy.
func trustedOrigins(opts Options) ([]string, error) {
	out := slices.Clone(opts.Security.TrustedOrigins)
	if opts.Web.ExternalURL != "" {
		u, err := url.Parse(opts.Web.ExternalURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("invalid external URL %q: want scheme://host[/path]", opts.Web.ExternalURL)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return out, nil
}

// serveHTTP serves srv on ln, over TLS when the web configuration has it.
func serveHTTP(srv *http.Server, ln net.Listener, wc *webConfig) error {
	if cfg := wc.serverTLS(srv); cfg != nil {
		srv.TLSConfig = cfg
		return srv.ServeTLS(ln, "", "") // the certificate comes from cfg.GetCertificate
	}
	return srv.Serve(ln)
}
