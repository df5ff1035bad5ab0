package ingester

import (
	"net/http"

	"github.com/weftdb/weft/cluster/readapi"
)

// Middleware makes h answer a request that asks for read-after-write
// (readapi.HeaderStrong) only once the ingester applied every record
// produced before it; 503 when that takes longer than ConsistencyTimeout.
func (in *Ingester) Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(readapi.HeaderStrong) == readapi.StrongValue {
			if err := in.WaitFor(r.Context()); err != nil {
				w.Header().Set("Retry-After", "1")
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
