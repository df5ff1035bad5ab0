package app

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"

	"github.com/weftdb/weft/api"
)

// TestTenantLimitsReload: the server's per-tenant limits refuse a write
// over them with 429, and a reload (SIGHUP here; POST /-/reload alike)
// raises them without a restart; an invalid reload keeps the old limits.
func TestTenantLimitsReload(t *testing.T) {
	opts := testOptions(t, filepath.Join(t.TempDir(), "data"))
	opts.Tenancy = api.TenancyOptions{Enabled: true}
	opts.TenantLimits = api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": {IngestionRate: 1, IngestionBurstSize: 1}}}
	reloads := make(chan api.LimitsConfig, 1) // a zero config: the reload fails
	opts.ReloadTenantLimits = func() (api.LimitsConfig, error) {
		if c := <-reloads; c.Overrides != nil {
			return c, nil
		}
		return api.LimitsConfig{}, os.ErrInvalid
	}
	sig := make(chan os.Signal, 1)
	opts.Rules.ReloadSignal = sig
	a := startApp(t, opts)
	base := "http://" + a.Addr().String()
	var wr prompb.WriteRequest
	for i := range 5 {
		wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "i", Value: string(rune('a' + i))}},
			Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}})
	}
	raw, err := wr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	post := func() (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set(api.TenantHeader, "team-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post(); code != http.StatusTooManyRequests || !strings.Contains(body, "ingestion_rate") {
		t.Fatalf("5 samples at 1/s: %d %s", code, body)
	}
	reloads <- api.LimitsConfig{}
	sig <- syscall.SIGHUP
	for len(reloads) > 0 { // the failed reload took it
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the bucket refills at 1/s: still short of 5
	if code, body := post(); code != http.StatusTooManyRequests {
		t.Fatalf("after a failed reload: %d %s", code, body)
	}
	reloads <- api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": {IngestionRate: 1000, IngestionBurstSize: 1000}}}
	sig <- syscall.SIGHUP
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := post()
		if code == http.StatusNoContent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the reload: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTenantMaxActiveSeries: a tenant at its series limit gets 400 for the
// samples of new series, counted from the index, while its existing series
// and other tenants are written.
func TestTenantMaxActiveSeries(t *testing.T) {
	opts := testOptions(t, filepath.Join(t.TempDir(), "data"))
	opts.Tenancy = api.TenancyOptions{Enabled: true}
	opts.TenantLimits = api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": {MaxActiveSeries: 3}}}
	a := startApp(t, opts)
	base := "http://" + a.Addr().String()
	post := func(org string, from, to int) (int, string) {
		var wr prompb.WriteRequest
		for i := from; i < to; i++ {
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: "m"}, {Name: "i", Value: string(rune('a' + i))}},
				Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}})
		}
		raw, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set(api.TenantHeader, org)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post("team-a", 0, 3); code != http.StatusNoContent {
		t.Fatalf("3 series: %d %s", code, body)
	}
	if code, body := post("team-a", 0, 5); code != http.StatusBadRequest || !strings.Contains(body, "series limit (limit: 3 series)") || !strings.Contains(body, "max_active_series") {
		t.Fatalf("5 series at a limit of 3: %d %s", code, body)
	}
	if code, body := post("team-b", 0, 5); code != http.StatusNoContent {
		t.Fatalf("team-b 5 series: %d %s", code, body)
	}
}

// TestTenantMaxSeriesPerMetric: a tenant at the series limit of one metric
// name gets 400 for the samples of that name's new series, counted from
// the index (the counter the server wires), while its other metric names
// and other tenants are written.
func TestTenantMaxSeriesPerMetric(t *testing.T) {
	opts := testOptions(t, filepath.Join(t.TempDir(), "data"))
	opts.Tenancy = api.TenancyOptions{Enabled: true}
	opts.TenantLimits = api.LimitsConfig{Overrides: map[string]api.TenantLimits{"team-a": {MaxSeriesPerMetric: 2}}}
	a := startApp(t, opts)
	base := "http://" + a.Addr().String()
	post := func(org, name string, n int) (int, string) {
		var wr prompb.WriteRequest
		for i := range n {
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: []prompb.Label{{Name: "__name__", Value: name}, {Name: "i", Value: string(rune('a' + i))}},
				Samples: []prompb.Sample{{Timestamp: time.Now().UnixMilli(), Value: 1}}})
		}
		raw, err := wr.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/api/v1/write", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "snappy")
		req.Header.Set(api.TenantHeader, org)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post("team-a", "m", 2); code != http.StatusNoContent {
		t.Fatalf("2 series of m: %d %s", code, body)
	}
	if code, body := post("team-a", "m", 3); code != http.StatusBadRequest || !strings.Contains(body, `per-metric series limit of 2 exceeded for metric "m" (tenant "team-a")`) {
		t.Fatalf("3 series of m at a limit of 2: %d %s", code, body)
	}
	if code, body := post("team-a", "n", 2); code != http.StatusNoContent {
		t.Fatalf("2 series of n: %d %s", code, body)
	}
	if code, body := post("team-b", "m", 3); code != http.StatusNoContent {
		t.Fatalf("team-b 3 series of m: %d %s", code, body)
	}
}
