package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Authentication of every listener (docs/security.md): HTTP basic auth
// against bcrypt hashes (the users of a Prometheus web configuration file)
// and bearer tokens, on the main port, the OTLP HTTP port and the OTLP gRPC
// server alike. A credential may name a tenant: weft then sets the tenant
// header (X-Scope-OrgID, gRPC metadata x-scope-orgid) itself before any
// handler runs, and refuses a request whose own header names another
// tenant, so a client cannot claim another tenant's data.

// TenantHeader is the tenant header of Mimir, Loki and Tempo.
const TenantHeader = "X-Scope-OrgID"

// tenantMetadata is TenantHeader as gRPC metadata (lower case).
const tenantMetadata = "x-scope-orgid"

// AuthOptions configures authentication. With no users and no tokens
// authentication is off: every request is served as today, as an admin.
type AuthOptions struct {
	// Users are the HTTP basic auth users: name → settings with the
	// bcrypt hash of the password.
	Users map[string]User
	// Tokens are the bearer tokens ("Authorization: Bearer <token>").
	Tokens []BearerToken
	// Now is the clock tokens expire by; default time.Now.
	Now func() time.Time
}

// User is one basic auth user.
type User struct {
	// PasswordHash is the bcrypt hash of the password (required).
	PasswordHash string
	// Tenant, when set, is the only tenant the user acts as.
	Tenant string
	// Admin may use the admin endpoints (admin APIs, /-/reload,
	// /debug/pprof, Loki's delete API).
	Admin bool
}

// BearerToken is one accepted bearer token, kept as its SHA-256 only.
type BearerToken struct {
	// Name identifies the token in logs and errors (never the token).
	Name string
	// SHA256 is the SHA-256 of the token.
	SHA256 [sha256.Size]byte
	// Tenant, when set, is the only tenant the token acts as.
	Tenant string
	// Expires, when not zero, is when the token stops being accepted.
	Expires time.Time
	// Admin may use the admin endpoints.
	Admin bool
}

// Identity is who a request was authenticated as.
type Identity struct {
	// Name is the user's or the token's name; "" when authentication is
	// off.
	Name string
	// Tenant is the tenant the credential is bound to; "" for none.
	Tenant string
	// Admin may use the admin endpoints.
	Admin bool
}

type identityKey struct{}

// IdentityFrom returns the identity the request of ctx was authenticated
// as, and whether there is one (false when authentication is off).
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Authentication errors; each answer says which one.
var (
	errNoCredentials  = errors.New("authentication required: send HTTP basic auth or Authorization: Bearer <token>")
	errBadCredentials = errors.New("invalid credentials")
	errTokenExpired   = errors.New("bearer token expired")
)

// authenticator checks credentials. Safe for concurrent use.
type authenticator struct {
	users  map[string]User
	tokens map[[sha256.Size]byte]BearerToken
	now    func() time.Time

	// cache remembers bcrypt results (bcrypt costs tens of milliseconds
	// by design; clients send the same credentials on every request),
	// keyed by the SHA-256 of user, password and hash.
	mu    sync.Mutex
	cache map[[sha256.Size]byte]bool
}

// maxAuthCache bounds the bcrypt result cache; it is emptied when full.
const maxAuthCache = 4096

// dummyHash is compared against for unknown users, so that answering
// an unknown user takes as long as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("weft-no-such-user"), bcrypt.DefaultCost)

// newAuthenticator returns nil when opts configure no credentials.
func newAuthenticator(opts AuthOptions) (*authenticator, error) {
	if len(opts.Users) == 0 && len(opts.Tokens) == 0 {
		return nil, nil
	}
	a := &authenticator{users: opts.Users, tokens: map[[sha256.Size]byte]BearerToken{}, now: opts.Now, cache: map[[sha256.Size]byte]bool{}}
	if a.now == nil {
		a.now = time.Now
	}
	for name, u := range opts.Users {
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			return nil, fmt.Errorf("user %q: password hash is not a bcrypt hash: %w", name, err)
		}
	}
	for _, t := range opts.Tokens {
		if _, dup := a.tokens[t.SHA256]; dup {
			return nil, fmt.Errorf("token %q: the same token is configured twice", t.Name)
		}
		a.tokens[t.SHA256] = t
	}
	return a, nil
}

