package api

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/weftdb/weft/query/chargeback"
)

// FuzzUsageRequest: any query string of the usage routes parses into a
// request or fails with chargeback.ErrInvalid (a 400), never panics.
func FuzzUsageRequest(f *testing.F) {
	for _, s := range []string{
		"", "by=namespace&start=2026-11-01T00:00:00Z&end=1764547200", "by=tenant&format=csv&step=5m",
		"start=1e300", "end=-1e18", "step=1e400", "month=2026-02", "month=0000-01&by=team", "start=NaN&step=0",
		"by=%ff", "step=9223372036854775807s", "month=2026-12&step=0.001",
	} {
		f.Add(s)
	}
	h := &usageAPI{now: func() time.Time { return time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC) }}
	f.Fuzz(func(t *testing.T, qs string) {
		for _, parse := range []func(*http.Request) (usageRequest, error){h.reportRequest, h.exportRequest} {
			r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/weft/api/v1/usage", RawQuery: qs}}
			q, err := parse(r)
			if err != nil {
				if !errors.Is(err, chargeback.ErrInvalid) {
					t.Fatalf("%q: error %v does not wrap ErrInvalid", qs, err)
				}
				continue
			}
			if q.by == "" || q.step < 0 {
				t.Fatalf("%q: parsed %+v", qs, q)
			}
		}
	})
}
