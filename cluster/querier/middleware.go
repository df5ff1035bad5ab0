package querier

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/weftdb/weft/cluster/readapi"
)

// HeaderPartial is set to "true" on answers some partition did not
// contribute to.
const HeaderPartial = "X-Weft-Partial-Response"

// tracker collects the partitions a request's reads missed.
type tracker struct {
	mu      sync.Mutex
	missing []int32
}

func (t *tracker) add(ps []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range ps {
		if !slices.Contains(t.missing, p) {
			t.missing = append(t.missing, p)
		}
	}
}

func (t *tracker) partial() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.missing) > 0
}

type trackerKey struct{}

func trackerFrom(ctx context.Context) *tracker {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	return t
}

// Middleware wraps the querier's HTTP API: a request's reads that miss
// partitions set HeaderPartial on its answer, and a request carrying
// readapi.HeaderStrong passes it on to the ingesters (read-after-write).
func Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := &tracker{}
		ctx := context.WithValue(r.Context(), trackerKey{}, t)
		if r.Header.Get(readapi.HeaderStrong) == readapi.StrongValue {
			ctx = readapi.WithStrongConsistency(ctx)
		}
		h.ServeHTTP(&partialWriter{ResponseWriter: w, t: t}, r.WithContext(ctx))
	})
}

// partialWriter adds HeaderPartial when the headers are written.
type partialWriter struct {
	http.ResponseWriter
	t     *tracker
	wrote bool
}

func (w *partialWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if w.t.partial() {
			w.Header().Set(HeaderPartial, "true")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *partialWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes flushes on (streamed answers).
func (w *partialWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *partialWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
