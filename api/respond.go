package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// Error types of Prometheus' API, with the status codes Prometheus maps them
// to (web/api/v1 getDefaultErrorCode).
type errorType struct {
	name string
	code int
}

var (
	errorBadData  = errorType{"bad_data", http.StatusBadRequest}
	errorExec     = errorType{"execution", http.StatusUnprocessableEntity}
	errorCanceled = errorType{"canceled", 499}
	errorTimeout  = errorType{"timeout", http.StatusServiceUnavailable}
	errorInternal = errorType{"internal", http.StatusInternalServerError}
	// Prometheus maps "unavailable" to 500 (no explicit case).
	errorUnavailable = errorType{"unavailable", http.StatusInternalServerError}
)

// errorForContext classifies a failed storage call the way Prometheus does:
// canceled requests get 499, timeouts 503, anything else 422.
func errorForContext(r *http.Request, err error) errorType {
	switch {
	case errors.Is(err, context.Canceled) || r.Context().Err() == context.Canceled:
		return errorCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return errorTimeout
	default:
		return errorExec
	}
}

// respond writes a success envelope encoded exactly as Prometheus' API
// encodes it.
func respond(w http.ResponseWriter, logger *slog.Logger, data any) {
	b, err := v1.JSONCodec{}.Encode(&v1.Response{Status: "success", Data: data})
	if err != nil {
		logger.Error("encode response", "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// respondError writes Prometheus' error envelope and status code.
func respondError(w http.ResponseWriter, logger *slog.Logger, typ errorType, err error) {
	b, encErr := v1.JSONCodec{}.Encode(&v1.Response{Status: "error", ErrorType: typ.name, Error: err.Error()})
	if encErr != nil {
		logger.Error("encode error response", "err", encErr)
		http.Error(w, encErr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(typ.code)
	_, _ = w.Write(b)
}
