package web

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is sent with every answer: scripts, styles and
// connections only from weft itself (the API and the tail WebSocket), no
// inline script, no framing. index.html's answer adds a fresh nonce to
// style-src (see cspWithNonce): CodeMirror mounts its style sheets as
// <style> elements, which carry that nonce, and nothing else may.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

// noncePlaceholder is where index.html carries its nonce
// (<meta name="csp-nonce" content="...">), for the UI's editor to read.
const noncePlaceholder = "%CSP_NONCE%"

// cspWithNonce is ContentSecurityPolicy with the nonce allowed in style-src.
func cspWithNonce(nonce string) string {
	return strings.Replace(ContentSecurityPolicy, "style-src 'self'", "style-src 'self' 'nonce-"+nonce+"'", 1)
}

// Cache policies: hashed asset names change with their content, so they
// can be cached for good; index.html names the current ones, so browsers
// must revalidate it (its ETag makes that a 304).
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
)

// apiPrefixes are paths of weft's APIs; the UI's single-page fallback never
// answers under them, so a mistyped API URL gets a 404, not HTML.
var apiPrefixes = []string{"/api/", "/loki/", "/otlp/", "/weft/", "/-/", "/debug/", "/metrics", "/ready", "/federate", "/prometheus/", "/v1/"}

var errBasePath = errors.New("web: base path must start and end with /")

// Options configure the handler.
type Options struct {
	// BasePath is the URL path under which browsers reach the UI: "/" or,
	// behind a proxy or with a route prefix, "/weft/" (leading and trailing
	// slash). It is written into index.html's <base href>, which every
	// asset and API URL of the UI is relative to. Default "/".
	BasePath string
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options { return Options{BasePath: "/"} }

// Handler serves the UI. It is safe for concurrent use and holds only the
// embedded files and their lazily built gzip forms.
type Handler struct {
	files map[string]*asset
	index *asset
}

// asset is one file with its headers; gz is built on first use.
type asset struct {
	name, ctype, cache, etag string
	body                     []byte
	compressible             bool
	gzOnce                   sync.Once
	gz                       []byte
}

// New builds the handler over the embedded bundle.
func New(opts Options) (*Handler, error) {
	if opts.BasePath == "" {
		opts.BasePath = DefaultOptions().BasePath
	}
	if !strings.HasPrefix(opts.BasePath, "/") || !strings.HasSuffix(opts.BasePath, "/") {
		return nil, fmt.Errorf("%w: %q", errBasePath, opts.BasePath)
	}
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, fmt.Errorf("open embedded ui: %w", err)
	}
	return newHandler(sub, opts)
}

func newHandler(fsys fs.FS, opts Options) (*Handler, error) {
	h := &Handler{files: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if p == "SOURCES.sha256" {
			return nil // build bookkeeping, not served
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		a := &asset{name: p, body: body, cache: cacheRevalidate}
		if strings.HasPrefix(p, "assets/") {
			a.cache = cacheImmutable
		}
		h.files["/"+p] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded ui: %w", err)
	}
	idx, ok := h.files["/index.html"]
	if !ok {
		return nil, errors.New("web: the embedded bundle has no index.html (run `make web`)")
	}
	base := `<base href="` + htmlEscape(opts.BasePath) + `">`
	idx.body = bytes.Replace(idx.body, []byte(`<base href="/">`), []byte(base), 1)
	h.index = idx
	for _, a := range h.files {
		a.ctype = contentType(a.name)
		a.compressible = compressible(a.ctype)
		sum := sha256.Sum256(a.body)
		a.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
	}
	return h, nil
}

func htmlEscape(s string) string {
	r := strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;")
	return r.Replace(s)
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".txt":
		return "text/plain; charset=utf-8"
	case ".json":
		return "application/json"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.HasPrefix(ctype, "image/svg") || strings.HasPrefix(ctype, "application/json")
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if p == "" {
		p = "/"
	}
	if a, ok := h.files[p]; ok && p != "/index.html" {
		h.serve(w, r, a)
		return
	}
	if p == "/" || p == "/index.html" || h.fallback(p) {
		h.serveIndex(w, r)
		return
	}
	http.NotFound(w, r)
}

// fallback reports whether an unknown path gets index.html: not an API
// path, not an asset (a stale hashed name must 404, not parse HTML as
// JavaScript), not a file name.
func (h *Handler) fallback(p string) bool {
	for _, pre := range apiPrefixes {
		if strings.HasPrefix(p, pre) || p == strings.TrimSuffix(pre, "/") {
			return false
		}
	}
	return !strings.HasPrefix(p, "/assets/") && path.Ext(p) == ""
}

// serveIndex answers index.html with a fresh CSP nonce. It has no
// validator: a cached copy would carry an old nonce.
func (h *Handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read does not fail
	nonce := base64.RawStdEncoding.EncodeToString(raw[:])
	body := bytes.Replace(h.index.body, []byte(noncePlaceholder), []byte(nonce), 1)
	hd := w.Header()
	securityHeaders(hd, cspWithNonce(nonce))
	hd.Set("Content-Type", h.index.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func securityHeaders(hd http.Header, csp string) {
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, a *asset) {
	hd := w.Header()
	securityHeaders(hd, ContentSecurityPolicy)
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", a.cache)
	hd.Set("ETag", a.etag)
	if a.compressible {
		hd.Set("Vary", "Accept-Encoding")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatch(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.compressible && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := a.gzipped(); len(gz) < len(body) {
			body = gz
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// gzipped returns the asset compressed at the best level, built once.
func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level cannot fail
		_, _ = zw.Write(a.body)
		if zw.Close() == nil {
			a.gz = b.Bytes()
		}
	})
	return a.gz
}

// etagMatch reports whether an If-None-Match header names etag (or "*").
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		t = strings.TrimPrefix(t, "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// acceptsGzip reads Accept-Encoding: gzip (or *) with a q-value above 0.
func acceptsGzip(header string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(k, "q") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					f = 0
				}
				q = f
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "gzip", "x-gzip":
			gzipQ = q
		case "*":
			starQ = q
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}
