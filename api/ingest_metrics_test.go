package api_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/util/teststorage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/weftdb/weft/api"
)

// counterValue sums the samples of metric name whose labels include want.
func counterValue(tb testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func TestIngestCountersOTLPMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	db := teststorage.New(t)
	flaky := &flakyAppendable{AppendableV2: db}
	opts := api.DefaultOTLPOptions()
	opts.Registerer = reg
	srv := httptest.NewServer(api.NewOTLPHandler(flaky, opts))
	defer srv.Close()
	const pb = "application/x-protobuf"
	postOTLP(t, srv.URL, pb, "", otlpBody(t, otlpMixed(), pb)) // one invalid point, the rest stored
	flaky.fail = true
	postOTLP(t, srv.URL, pb, "", otlpBody(t, otlpGauge("lost"), pb))

	path := map[string]string{"path": "otlp_metrics", "type": "data_point"}
	accepted := counterValue(t, reg, "weft_ingest_accepted_total", path)
	if accepted < 1 {
		t.Errorf("accepted %v, want the valid points", accepted)
	}
	if got := counterValue(t, reg, "weft_ingest_rejected_total", map[string]string{"path": "otlp_metrics", "reason": "invalid_data_point"}); got != 1 {
		t.Errorf("invalid_data_point %v, want 1", got)
	}
	if got := counterValue(t, reg, "weft_ingest_rejected_total", map[string]string{"path": "otlp_metrics", "reason": "unavailable"}); got != 1 {
		t.Errorf("unavailable %v, want the one point of the failed request", got)
	}
}

func TestIngestCountersOTLPLogs(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := api.DefaultOTLPLogsOptions()
	opts.Registerer = reg
	e := newOTLPLogsEnv(t, opts)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "trainer")
	rs := rl.ScopeLogs().AppendEmpty().LogRecords()
	ok := rs.AppendEmpty()
	ok.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	ok.Body().SetStr("fine")
	old := rs.AppendEmpty()
	old.SetTimestamp(pcommon.NewTimestampFromTime(time.Now().AddDate(0, 0, -30)))
	old.Body().SetStr("a month ago")
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	if res := postLogs(t, e.url+"/v1/logs", "application/x-protobuf", "", body); res.code != 200 {
		t.Fatalf("status %d", res.code)
	}
	// gRPC counts under the same path.
	client := plogotlp.NewGRPCClient(e.conn)
	if _, err := client.Export(context.Background(), plogotlp.NewExportRequestFromLogs(ld)); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "weft_ingest_accepted_total", map[string]string{"path": "otlp_logs", "type": "log_line"}); got != 2 {
		t.Errorf("accepted %v, want 2 (one per transport)", got)
	}
	if got := counterValue(t, reg, "weft_ingest_rejected_total", map[string]string{"path": "otlp_logs", "reason": "greater_than_max_sample_age"}); got != 2 {
		t.Errorf("too old %v, want 2", got)
	}
	e.store.fail.Store(true)
	postLogs(t, e.url+"/v1/logs", "application/x-protobuf", "", body)
	if got := counterValue(t, reg, "weft_ingest_rejected_total", map[string]string{"path": "otlp_logs", "reason": "unavailable"}); got != 2 {
		t.Errorf("unavailable %v, want both records of the failed request", got)
	}
}
