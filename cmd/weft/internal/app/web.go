package app

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/web"
)

// WebOptions place weft's routes and its web UI, with Prometheus'
// semantics for -web.route-prefix and -web.external-url.
type WebOptions struct {
	// RoutePrefix moves every route (the APIs, health, /metrics and the
	// UI) under this path. Default: the path of ExternalURL, else "/".
	RoutePrefix string
	// ExternalURL is the URL users reach weft under, for example behind a
	// reverse proxy that strips a path ("http://proxy/weft/"). The UI's
	// links (its <base href>) use its path. Default: none, the UI is
	// reached at RoutePrefix.
	ExternalURL string
}

// paths resolves the route prefix ("/" or "/x", no trailing slash but for
// the root) and the UI's base path ("/" or "/x/").
func (o WebOptions) paths() (prefix, base string, err error) {
	extPath := ""
	if o.ExternalURL != "" {
		u, err := url.Parse(o.ExternalURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return "", "", fmt.Errorf("invalid external URL %q: want scheme://host[/path]", o.ExternalURL)
		}
		extPath = u.Path
	}
	clean := func(p string) string { return "/" + strings.Trim(p, "/") }
	prefix = clean(o.RoutePrefix)
	if o.RoutePrefix == "" {
		prefix = clean(extPath)
	}
	base = prefix
	if o.ExternalURL != "" {
		base = clean(extPath)
	}
	if base != "/" {
		base += "/"
	}
	return prefix, base, nil
}

// newUI builds the web UI's handler for o.
func newUI(o WebOptions) (http.Handler, error) {
	_, base, err := o.paths()
	if err != nil {
		return nil, err
	}
	wo := web.DefaultOptions()
	wo.BasePath = base
	h, err := web.New(wo)
	if err != nil {
		return nil, fmt.Errorf("web ui: %w", err)
	}
	return h, nil
}

// withRoutePrefix puts h under o's route prefix.
func withRoutePrefix(o WebOptions, h http.Handler) (http.Handler, error) {
	prefix, _, err := o.paths()
	if err != nil {
		return nil, err
	}
	return api.WithRoutePrefix(prefix, h)
}
