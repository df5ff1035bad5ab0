package api

import (
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
)

// DefaultMaxFormBytes bounds the form body of a query request: the size
// Go's Request.ParseForm silently applies (10 MiB), made explicit. Beyond
// it ParseForm drops the whole form, so a 12 MB POST query answered "no
// expression found in input" instead of naming the limit (issue 14).
const DefaultMaxFormBytes = 10 << 20

// formErrorWriter answers a form that could not be read: code is 413 for a
// body over the limit, 400 for a malformed one.
type formErrorWriter func(w http.ResponseWriter, code int, err error)

// limitForm returns h behind a bound on form bodies: a POST, PUT or PATCH
// with a urlencoded or multipart body is read here (at most maxBytes, all
// in memory) and answered by bad with 413 when larger, or 400 when it does
// not parse, before h sees it. Handlers then find the parsed form in
// r.Form. Other bodies (remote read, pushes) pass untouched.
func limitForm(h http.Handler, maxBytes int64, bad formErrorWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
		default:
			h.ServeHTTP(w, r)
			return
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		var err error
		switch ct {
		case "application/x-www-form-urlencoded":
			r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
			err = r.ParseForm()
		case "multipart/form-data":
			r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
			err = r.ParseMultipartForm(maxBytes)
		default:
			h.ServeHTTP(w, r)
			return
		}
		if err != nil {
			if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
				bad(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body too large: a query's form may be at most %d bytes", mbe.Limit))
				return
			}
			bad(w, http.StatusBadRequest, fmt.Errorf("parse form: %w", err))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LimitPrometheusForm is limitForm for the Prometheus API: the error is
// its JSON envelope with errorType bad_data (Prometheus has no type of its
// own for 413).
func LimitPrometheusForm(h http.Handler, maxBytes int64) http.Handler {
	discard := slog.New(slog.DiscardHandler)
	return limitForm(h, maxBytes, func(w http.ResponseWriter, code int, err error) {
		respondError(w, discard, errorType{errorBadData.name, code}, err)
	})
}

// LimitLokiForm is limitForm for the Loki API: a plain-text error, as Loki
// answers.
func LimitLokiForm(h http.Handler, maxBytes int64) http.Handler {
	return limitForm(h, maxBytes, func(w http.ResponseWriter, code int, err error) {
		lokiError(w, code, err.Error())
	})
}
