package api

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func testAuthenticator(t *testing.T, now time.Time) *authenticator {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAuthenticator(AuthOptions{
		Users: map[string]User{"alice": {PasswordHash: string(hash), Tenant: "team-a"}, "root": {PasswordHash: string(hash), Admin: true}},
		Tokens: []BearerToken{
			{Name: "b", SHA256: sha256.Sum256([]byte("tok-b")), Tenant: "team-b", Expires: now.Add(time.Minute)},
			{Name: "gone", SHA256: sha256.Sum256([]byte("tok-gone")), Expires: now},
		},
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAuthSetsTenantHeader: the seam with tenancy. Handlers see the
// tenant of the credential in X-Scope-OrgID whatever the client sent (or
// did not send), never the Authorization header, and a client naming
// another tenant is refused before any handler runs.
func TestAuthSetsTenantHeader(t *testing.T) {
	a := testAuthenticator(t, time.Now())
	var seen http.Header
	var seenID Identity
	h := a.wrapHTTP(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		seenID, _ = IdentityFrom(r.Context())
	}))
	for _, tc := range []struct {
		name, authz, tenant string
		want                int
		wantTenant          string
	}{
		{"token without header", "Bearer tok-b", "", 200, "team-b"},
		{"token with its tenant", "Bearer tok-b", "team-b", 200, "team-b"},
		{"token with another tenant", "Bearer tok-b", "team-a", 403, ""},
		{"token with a federation of tenants", "Bearer tok-b", "team-a|team-b", 403, ""},
		{"user bound to a tenant", "Basic " + basic("alice", "pw"), "", 200, "team-a"},
		{"admin without tenant keeps the header", "Basic " + basic("root", "pw"), "team-z", 200, "team-z"},
		{"expired token", "Bearer tok-gone", "", 401, ""},
		{"wrong password", "Basic " + basic("alice", "pw2"), "", 401, ""},
		{"unknown scheme", "Digest x", "", 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			r := httptest.NewRequest("GET", "/api/v1/query", nil)
			r.Header.Set("Authorization", tc.authz)
			if tc.tenant != "" {
				r.Header.Set(TenantHeader, tc.tenant)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want != 200 {
				if seen != nil {
					t.Fatal("the handler ran for a refused request")
				}
				return
			}
			if got := seen.Get(TenantHeader); got != tc.wantTenant {
				t.Errorf("handler saw tenant %q, want %q", got, tc.wantTenant)
			}
			if seen.Get("Authorization") != "" {
				t.Error("handler saw the Authorization header")
			}
			if seenID.Name == "" {
				t.Error("no identity in the request context")
			}
		})
	}
}

func basic(user, pass string) string {
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, pass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// TestAuthGRPCTenantMetadata: the same seam for gRPC metadata.
func TestAuthGRPCTenantMetadata(t *testing.T) {
	a := testAuthenticator(t, time.Now())
	call := func(kv ...string) (metadata.MD, codes.Code) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(kv...))
		ctx, err := a.grpcContext(ctx)
		if err != nil {
			return nil, status.Code(err)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		return md, codes.OK
	}
	md, c := call("authorization", "Bearer tok-b")
	if c != codes.OK || strings.Join(md.Get(tenantMetadata), ",") != "team-b" || len(md.Get("authorization")) != 0 {
		t.Fatalf("token: %v %v", c, md)
	}
	md, c = call("authorization", "Bearer tok-b", "x-scope-orgid", "team-b")
	if c != codes.OK || strings.Join(md.Get(tenantMetadata), ",") != "team-b" {
		t.Fatalf("token with its tenant: %v %v", c, md)
	}
	if _, c = call("authorization", "Bearer tok-b", "x-scope-orgid", "team-a"); c != codes.PermissionDenied {
		t.Fatalf("token with another tenant: %v", c)
	}
	if _, c = call("authorization", "Bearer tok-gone"); c != codes.Unauthenticated {
		t.Fatalf("expired token: %v", c)
	}
	if _, c = call(); c != codes.Unauthenticated {
		t.Fatalf("no credentials: %v", c)
	}
}

// TestAuthAdminPaths: admin endpoints need an admin identity; probes need
// no credentials.
func TestAuthAdminPaths(t *testing.T) {
	a := testAuthenticator(t, time.Now())
	h := a.wrapHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	for _, tc := range []struct {
		path, authz string
		want        int
	}{
		{"/debug/pprof/heap", "Basic " + basic("alice", "pw"), 403},
		{"/debug/pprof/heap", "Basic " + basic("root", "pw"), 204},
		{"/api/v1/admin/tsdb/delete_series", "Bearer tok-b", 403},
		{"/-/reload", "Basic " + basic("alice", "pw"), 403},
		{"/loki/api/v1/delete", "Bearer tok-b", 403},
		{"/-/healthy", "", 204},
		{"/-/ready", "", 204},
		{"/metrics", "", 401},
		{"/", "", 401},
	} {
		r := httptest.NewRequest("POST", tc.path, nil)
		if tc.authz != "" {
			r.Header.Set("Authorization", tc.authz)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s (%s): %d, want %d: %s", tc.path, tc.authz, w.Code, tc.want, w.Body)
		}
	}
}

// TestAuthOff: no users and no tokens is no authentication.
func TestAuthOff(t *testing.T) {
	a, err := newAuthenticator(AuthOptions{})
	if err != nil || a != nil {
		t.Fatalf("%v %v", a, err)
	}
	h := a.wrapHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/", nil))
	if w.Code != 204 {
		t.Fatal(w.Code)
	}
	if _, err := newAuthenticator(AuthOptions{Users: map[string]User{"x": {PasswordHash: "plain"}}}); err == nil {
		t.Fatal("a plaintext password was accepted as a hash")
	}
}
