package api_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"

	"github.com/weftdb/weft/api"
	"github.com/weftdb/weft/api/apitest"
)

func federate(tb testing.TB, h http.Handler, accept string, matches ...string) (int, http.Header, []byte) {
	tb.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return request(tb, http.MethodGet, srv.URL+"/federate?"+url.Values{"match[]": matches}.Encode(), "Accept", accept, nil)
}

// request sends one request with an optional header (skipped when value
// is empty) and returns the status, the headers and the body.
func request(tb testing.TB, method, u, header, value string, body []byte) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if value != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func parseText(tb testing.TB, b []byte) map[string]*dto.MetricFamily {
	tb.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		tb.Fatalf("parse %s: %v", b, err)
	}
	return fams
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func TestFederateLatestSamples(t *testing.T) {
	db := newSeededDB(t)
	opts := api.DefaultFederateOptions()
	opts.Now = func() time.Time { return seedEnd.Add(30 * time.Second) }
	h := api.NewFederateHandler(db, opts)

	code, hdr, body := federate(t, h, "text/plain", `{job="api"}`, `gpu_temperature_celsius`)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s: %s", code, hdr.Get("Content-Type"), body)
	}
	fams := parseText(t, body)
	if len(fams) != 3 {
		t.Fatalf("families %v, want http_requests_total, request_duration_seconds_bucket, gpu_temperature_celsius", fams)
	}
	reqs := fams["http_requests_total"]
	if len(reqs.GetMetric()) != 4 || reqs.GetType() != dto.MetricType_UNTYPED {
		t.Fatalf("http_requests_total %v", reqs)
	}
	last := float64(seedEnd.Sub(seedStart) / seedStep) // the seed's i at seedEnd
	for _, m := range reqs.GetMetric() {
		ls := labelMap(m)
		want := last
		if ls["code"] == "200" {
			want = last * 3
		}
		if m.GetUntyped().GetValue() != want || m.GetTimestampMs() != seedEnd.UnixMilli() || ls["job"] != "api" || ls["instance"] == "" {
			t.Errorf("sample %v: want %v at %d with its own job and instance", m, want, seedEnd.UnixMilli())
		}
	}
	// A series without instance gets instance="", as from Prometheus, so
	// that the scraper does not attach its own.
	gpu := fams["gpu_temperature_celsius"].GetMetric()[0]
	if ls := labelMap(gpu); ls["instance"] != "" || len(ls) != 3 {
		t.Errorf("gpu labels %v, want gpu, host and an empty instance", ls)
	}
	if !strings.Contains(string(body), `instance=""`) {
		t.Errorf("no empty instance in\n%s", body)
	}

	// Past the lookback nothing is federated; no match[] federates nothing.
	opts.Now = func() time.Time { return seedEnd.Add(6 * time.Minute) }
	if code, _, body := federate(t, api.NewFederateHandler(db, opts), "", `{job="api"}`); code != 200 || len(body) != 0 {
		t.Errorf("beyond the lookback: %d %q", code, body)
	}
	if code, _, body := federate(t, h, ""); code != 200 || len(body) != 0 {
		t.Errorf("no match[]: %d %q", code, body)
	}
	if code, _, body := federate(t, h, "", `{job=`); code != 400 || len(body) == 0 {
		t.Errorf("bad selector: %d %q", code, body)
	}
}

func TestFederateFamiliesStaleAndHistograms(t *testing.T) {
	db, err := apitest.OpenTSDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Unix(1700000000, 0)
	app := db.Appender(context.Background())
	add := func(ls labels.Labels, v float64) {
		if _, err := app.Append(0, ls, now.UnixMilli(), v); err != nil {
			t.Fatal(err)
		}
	}
	// UUID sorts before __name__: in label order the a_metric series are
	// not adjacent, but they must be one family.
	add(labels.FromStrings("__name__", "a_metric", "UUID", "x"), 1)
	add(labels.FromStrings("__name__", "b_metric", "UUID", "y"), 2)
	add(labels.FromStrings("__name__", "a_metric", "UUID", "z"), 3)
	if _, err := app.Append(0, labels.FromStrings("__name__", "gone"), now.Add(-time.Minute).UnixMilli(), 1); err != nil {
		t.Fatal(err)
	}
	add(labels.FromStrings("__name__", "gone"), math.Float64frombits(value.StaleNaN))
	h := &histogram.Histogram{Count: 5, Sum: 12, Schema: 1, ZeroThreshold: 0.001, ZeroCount: 1,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 0}}
	if _, err := app.AppendHistogram(0, labels.FromStrings("__name__", "latency_seconds"), now.UnixMilli(), h, nil); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	opts := api.DefaultFederateOptions()
	opts.Now = func() time.Time { return now }
	opts.ExternalLabels = labels.FromStrings("cluster", "eu")
	fh := api.NewFederateHandler(db, opts)

	code, _, body := federate(t, fh, "text/plain", `{__name__=~".+"}`)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if n := strings.Count(string(body), "# TYPE a_metric untyped"); n != 1 {
		t.Errorf("a_metric in %d families:\n%s", n, body)
	}
	fams := parseText(t, body)
	if _, ok := fams["gone"]; ok {
		t.Error("a series whose latest sample is a stale marker was federated")
	}
	if _, ok := fams["latency_seconds"]; ok {
		t.Error("a native histogram in the text format")
	}
	if ls := labelMap(fams["b_metric"].GetMetric()[0]); ls["cluster"] != "eu" || ls["instance"] != "" {
		t.Errorf("external labels missing: %v", ls)
	}

	// Protobuf carries the native histogram.
	code, hdr, body := federate(t, fh, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", `latency_seconds`)
	if code != 200 || !strings.Contains(hdr.Get("Content-Type"), "delimited") {
		t.Fatalf("%d %s", code, hdr.Get("Content-Type"))
	}
	dec := expfmt.NewDecoder(strings.NewReader(string(body)), expfmt.Format(hdr.Get("Content-Type")))
	var mf dto.MetricFamily
	if err := dec.Decode(&mf); err != nil {
		t.Fatalf("decode protobuf: %v", err)
	}
	hm := mf.GetMetric()[0].GetHistogram()
	if mf.GetType() != dto.MetricType_HISTOGRAM || hm.GetSchema() != 1 || hm.GetSampleCountFloat() != 5 || hm.GetSampleSum() != 12 || len(hm.GetPositiveCount()) != 2 {
		t.Errorf("histogram %v", &mf)
	}
}
