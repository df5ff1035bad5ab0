package api

import (
	"bytes"
	"io"
	"net/http"

	"github.com/prometheus/prometheus/storage/remote"
)

// remoteReadMaxBody is what Prometheus' remote-read handler reads of a
// body (its decodeReadLimit); a longer body is cut there, as in Prometheus.
const remoteReadMaxBody = 32 << 20

// remoteReadGuard answers a remote-read request whose label matchers do
// not compile (a bad regular expression, an unknown matcher type) with 400
// and the reason, before Prometheus' handler answers it with 500 (found by
// FuzzRemoteRead). Other requests, and bodies that do not decode (which
// Prometheus answers 400 itself), pass on unchanged. It reads the body
// within a gate of Prometheus' remote-read concurrency, so that bodies
// waiting for Prometheus' own gate are not held in memory; a request that
// goes away while it waits gets 503.
func remoteReadGuard(h http.Handler) http.Handler {
	gate := make(chan struct{}, remoteReadConcurrency)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/read" {
			h.ServeHTTP(w, r)
			return
		}
		select {
		case gate <- struct{}{}:
			defer func() { <-gate }()
		case <-r.Context().Done():
			http.Error(w, "remote read: too many concurrent requests", http.StatusServiceUnavailable)
			return
		}
		raw, err := io.ReadAll(io.LimitReader(r.Body, remoteReadMaxBody))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if req, err := remote.DecodeReadRequest(r); err == nil {
			for _, q := range req.Queries {
				if _, err := remote.FromLabelMatchers(q.Matchers); err != nil {
					http.Error(w, "invalid matcher: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		h.ServeHTTP(w, r)
	})
}
