package main

import (
	"slices"

	"github.com/weftdb/weft/cmd/weft/internal/app"
)

// securityConfig is the security: block of the configuration file: TLS and
// authentication, cross-site writes, redaction at ingest
// (docs/security.md). Flags given win.
type securityConfig struct {
	// TrustedOrigins may send state-changing requests from browser pages
	// of another origin.
	TrustedOrigins *[]string `yaml:"trusted_origins"`
}

// apply copies the block into opts.
func (c *securityConfig) apply(opts *app.Options) error {
	if c.TrustedOrigins != nil {
		opts.Security.TrustedOrigins = slices.Clone(*c.TrustedOrigins)
	}
	return nil
}

// export sets every key of the block from opts.
func (c *securityConfig) export(opts app.Options) {
	c.TrustedOrigins = ptr(append([]string{}, opts.Security.TrustedOrigins...))
}
