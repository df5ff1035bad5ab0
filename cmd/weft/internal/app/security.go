package app

import (
	"fmt"
	"net/url"
	"slices"
)

// SecurityOptions are weft's TLS, authentication and cross-site settings
// (docs/security.md).
type SecurityOptions struct {
	// TrustedOrigins may send state-changing requests from browser pages
	// of another origin ("scheme://host[:port]"); the origin of
	// Web.ExternalURL is always trusted.
	TrustedOrigins []string
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
