package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timing of the comparison (bounds, not assertions).
const (
	// scrapeInterval is short so that a few seconds give enough samples.
	scrapeInterval = time.Second
	// dataSpan is how long Prometheus scrapes before the comparison: the
	// largest look-back of a compared query (10 s window + 5 s offset + 10 s
	// range) plus margin for the first scrapes and remote-write startup.
	dataSpan = 32 * time.Second
	// settle keeps evaluation times behind the newest scrape, so that the
	// samples they read have been sent.
	settle = 3 * time.Second
	// catchUpTimeout bounds the wait for remote write to deliver everything
	// Prometheus has up to the evaluation time.
	catchUpTimeout = 30 * time.Second
)

// comparedQueries are evaluated by weft and Prometheus at the same times.
// They cover rates, aggregations, histogram_quantile over a classic
// histogram, topk, subqueries, offsets and @, binary matching and functions.
var comparedQueries = []string{
	`up`,
	`count by (job) (up)`,
	`rate(prometheus_http_requests_total[10s])`,
	`sum by (job) (rate(process_cpu_seconds_total[10s]))`,
	`sum by (job, instance) (scrape_samples_scraped)`,
	`histogram_quantile(0.9, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[10s])))`,
	`histogram_quantile(0.5, rate(prometheus_http_request_duration_seconds_bucket{handler="/metrics"}[10s]))`,
	`topk(5, go_memstats_alloc_bytes)`,
	`bottomk(3, process_resident_memory_bytes)`,
	`max_over_time(go_goroutines[10s:2s])`,
	`avg_over_time(rate(process_cpu_seconds_total[5s])[10s:1s])`,
	`go_goroutines offset 5s`,
	`go_goroutines - go_goroutines offset 5s`,
	`increase(prometheus_tsdb_head_samples_appended_total[10s])`,
	`irate(process_cpu_seconds_total[10s])`,
	`delta(go_memstats_heap_inuse_bytes[10s])`,
	`deriv(process_resident_memory_bytes[10s])`,
	`changes(go_goroutines[10s])`,
	`resets(process_cpu_seconds_total[10s])`,
	`quantile_over_time(0.5, scrape_duration_seconds[10s])`,
	`stddev by (job) (scrape_duration_seconds)`,
	`count_values("v", up)`,
	`label_replace(up, "port", "$1", "instance", ".*:(.*)")`,
	`absent(nonexistent_metric)`,
	`sort_desc(count by (__name__) ({job="prometheus", __name__=~"prometheus_http.*"}))`,
	`timestamp(up)`,
	`up * on (instance) group_left () scrape_samples_scraped`,
	`sum(up) + 1`,
	`scalar(sum(up))`,
	`count({__name__=~".+"})`,
	`sum(rate(weft_samples_ingested_total[10s]))`,
	`sum by (handler) (increase(weft_http_requests_total[10s]))`,
}

// rawQueries return range vectors: raw samples, compared as instant queries
// only.
var rawQueries = []string{
	`{job="weft", __name__=~"go_.*"}[10s]`,
	`prometheus_http_requests_total[5s] offset 2s`,
}

