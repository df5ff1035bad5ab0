package api

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Cross-site request refusal. A web page an operator visits can make the
// browser send requests to weft with the operator's network position and
// credentials: without a CORS preflight, a browser sends a POST whose
// Content-Type is one of the three "CORS-safelisted" types (what an HTML
// form can send) or none at all (fetch with a Blob body). weft refuses what
// such a request could change, in two ways:
//
//   - every state-changing request (a method other than GET, HEAD and
//     OPTIONS) outside the read-only endpoints goes through Go's
//     http.CrossOriginProtection: a browser's Sec-Fetch-Site (or, from
//     older browsers, Origin against Host) must say same-origin. Clients
//     that are not browsers send neither header and pass.
//   - ingest endpoints, whose body is data, take only a Content-Type a
//     browser cannot send cross-site without a preflight (what every real
//     client sends: application/x-protobuf, application/json, ...): a
//     missing one or a safelisted one answers 415.
//
//   - a WebSocket handshake (Loki's live tail) is a GET, but a browser
//     opens one to any site and lets the page read what comes back, CORS
//     or not: it gets the same origin check as a state-changing request,
//     so another site's page cannot tail an operator's logs.
//
// Read-only endpoints that Prometheus and Loki take as form POSTs
// (/api/v1/query and friends) keep working from anywhere: what a browser
// may read back is CORS' business, and CORS is off unless configured.

// crossSitePolicy is what a state-changing request to a path must pass.
type crossSitePolicy uint8

const (
	// policyNone: read-only; nothing to check.
	policyNone crossSitePolicy = iota
	// policyOrigin: the request must not come from another site.
	policyOrigin
	// policyIngest: policyOrigin, and a Content-Type no form can send.
	policyIngest
	// policyWebSocket: a WebSocket handshake must not come from another
	// site either.
	policyWebSocket
)

// webSocketHandshake reports whether r asks to upgrade to a WebSocket.
func webSocketHandshake(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// readOnlyPaths are endpoints that take POST (form-encoded parameters, or
// remote read's protobuf) without changing anything.
var readOnlyPaths = map[string]bool{
	"/api/v1/query":                   true,
	"/api/v1/query_range":             true,
	"/api/v1/query_exemplars":         true,
	"/api/v1/series":                  true,
	"/api/v1/labels":                  true,
	"/api/v1/format_query":            true,
	"/api/v1/parse_query":             true,
	"/api/v1/read":                    true,
	"/api/v1/export":                  true,
	"/loki/api/v1/query":              true,
	"/loki/api/v1/query_range":        true,
	"/loki/api/v1/labels":             true,
	"/loki/api/v1/label":              true,
	"/loki/api/v1/series":             true,
	"/loki/api/v1/index/stats":        true,
	"/loki/api/v1/index/volume":       true,
	"/loki/api/v1/index/volume_range": true,
	"/loki/api/v1/detected_fields":    true,
	"/loki/api/v1/detected_labels":    true,
	"/loki/api/v1/patterns":           true,
	"/loki/api/v1/format_query":       true,
	"/loki/api/v1/status/buildinfo":   true,
	"/weft/api/v1/cardinality":        true,
	"/api/v1/status/tsdb":             true,
	"/api/v1/metadata":                true,
	"/api/v1/targets/metadata":        true,
}

// ingestPaths are the endpoints whose body is data to store. Not
// /api/v1/import: VictoriaMetrics' documented client is
// "curl --data-binary @file", which sends a form content type; it gets the
// origin check only.
var ingestPaths = map[string]bool{
	"/api/v1/write":           true,
	"/loki/api/v1/push":       true,
	"/otlp/v1/metrics":        true,
	"/otlp/v1/logs":           true,
	"/otlp/v1/traces":         true,
	"/api/v1/otlp/v1/metrics": true,
	"/v1/metrics":             true, // the OTLP HTTP port
	"/v1/logs":                true,
	"/v1/traces":              true,
}

// policyFor classifies a request. Anything not known to be read-only is
// treated as state-changing, so a new write endpoint is protected by
// default.
func policyFor(r *http.Request) crossSitePolicy {
	switch {
	case webSocketHandshake(r):
		return policyWebSocket
	case r.Method == http.MethodGet, r.Method == http.MethodHead, r.Method == http.MethodOptions:
		return policyNone
	}
	p := r.URL.Path
	switch {
	case ingestPaths[p]:
		return policyIngest
	case readOnlyPaths[p]:
		return policyNone
	}
	return policyOrigin
}

// browserSimpleContentType reports whether a browser sends ct cross-site
// without a CORS preflight: no Content-Type at all, or one of the
// CORS-safelisted ones (the Fetch standard's list).
func browserSimpleContentType(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		// A browser only sends what it can parse as one of the three
		// without a preflight; an unparsable type is refused by the
		// endpoint itself.
		return false
	}
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}

// crossSiteGuard wraps h with the checks of the policy of every request.
type crossSiteGuard struct {
	h   http.Handler
	cop *http.CrossOriginProtection
}

// newCrossSiteGuard returns h guarded against cross-site writes.
// trustedOrigins ("scheme://host[:port]") may write from a browser too (the
// origin of -web.external-url, a proxy in front of weft).
func newCrossSiteGuard(h http.Handler, trustedOrigins []string) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range trustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("trusted origin %q: %w", o, err)
		}
	}
	return &crossSiteGuard{h: h, cop: cop}, nil
}

func (g *crossSiteGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pol := policyFor(r)
	if pol == policyNone {
		g.h.ServeHTTP(w, r)
		return
	}
	checked := r
	if pol == policyWebSocket {
		// CrossOriginProtection passes every GET; judge the handshake as
		// the state-changing request it is (only the method differs).
		checked = r.Clone(r.Context())
		checked.Method = http.MethodPost
	}
	if err := g.cop.Check(checked); err != nil {
		what := " changes data"
		if pol == policyWebSocket {
			what = " is a WebSocket whose messages the page could read"
		}
		http.Error(w, "cross-site request refused: "+r.Method+" "+r.URL.Path+what+
			" and the browser says this request comes from another site (Sec-Fetch-Site / Origin); "+
			"send it from a non-browser client, or add the site's origin to http.trusted_origins", http.StatusForbidden)
		return
	}
	if pol == policyIngest && browserSimpleContentType(r.Header.Get("Content-Type")) {
		ct := r.Header.Get("Content-Type")
		if ct == "" {
			ct = "none"
		} else {
			ct = fmt.Sprintf("%q", ct)
		}
		http.Error(w, "unsupported content type "+ct+" for "+r.URL.Path+
			": ingest endpoints take only a Content-Type a web form cannot send (application/x-protobuf, application/json, ...)",
			http.StatusUnsupportedMediaType)
		return
	}
	g.h.ServeHTTP(w, r)
}
