package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	jsoniter "github.com/json-iterator/go"
	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/util/jsonutil"
	"go.uber.org/goleak"
)

func testOptions(tb testing.TB, dir string) Options {
	tb.Helper()
	opts := DefaultOptions()
	opts.DataDir = dir
	opts.HTTPAddr = "127.0.0.1:0"
	opts.OTLPHTTPAddr = "127.0.0.1:0"
	opts.OTLPGRPCAddr = "127.0.0.1:0"
	opts.EnableAdminAPI = true
	return opts
}

// startApp starts an App on opts and stops it when the test ends.
func startApp(t *testing.T, opts Options) *App {
	t.Helper()
	a, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return a
}

// pushRW1 sends one remote write 1.0 request.
func pushRW1(tb testing.TB, client *http.Client, base string, ts []prompb.TimeSeries) {
	tb.Helper()
	wr := prompb.WriteRequest{Timeseries: ts}
	raw, err := wr.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("remote write: %d %s", resp.StatusCode, body)
	}
}

// getBody fetches a URL and returns status and body.
func getBody(tb testing.TB, client *http.Client, u string) (int, string) {
	tb.Helper()
	resp, err := client.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)

	a, err := New(ctx, testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if a.Addr() != nil {
		t.Error("address before Start")
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + a.Addr().String()
	if _, err := os.Stat(filepath.Join(dir, "queries.active")); err != nil {
		t.Errorf("active query log: %v", err)
	}
	if code, body := getBody(t, client, base+"/-/ready"); code != 200 || body != "weft is Ready.\n" {
		t.Fatalf("ready: %d %q", code, body)
	}

	var series []prompb.TimeSeries
	for i, gpu := range []string{"0", "1", "2"} {
		series = append(series, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "gpu_util"}, {Name: "gpu", Value: gpu}, {Name: "run_id", Value: "r1"}},
			Samples: []prompb.Sample{{Timestamp: now.Add(-time.Minute).UnixMilli(), Value: float64(i)}, {Timestamp: now.UnixMilli(), Value: float64(10 + i)}},
		})
	}
	pushRW1(t, client, base, series)

	query := base + "/api/v1/query?" + url.Values{"query": {"sum(gpu_util)"}, "time": {fmtSeconds(now)}}.Encode()
	want := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[` + fmtSeconds(now) + `,"33"]}]}}`
	if code, body := getBody(t, client, query); code != 200 || body != want {
		t.Fatalf("query: %d %s, want %s", code, body, want)
	}

	// weft's own metrics and cardinality from weft's index.
	_, metrics := getBody(t, client, base+"/metrics")
	for _, m := range []string{"weft_samples_ingested_total 6", "weft_active_series 3", "weft_head_chunks", "weft_wal_bytes", "weft_compactions_total",
		`weft_samples_rejected_total{reason="duplicate"} 0`, "prometheus_engine_query_duration_seconds", `weft_http_request_duration_seconds_count{handler="/api/v1/query"} 1`} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	code, body := getBody(t, client, base+"/api/v1/status/tsdb")
	var st struct {
		Data struct {
			HeadStats struct {
				NumSeries uint64 `json:"numSeries"`
			} `json:"headStats"`
			SeriesCountByMetricName     []struct{ Name string } `json:"seriesCountByMetricName"`
			SeriesCountByLabelValuePair []struct {
				Name  string
				Value uint64
			} `json:"seriesCountByLabelValuePair"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 {
		t.Fatalf("status/tsdb: %d %s", code, body)
	}
	if st.Data.HeadStats.NumSeries != 3 || len(st.Data.SeriesCountByMetricName) != 1 || st.Data.SeriesCountByMetricName[0].Name != "gpu_util" {
		t.Errorf("status/tsdb: %s", body)
	}
	if len(st.Data.SeriesCountByLabelValuePair) == 0 || st.Data.SeriesCountByLabelValuePair[0].Value != 3 {
		t.Errorf("label pairs: %s", body)
	}

	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := a.Stop(stopCtx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if _, err := client.Get(base + "/-/healthy"); err == nil {
		t.Error("listener still open after Stop")
	}

	// The flushed data is there after a restart.
	b, err := New(ctx, testOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base = "http://" + b.Addr().String()
	query = base + "/api/v1/query?" + url.Values{"query": {"sum(gpu_util)"}, "time": {fmtSeconds(now)}}.Encode()
	if code, body := getBody(t, client, query); code != 200 || body != want {
		t.Errorf("query after restart: %d %s, want %s", code, body, want)
	}
	if err := b.Stop(stopCtx); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// Run stops gracefully when its context ends.
func TestRunStopsOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, testOptions(t, t.TempDir())); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestStartFailsOnBusyAddress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	a, err := New(ctx, testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t, t.TempDir())
	opts.HTTPAddr = a.Addr().String()
	if err := Run(ctx, opts); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("run on a busy address: %v", err)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// fmtSeconds formats t as Prometheus' JSON writes a sample timestamp.
func fmtSeconds(t time.Time) string {
	// As Prometheus writes sample timestamps (jsonutil.MarshalTimestamp):
	// milliseconds as three digits, trailing zeros kept, none when zero.
	ms := t.UnixMilli()
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10)
	}
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// TestFmtSeconds pins the helper to Prometheus' own timestamp encoding, so
// that the exact-JSON assertions above hold whatever the current millisecond.
func TestFmtSeconds(t *testing.T) {
	for _, ms := range []int64{1_700_000_000_000, 1_700_000_000_950, 1_700_000_000_005, 1_700_000_000_050, 1_700_000_000_123} {
		stream := jsoniter.ConfigDefault.BorrowStream(nil)
		jsonutil.MarshalTimestamp(ms, stream)
		want := string(stream.Buffer())
		jsoniter.ConfigDefault.ReturnStream(stream)
		if got := fmtSeconds(time.UnixMilli(ms)); got != want {
			t.Errorf("fmtSeconds(%d) = %s, Prometheus writes %s", ms, got, want)
		}
	}
}
