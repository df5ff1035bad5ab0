package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	promstorage "github.com/prometheus/prometheus/storage"

	"github.com/weftdb/weft/index/tenant"
)

// TestMaxConcurrentQueries: a tenant's query past its concurrency limit is
// refused with 429 while another tenant's runs; the slot frees when the
// query ends.
func TestMaxConcurrentQueries(t *testing.T) {
	lim, err := NewLimiter(LimitsConfig{Defaults: TenantLimits{MaxConcurrentQueries: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	h := lim.wrapHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") != "" {
			held <- struct{}{}
			<-hold
		}
	}))
	do := func(org, q string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/api/v1/query?"+q, nil)
		r = r.WithContext(tenant.With(r.Context(), org))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	done := make(chan struct{})
	go func() { do("a", "hold=1"); close(done) }()
	<-held
	if w := do("a", ""); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "max_concurrent_queries") || w.Header().Get("Retry-After") == "" {
		t.Errorf("second query of a: %d %q", w.Code, w.Body)
	}
	if w := do("b", ""); w.Code != http.StatusOK {
		t.Errorf("query of b: %d %s", w.Code, w.Body)
	}
	close(hold)
	<-done
	if w := do("a", ""); w.Code != http.StatusOK {
		t.Errorf("query of a after the first ended: %d %s", w.Code, w.Body)
	}
}

// BenchmarkAdmitSeries: what the series limits add to the creation of a
// series (the index's own work excluded): a map lookup by metric name and
// the counts, no scan.
func BenchmarkAdmitSeries(b *testing.B) {
	ls := labels.FromStrings("__name__", "gpu_utilization", "gpu", "3", "run_id", "r-12345")
	for _, bc := range []struct {
		name string
		t    TenantLimits
	}{
		{"none", TenantLimits{}},
		{"max_active_series", TenantLimits{MaxActiveSeries: 1 << 40}},
		{"max_series_per_metric", TenantLimits{MaxActiveSeries: 1 << 40, MaxSeriesPerMetric: 1 << 40}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim, err := NewLimiter(LimitsConfig{Defaults: bc.t}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := lim.AdmitSeries(ctx, "team-a", ls); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// copyingAppendable's appenders declare, as storage's do, that they keep
// nothing of the labels they are given; keepingAppendable's do not.
type copyingAppendable struct{ copies bool }

func (a copyingAppendable) AppenderV2(context.Context) promstorage.AppenderV2 {
	return copyingAppender{copies: a.copies}
}

type copyingAppender struct {
	promstorage.AppenderV2
	copies bool
}

func (a copyingAppender) CopiesLabels() bool { return a.copies }

// TestLimitedAppenderCopiesLabels: the limits appender keeps nothing of
// the labels, so it says it copies them exactly when what it wraps does,
// and the remote-write decoder may lend it labels in a reused buffer.
func TestLimitedAppenderCopiesLabels(t *testing.T) {
	lim, err := NewLimiter(LimitsConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, copies := range []bool{true, false} {
		ap := lim.Appendable(copyingAppendable{copies: copies}).AppenderV2(context.Background())
		c, ok := ap.(interface{ CopiesLabels() bool })
		if !ok || c.CopiesLabels() != copies {
			t.Errorf("over an appender that copies labels: %v, the limits appender says it copies: %v", copies, ok && c.CopiesLabels())
		}
	}
}