// authenticate checks an Authorization header value.
func (a *authenticator) authenticate(authz string) (Identity, error) {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(authz), " ")
	cred = strings.TrimSpace(cred)
	switch {
	case authz == "":
		return Identity{}, errNoCredentials
	case strings.EqualFold(scheme, "Bearer"):
		t, ok := a.tokens[sha256.Sum256([]byte(cred))]
		if !ok {
			return Identity{}, errBadCredentials
		}
		if !t.Expires.IsZero() && !a.now().Before(t.Expires) {
			return Identity{}, fmt.Errorf("%w: token %q expired at %s", errTokenExpired, t.Name, t.Expires.UTC().Format(time.RFC3339))
		}
		return Identity{Name: t.Name, Tenant: t.Tenant, Admin: t.Admin}, nil
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return Identity{}, errBadCredentials
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return Identity{}, errBadCredentials
		}
		u, known := a.users[user]
		hash := dummyHash
		if known {
			hash = []byte(u.PasswordHash)
		}
		if !a.checkPassword(user, pass, hash) || !known {
			return Identity{}, errBadCredentials
		}
		return Identity{Name: user, Tenant: u.Tenant, Admin: u.Admin}, nil
	}
	return Identity{}, fmt.Errorf("%w: unsupported authorization scheme %q, want Basic or Bearer", errBadCredentials, scheme)
}

// checkPassword compares pass with a bcrypt hash, through the cache.
func (a *authenticator) checkPassword(user, pass string, hash []byte) bool {
	h := sha256.New()
	for _, s := range [][]byte{[]byte(user), {0}, []byte(pass), {0}, hash} {
		h.Write(s)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	a.mu.Lock()
	ok, hit := a.cache[key]
	a.mu.Unlock()
	if hit {
		return ok
	}
	ok = bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil
	a.mu.Lock()
	if len(a.cache) >= maxAuthCache {
		clear(a.cache)
	}
	a.cache[key] = ok
	a.mu.Unlock()
	return ok
}

// checkTenant compares the tenant a request names with the identity's:
// an identity bound to a tenant acts only as that tenant.
func checkTenant(id Identity, claimed string) error {
	if id.Tenant == "" || claimed == "" || claimed == id.Tenant {
		return nil
	}
	return fmt.Errorf("the credentials of %q act as tenant %q only; this request names tenant %q in %s", id.Name, id.Tenant, claimed, TenantHeader)
}

// adminPath reports whether an HTTP path needs an admin identity.
func adminPath(p string) bool {
	return strings.HasPrefix(p, "/api/v1/admin/") || p == "/-/reload" ||
		strings.HasPrefix(p, "/debug/pprof") || p == "/loki/api/v1/delete"
}

// unauthenticatedPath reports whether a path answers without credentials:
// the health and readiness probes, which disclose nothing.
func unauthenticatedPath(p string) bool {
	return p == "/-/healthy" || p == "/-/ready" || p == "/ready"
}

// authHandler authenticates every request before h.
type authHandler struct {
	a     *authenticator
	h     http.Handler
	basic bool // answer 401 with a Basic challenge (browsers then ask)
}

func (s *authHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if unauthenticatedPath(r.URL.Path) {
		s.h.ServeHTTP(w, r)
		return
	}
	id, err := s.a.authenticate(r.Header.Get("Authorization"))
	if err != nil {
		if s.basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="weft", charset="UTF-8"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
		}
		http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if adminPath(r.URL.Path) && !id.Admin {
		http.Error(w, fmt.Sprintf("forbidden: %s needs an admin identity and %q is not one (docs/security.md)", r.URL.Path, id.Name), http.StatusForbidden)
		return
	}
	if id.Tenant != "" {
		if err := checkTenant(id, r.Header.Get(TenantHeader)); err != nil {
			http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		r.Header.Set(TenantHeader, id.Tenant)
	}
	r.Header.Del("Authorization") // nothing after this needs the secret
	s.h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
}

// wrapHTTP returns h behind authentication, or h when it is off.
func (a *authenticator) wrapHTTP(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return &authHandler{a: a, h: h, basic: len(a.users) > 0}
}

// grpcContext authenticates a gRPC call from its metadata and returns the
// context the handler runs with: the tenant metadata set from the identity.
func (a *authenticator) grpcContext(ctx context.Context) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var authz string
	if v := md.Get("authorization"); len(v) > 0 {
		authz = v[0]
	}
	id, err := a.authenticate(authz)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, "unauthorized: "+err.Error())
	}
	md = md.Copy()
	if id.Tenant != "" {
		var claimed string
		if v := md.Get(tenantMetadata); len(v) > 0 {
			claimed = v[0]
		}
		if err := checkTenant(id, claimed); err != nil {
			return nil, status.Error(codes.PermissionDenied, "forbidden: "+err.Error())
		}
		md.Set(tenantMetadata, id.Tenant)
	}
	md.Delete("authorization")
	return context.WithValue(metadata.NewIncomingContext(ctx, md), identityKey{}, id), nil
}

// grpcUnary authenticates unary calls.
func (a *authenticator) grpcUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := a.grpcContext(ctx)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// grpcStream authenticates streaming calls.
func (a *authenticator) grpcStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := a.grpcContext(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, &authedStream{ServerStream: ss, ctx: ctx})
}

// authedStream is a server stream with the authenticated context.
type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *authedStream) Context() context.Context { return s.ctx }
