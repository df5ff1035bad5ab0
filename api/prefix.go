package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

var errRoutePrefix = errors.New("route prefix must start with /")

// WithRoutePrefix serves h under prefix, as Prometheus' -web.route-prefix
// does: every route (the APIs, health, /metrics and the UI) moves under it,
// "/" and the bare prefix redirect to prefix + "/", and other paths are 404.
// A prefix of "" or "/" returns h itself. The returned handler is safe for
// concurrent use when h is.
func WithRoutePrefix(prefix string, h http.Handler) (http.Handler, error) {
	if prefix == "" || prefix == "/" {
		return h, nil
	}
	if !strings.HasPrefix(prefix, "/") {
		return nil, fmt.Errorf("%w: %q", errRoutePrefix, prefix)
	}
	prefix = strings.TrimRight(prefix, "/")
	strip := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/" || p == prefix:
			http.Redirect(w, r, prefix+"/", http.StatusFound)
		case strings.HasPrefix(p, prefix+"/"):
			strip.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}), nil
}
