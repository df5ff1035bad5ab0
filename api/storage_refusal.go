package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/weftdb/weft/storage"
)

// Storage refusals: a write the store did not take for a condition that
// passes. Every ingest path answers them the same way, here:
//
//   - storage.ErrUnavailable (the data directory is below its free-space
//     reserve, a WAL write failed on a full disk, or the store failed and
//     the process is restarting): HTTP 503 with Retry-After and the reason,
//     gRPC UNAVAILABLE with a RetryInfo detail. Writes resume by themselves
//     once space is freed.
//   - storage.ErrMemoryBudget (a new stream past the memory budget): HTTP
//     429 with Retry-After and the reason, gRPC RESOURCE_EXHAUSTED. Nothing
//     of the request is written; streams that exist keep being accepted.

// storageRetryAfter is the delay suggested with a storage refusal: freeing
// disk space takes an operator a while, and a sender that retries every
// second only adds load.
const storageRetryAfter = 5 * time.Second

// storageRefusal reports whether err is a storage refusal, with the reason
// to answer.
func storageRefusal(err error) (reason string, ok bool) {
	if err == nil || !errors.Is(err, storage.ErrUnavailable) && !errors.Is(err, storage.ErrMemoryBudget) && !isRateLimit(err) {
		return "", false
	}
	return err.Error(), true
}

// storageRefusalCode is the HTTP status of a storage refusal (see above).
func storageRefusalCode(err error) int {
	if errors.Is(err, storage.ErrMemoryBudget) || isRateLimit(err) {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// isRateLimit reports whether err is a per-tenant rate limit (limits.go):
// answered like the memory budget, 429 / RESOURCE_EXHAUSTED.
func isRateLimit(err error) bool {
	le, ok := asLimit(err)
	return ok && le.Code == http.StatusTooManyRequests
}

// retryAfterSeconds formats d for a Retry-After header (whole seconds,
// rounded up, at least 1).
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(int((d+time.Second-1)/time.Second), 1))
}

// refuseStorage answers a storage refusal over HTTP: 503 or 429,
// Retry-After, the reason as the plain-text body.
func refuseStorage(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", retryAfterSeconds(storageRetryAfter))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(storageRefusalCode(err))
	_, _ = w.Write([]byte(err.Error()))
}

// storageRefusalStatus is a storage refusal as a gRPC status: UNAVAILABLE
// with RetryInfo, or RESOURCE_EXHAUSTED past the memory budget.
func storageRefusalStatus(err error) error {
	if errors.Is(err, storage.ErrMemoryBudget) || isRateLimit(err) {
		return exhaustedStatus(err.Error(), storageRetryAfter)
	}
	return retryableStatus(err.Error(), storageRetryAfter)
}

// readyHandler is /-/ready once the server is ready: 200 "weft is Ready."
// while health (nil: always) has nothing to say, else 503 with the reason,
// so that a load balancer stops sending writes to a store that refuses
// them. Reads keep working on the query endpoints either way.
func readyHandler(health func() error) http.Handler {
	ok := textHandler("weft is Ready.\n")
	if health == nil {
		return ok
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := health(); err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("weft is not ready: " + err.Error() + "\n"))
			return
		}
		ok.ServeHTTP(w, r)
	})
}
