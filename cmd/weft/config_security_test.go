package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecurityConfig: the security block's keys reach the options, tokens
// as hashes only, and the effective configuration shows no token hash.
func TestSecurityConfig(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "ci.token")
	if err := os.WriteFile(tokFile, []byte("a-long-enough-token-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("other-token-0123456789"))
	cfg := filepath.Join(dir, "weft.yml")
	if err := os.WriteFile(cfg, []byte(`
security:
  trusted_origins: [https://grafana.example.com]
  web_config_file: `+filepath.Join(dir, "web.yml")+`
  users:
    alice: {tenant: team-a}
    ops: {admin: true}
  bearer_tokens:
    - name: ci
      token_file: `+tokFile+`
      tenant: team-a
      expires: 2027-01-01T00:00:00Z
    - name: admin
      token_sha256: `+hex.EncodeToString(sum[:])+`
      admin: true
  redaction:
    - builtin: email
    - name: card
      regex: '4111-\d{4}'
      targets: [log_lines]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	opts, err := parseFlags([]string{"-config", cfg, "-web.cors.origin", "https://grafana\\.example\\.com"}, &stderr)
	if err != nil {
		t.Fatalf("%v (%s)", err, stderr.String())
	}
	so := opts.Security
	if so.WebConfigFile != filepath.Join(dir, "web.yml") || len(so.TrustedOrigins) != 1 || !so.Users["ops"].Admin || so.Users["alice"].Tenant != "team-a" {
		t.Fatalf("security options: %+v", so)
	}
	if opts.CORSOrigin != `https://grafana\.example\.com` {
		t.Fatalf("cors origin %q", opts.CORSOrigin)
	}
	if len(so.Tokens) != 2 || so.Tokens[0].SHA256 != sha256.Sum256([]byte("a-long-enough-token-value")) ||
		so.Tokens[0].Tenant != "team-a" || !so.Tokens[0].Expires.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) ||
		so.Tokens[1].SHA256 != sum || !so.Tokens[1].Admin {
		t.Fatalf("tokens: %+v", so.Tokens)
	}
	if r := so.Redaction; len(r) != 2 || r[0].Builtin != "email" || r[1].Regex != `4111-\d{4}` || len(r[1].Targets) != 1 {
		t.Fatalf("redaction: %+v", r)
	}
	if strings.Contains(opts.ConfigYAML, hex.EncodeToString(sum[:])) || !strings.Contains(opts.ConfigYAML, "name: ci") {
		t.Fatalf("effective configuration:\n%s", opts.ConfigYAML)
	}

	for name, bad := range map[string]string{
		"no name":   "  bearer_tokens: [{token_sha256: " + hex.EncodeToString(sum[:]) + "}]",
		"both":      "  bearer_tokens: [{name: x, token_file: " + tokFile + ", token_sha256: " + hex.EncodeToString(sum[:]) + "}]",
		"bad hash":  "  bearer_tokens: [{name: x, token_sha256: abc}]",
		"no file":   "  bearer_tokens: [{name: x, token_file: /nonexistent}]",
		"short tok": "  bearer_tokens: [{name: x, token_file: " + writeShort(t, dir) + "}]",
		"unknown":   "  bearer_token: []",
		"bad rule":  "  redaction: [{builtin: ssn}]",
	} {
		p := filepath.Join(dir, "bad.yml")
		if err := os.WriteFile(p, []byte("security:\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseFlags([]string{"-config", p}, &stderr); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func writeShort(t *testing.T, dir string) string {
	p := filepath.Join(dir, "short.token")
	if err := os.WriteFile(p, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
