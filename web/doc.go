// Package web is weft's built-in web UI: its sources (src/, built with npm
// and esbuild, see README.md), the built bundle committed under dist/ and
// embedded into the binary, and the http.Handler that serves it at the
// server's root, so that `go build ./cmd/weft` alone gives a working UI.
//
// The handler serves index.html (with <base href> set to the path browsers
// reach weft under) for the root and for unknown non-API paths (the UI
// routes in the URL fragment, so those are only old or hand-typed links),
// hashed assets with an immutable Cache-Control, gzip when the client
// accepts it (compressed once, on first request), and a strict
// Content-Security-Policy. It never answers API paths: those are 404 here.
package web
