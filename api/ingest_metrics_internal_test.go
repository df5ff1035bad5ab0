package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/weftdb/weft/ingest"
)

func TestIngestCountersLokiPush(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Registerer = reg })
	ts := ns(lokiNow.Add(-time.Minute))
	body := fmt.Sprintf(`{"streams":[{"stream":{"app":"a"},"values":[["%s","kept"],["%s","%s"]]},{"stream":{"a.b":"bad"},"values":[["%s","x"]]}]}`,
		ts, ts, strings.Repeat("x", 256<<10+1), ts)
	if code, b := e.do(t, http.MethodPost, "/loki/api/v1/push", strings.NewReader(body), map[string]string{"Content-Type": "application/json"}); code != 400 {
		t.Fatalf("%d %s", code, b)
	}
	c := newIngestCounters(reg) // the registered vectors
	for _, tc := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(c.accepted.WithLabelValues("loki_push", "log_line")), 1, "accepted"},
		{testutil.ToFloat64(c.rejected.WithLabelValues("loki_push", "log_line", "line_too_long")), 1, "line_too_long"},
		{testutil.ToFloat64(c.rejected.WithLabelValues("loki_push", "log_line", "invalid_labels")), 1, "invalid_labels"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

func TestIngestCountersRemoteWrite(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newRWMetrics(reg)
	res := ingest.Result{Samples: 5, Histograms: 2, Exemplars: 1}
	res.Rejected[ingest.ReasonOutOfOrder] = 3
	res.Rejected[ingest.ReasonInvalidExemplar] = 1
	m.observe(&res)
	c := newIngestCounters(reg)
	for _, tc := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(c.accepted.WithLabelValues("remote_write", "float")), 5, "floats"},
		{testutil.ToFloat64(c.accepted.WithLabelValues("remote_write", "histogram")), 2, "histograms"},
		{testutil.ToFloat64(c.rejected.WithLabelValues("remote_write", "float", "out_of_order")), 3, "out of order"},
		{testutil.ToFloat64(c.rejected.WithLabelValues("remote_write", "exemplar", "invalid_exemplar")), 1, "exemplar"},
		// The older family keeps counting.
		{testutil.ToFloat64(m.rejected.WithLabelValues("out_of_order")), 3, "weft_remote_write_samples_rejected_total"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}