// TestRemoteWriteAgainstPrometheus starts two weft servers and one
// Prometheus that scrapes itself and both wefts and remote-writes to the
// first weft with remote write 1.0 and to the second with 2.0. Once the
// data has arrived, PromQL queries and the series, label and metadata APIs
// must answer the same from each weft as from Prometheus.
func TestRemoteWriteAgainstPrometheus(t *testing.T) {
	promBin := peerBinary(t, "prometheus")
	weft1, url1 := startWeft(t, "weft-rw1")
	weft2, url2 := startWeft(t, "weft-rw2")

	promAddr := freeAddr(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
  - job_name: prometheus
    static_configs: [{targets: [%[2]q]}]
  - job_name: weft
    static_configs: [{targets: [%[3]q, %[4]q]}]
remote_write:
  - name: rw1
    url: %[5]s/api/v1/write
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
    metadata_config: {send: true, send_interval: 1s}
  - name: rw2
    url: %[6]s/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    queue_config: {batch_send_deadline: 200ms, min_backoff: 50ms, max_backoff: 1s}
`, scrapeInterval, promAddr, strings.TrimPrefix(url1, "http://"), strings.TrimPrefix(url2, "http://"), url1, url2)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := startProcess(t, "prometheus", promBin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr,
		"--enable-feature=metadata-wal-records",
		"--log.level=warn",
	)
	promURL := "http://" + promAddr
	waitReady(t, prom, promURL+"/-/ready")
	started := time.Now()

	// Let Prometheus scrape for a while.
	for time.Since(started) < dataSpan {
		for _, p := range []*process{prom, weft1, weft2} {
			select {
			case <-p.done:
				t.Fatalf("%s exited: %v", p.name, p.err)
			default:
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t0 := time.Now().Add(-settle).Truncate(time.Millisecond)
	evalTimes := []time.Time{t0, t0.Add(-2500 * time.Millisecond), t0.Add(-7123 * time.Millisecond)}

	for _, w := range []struct{ name, url string }{{"rw1", url1}, {"rw2", url2}} {
		t.Run(w.name, func(t *testing.T) {
			waitCaughtUp(t, promURL, w.url, t0)
			compareAll(t, promURL, w.url, t0, evalTimes)
			if w.name == "rw2" {
				// Remote write 2.0 carries metadata with every series;
				// 1.0 sends it separately and weft's receiver, like
				// Prometheus' own, ignores it.
				compareMetadata(t, promURL, w.url)
			}
		})
	}

	// Graceful shutdown: SIGTERM flushes the head and exits 0.
	for _, p := range []*process{weft1, weft2} {
		if err := p.stop(); err != nil {
			t.Errorf("%s did not shut down cleanly: %v", p.name, err)
		}
	}
}

// fsec formats a time as float seconds with milliseconds, as Grafana does.
func fsec(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// waitCaughtUp waits until weft holds the same raw samples as Prometheus
// for every series in the minute up to t0.
func waitCaughtUp(t *testing.T, promURL, weftURL string, t0 time.Time) {
	t.Helper()
	waitSame(t, promURL, weftURL, `{__name__=~".+"}[1m]`, t0)
}

// waitSame waits until got answers the instant query q at t0 as want
// does (remote write has delivered).
func waitSame(t *testing.T, want, got, q string, t0 time.Time) {
	t.Helper()
	params := url.Values{"query": {q}, "time": {fsec(t0)}}
	deadline := time.Now().Add(catchUpTimeout)
	var last string
	for time.Now().Before(deadline) {
		w, err1 := get(want, "/api/v1/query", params)
		g, err2 := get(got, "/api/v1/query", params)
		if err1 == nil && err2 == nil {
			if last = diffResults(w.Data, g.Data); last == "" {
				return
			}
		} else {
			last = fmt.Sprint(err1, err2)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s does not answer %s as %s within %s: %s", got, q, want, catchUpTimeout, last)
}

// compareAll runs every compared query and API call against both servers.
func compareAll(t *testing.T, promURL, weftURL string, t0 time.Time, evalTimes []time.Time) {
	check := func(t *testing.T, path string, params url.Values, diff func(a, b json.RawMessage) string) {
		t.Helper()
		want, err := get(promURL, path, params)
		if err != nil {
			t.Fatalf("prometheus %s %v: %v", path, params, err)
		}
		got, err := get(weftURL, path, params)
		if err != nil {
			t.Fatalf("weft %s %v: %v", path, params, err)
		}
		if d := diff(want.Data, got.Data); d != "" {
			t.Errorf("%s %v:\n%s", path, params, d)
		}
	}
	for _, q := range comparedQueries {
		t.Run(q, func(t *testing.T) {
			for _, at := range evalTimes {
				check(t, "/api/v1/query", url.Values{"query": {q}, "time": {fsec(at)}}, diffResults)
			}
			check(t, "/api/v1/query_range", url.Values{
				"query": {q}, "start": {fsec(t0.Add(-10 * time.Second))}, "end": {fsec(t0)}, "step": {"1.5"},
			}, diffResults)
		})
	}
	for _, q := range rawQueries {
		t.Run(q, func(t *testing.T) {
			for _, at := range evalTimes {
				check(t, "/api/v1/query", url.Values{"query": {q}, "time": {fsec(at)}}, diffResults)
			}
		})
	}
	t.Run("@ modifier", func(t *testing.T) {
		q := fmt.Sprintf("go_goroutines @ %s", fsec(t0.Add(-5*time.Second)))
		check(t, "/api/v1/query", url.Values{"query": {q}, "time": {fsec(t0)}}, diffResults)
	})

	window := url.Values{"start": {fsec(t0.Add(-10 * time.Second))}, "end": {fsec(t0)}}
	with := func(extra url.Values) url.Values {
		v := url.Values{}
		for k, x := range window {
			v[k] = x
		}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	t.Run("series", func(t *testing.T) {
		check(t, "/api/v1/series", with(url.Values{"match[]": {"up"}}), diffJSONSets)
		check(t, "/api/v1/series", with(url.Values{"match[]": {`{job="weft", __name__=~"go_.*"}`, `prometheus_http_requests_total`}}), diffJSONSets)
	})
	t.Run("labels", func(t *testing.T) {
		check(t, "/api/v1/labels", with(nil), diffJSONSets)
		check(t, "/api/v1/labels", with(url.Values{"match[]": {"up"}}), diffJSONSets)
	})
	t.Run("label values", func(t *testing.T) {
		check(t, "/api/v1/label/job/values", with(nil), diffJSONSets)
		check(t, "/api/v1/label/instance/values", with(nil), diffJSONSets)
		check(t, "/api/v1/label/__name__/values", with(url.Values{"match[]": {`{job="prometheus"}`}}), diffJSONSets)
	})
}

// compareMetadata compares /api/v1/metadata for counters, a gauge and a
// classic histogram (kept under its family name, not its _bucket series).
func compareMetadata(t *testing.T, promURL, weftURL string) {
	for _, m := range []string{"prometheus_http_requests_total", "go_goroutines", "process_cpu_seconds_total", "prometheus_http_request_duration_seconds"} {
		params := url.Values{"metric": {m}}
		want, err := get(promURL, "/api/v1/metadata", params)
		if err != nil {
			t.Fatalf("prometheus metadata: %v", err)
		}
		got, err := get(weftURL, "/api/v1/metadata", params)
		if err != nil {
			t.Fatalf("weft metadata: %v", err)
		}
		if d := diffJSONEqual(want.Data, got.Data); d != "" {
			t.Errorf("metadata %s:\n%s", m, d)
		}
	}
}

// diffJSONEqual compares two JSON values structurally.
func diffJSONEqual(wantRaw, gotRaw json.RawMessage) string {
	var want, got any
	if err := json.Unmarshal(wantRaw, &want); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal(gotRaw, &got); err != nil {
		return err.Error()
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	if string(w) != string(g) {
		return fmt.Sprintf("weft %s\nprom %s", g, w)
	}
	return ""
}
