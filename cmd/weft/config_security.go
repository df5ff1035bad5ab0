package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/cmd/weft/internal/app"
	"github.com/weftdb/weft/ingest/redact"
)

// securityConfig is the security: block of the configuration file: TLS and
// authentication, cross-site writes, redaction at ingest
// (docs/security.md). Flags given win.
type securityConfig struct {
	// TrustedOrigins may send state-changing requests from browser pages
	// of another origin.
	TrustedOrigins *[]string `yaml:"trusted_origins"`
	// WebConfigFile is -web.config.file: TLS and basic auth users in
	// Prometheus' exporter-toolkit format.
	WebConfigFile *string `yaml:"web_config_file"`
	// Users binds users of the web configuration file to a tenant and
	// makes them admins.
	Users *map[string]userConfig `yaml:"users"`
	// BearerTokens are the accepted bearer tokens.
	BearerTokens *[]tokenConfig `yaml:"bearer_tokens"`
	// Redaction are the rules that remove secrets at ingest.
	Redaction *[]redactionRule `yaml:"redaction"`
}

// redactionRule is one entry of security.redaction (ingest/redact.Rule).
type redactionRule struct {
	Name        string   `yaml:"name,omitempty"`
	Builtin     string   `yaml:"builtin,omitempty"`
	Regex       string   `yaml:"regex,omitempty"`
	Replacement string   `yaml:"replacement,omitempty"`
	Targets     []string `yaml:"targets,omitempty"`
}

// userConfig is one entry of security.users.
type userConfig struct {
	Tenant string `yaml:"tenant,omitempty"`
	Admin  bool   `yaml:"admin,omitempty"`
}

// tokenConfig is one entry of security.bearer_tokens: the token itself is
// never in the file, only its SHA-256 or the path of a file holding it.
type tokenConfig struct {
	Name        string `yaml:"name"`
	TokenSHA256 string `yaml:"token_sha256,omitempty"`
	TokenFile   string `yaml:"token_file,omitempty"`
	Tenant      string `yaml:"tenant,omitempty"`
	Expires     string `yaml:"expires,omitempty"` // RFC 3339
	Admin       bool   `yaml:"admin,omitempty"`
}

// apply copies the block into opts; relative paths are relative to the
// working directory, as the flags' are.
func (c *securityConfig) apply(opts *app.Options) error {
	so := &opts.Security
	if c.TrustedOrigins != nil {
		so.TrustedOrigins = slices.Clone(*c.TrustedOrigins)
	}
	if c.WebConfigFile != nil {
		so.WebConfigFile = *c.WebConfigFile
	}
	if c.Users != nil {
		so.Users = map[string]app.UserSettings{}
		for name, u := range *c.Users {
			so.Users[name] = app.UserSettings{Tenant: u.Tenant, Admin: u.Admin}
		}
	}
	if c.Redaction != nil {
		so.Redaction = nil
		for _, r := range *c.Redaction {
			rule := redact.Rule{Name: r.Name, Builtin: r.Builtin, Regex: r.Regex, Replacement: r.Replacement}
			for _, t := range r.Targets {
				rule.Targets = append(rule.Targets, redact.Target(t))
			}
			so.Redaction = append(so.Redaction, rule)
		}
		if _, err := redact.New(redact.Options{Rules: so.Redaction}); err != nil {
			return fmt.Errorf("redaction: %w", err)
		}
	}
	if c.BearerTokens != nil {
		so.Tokens = nil
		for i, t := range *c.BearerTokens {
			tok, err := t.token()
			if err != nil {
				return fmt.Errorf("bearer_tokens[%d] (%q): %w", i, t.Name, err)
			}
			so.Tokens = append(so.Tokens, tok)
		}
	}
	return nil
}

// token resolves one configured token.
func (t tokenConfig) token() (api.BearerToken, error) {
	out := api.BearerToken{Name: t.Name, Tenant: t.Tenant, Admin: t.Admin}
	if t.Expires != "" {
		exp, err := time.Parse(time.RFC3339, t.Expires)
		if err != nil {
			return out, fmt.Errorf("expires: want an RFC 3339 time (2027-01-01T00:00:00Z): %w", err)
		}
		out.Expires = exp
	}
	if t.Name == "" {
		return out, fmt.Errorf("name is required (it names the token in logs and errors)")
	}
	switch {
	case (t.TokenSHA256 == "") == (t.TokenFile == ""):
		return out, fmt.Errorf("exactly one of token_sha256 and token_file is required")
	case t.TokenFile != "":
		b, err := os.ReadFile(t.TokenFile)
		if err != nil {
			return out, fmt.Errorf("read token_file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 {
			return out, fmt.Errorf("token_file %s: a token needs at least 16 characters", t.TokenFile)
		}
		out.SHA256 = sha256.Sum256([]byte(tok))
	default:
		h, err := hex.DecodeString(t.TokenSHA256)
		if err != nil || len(h) != sha256.Size {
			return out, fmt.Errorf("token_sha256: want 64 hex digits, the SHA-256 of the token (printf %%s TOKEN | sha256sum)")
		}
		copy(out.SHA256[:], h)
	}
	return out, nil
}

// export sets every key of the block from opts. Tokens come out by name,
// tenant, expiry and role only: their hashes are secrets too.
func (c *securityConfig) export(opts app.Options) {
	so := opts.Security
	c.TrustedOrigins = ptr(append([]string{}, so.TrustedOrigins...))
	c.WebConfigFile = ptr(so.WebConfigFile)
	users := map[string]userConfig{}
	for _, name := range slices.Sorted(maps.Keys(so.Users)) {
		u := so.Users[name]
		users[name] = userConfig{Tenant: u.Tenant, Admin: u.Admin}
	}
	c.Users = &users
	tokens := []tokenConfig{}
	for _, t := range so.Tokens {
		tc := tokenConfig{Name: t.Name, TokenSHA256: secretPlaceholder, Tenant: t.Tenant, Admin: t.Admin}
		if !t.Expires.IsZero() {
			tc.Expires = t.Expires.UTC().Format(time.RFC3339)
		}
		tokens = append(tokens, tc)
	}
	c.BearerTokens = &tokens
	rules := []redactionRule{}
	for _, r := range so.Redaction {
		rr := redactionRule{Name: r.Name, Builtin: r.Builtin, Regex: r.Regex, Replacement: r.Replacement}
		for _, t := range r.Targets {
			rr.Targets = append(rr.Targets, string(t))
		}
		rules = append(rules, rr)
	}
	c.Redaction = &rules
}
