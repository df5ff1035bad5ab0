package api_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
)

// /api/v1/read is Prometheus' remote-read handler over weft's storage.
func TestRemoteRead(t *testing.T) {
	srv, _ := newTestServer(t, nil)
	rr := prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: seedEnd.Add(-time.Minute).UnixMilli(),
		EndTimestampMs:   seedEnd.UnixMilli(),
		Matchers:         []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "gpu_temperature_celsius"}},
	}}}
	raw, err := rr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/read", bytes.NewReader(s2.EncodeSnappy(nil, raw)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	dec, err := s2.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var out prompb.ReadResponse
	if err := out.Unmarshal(dec); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 1 || len(out.Results[0].Timeseries) != 1 {
		t.Fatalf("results %+v", out.Results)
	}
	// Samples every 15 s in [end-1m, end]: 5.
	if n := len(out.Results[0].Timeseries[0].Samples); n != 5 {
		t.Errorf("%d samples, want 5", n)
	}
}
