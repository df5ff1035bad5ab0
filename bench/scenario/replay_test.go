package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// receiver decodes what a replay sends to each endpoint and keeps books:
// samples (and staleness markers) per series in arrival order, lines per
// stream, spans. It can refuse the first requests of a path.
type receiver struct {
	mu       sync.Mutex
	samples  int
	stale    int
	lines    int
	otlp     int
	spans    int
	disorder []string
	last     map[string]int64
	newest   int64 // newest sample seen, ms
	window   int64 // a sample older than newest-window is refused, as a TSDB head does
	behind   int
	refuse   map[string]int // path -> requests to refuse
	status   int
	seenHdr  bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.seenHdr = rc.seenHdr || r.Header.Get("X-Scope-OrgID") == "team-a"
	if rc.refuse[r.URL.Path] > 0 {
		rc.refuse[r.URL.Path]--
		http.Error(w, "slow down", rc.status)
		return
	}
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	var err error
	switch r.URL.Path {
	case "/api/v1/write":
		err = rc.write(body)
	case "/loki/api/v1/push":
		err = rc.push(body)
	case "/otlp/v1/logs":
		req := plogotlp.NewExportRequest()
		if err = req.UnmarshalProto(body); err == nil {
			rc.otlp += req.Logs().LogRecordCount()
		}
	case "/otlp/v1/traces":
		req := ptraceotlp.NewExportRequest()
		if err = req.UnmarshalProto(body); err == nil {
			rc.spans += req.Traces().SpanCount()
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) order(key string, t int64) {
	if last, ok := rc.last[key]; ok && t < last && len(rc.disorder) < 5 {
		rc.disorder = append(rc.disorder, key)
	}
	rc.last[key] = t
}

func (rc *receiver) write(body []byte) error {
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return err
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(raw); err != nil {
		return err
	}
	for _, ts := range req.Timeseries {
		var key strings.Builder
		for _, l := range ts.Labels {
			key.WriteString(l.Name + "=" + l.Value + ",")
		}
		for _, s := range ts.Samples {
			rc.order(key.String(), s.Timestamp)
			if rc.window > 0 && s.Timestamp < rc.newest-rc.window {
				rc.behind++
			}
			rc.newest = max(rc.newest, s.Timestamp)
			if math.Float64bits(s.Value) == staleNaN {
				rc.stale++
			}
			rc.samples++
		}
	}
	return nil
}

func (rc *receiver) push(body []byte) error {
	var req struct {
		Streams []struct {
			Stream map[string]string   `json:"stream"`
			Values [][]json.RawMessage `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	for _, s := range req.Streams {
		b, _ := json.Marshal(s.Stream)
		for _, v := range s.Values {
			var ts string
			if err := json.Unmarshal(v[0], &ts); err != nil || len(v) < 2 {
				return errors.New("bad value")
			}
			var ns int64
			for _, c := range ts {
				ns = ns*10 + int64(c-'0')
			}
			rc.order(string(b), ns)
			rc.lines++
		}
	}
	return nil
}

func TestReplay(t *testing.T) {
	o := testOptions()
	o.Duration, o.Onset = 30*time.Minute, 10*time.Minute
	d, err := Generate("nvlink-stall", o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Encode(EncodeOptions{Lanes: 3, Block: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Counts()
	for _, tc := range []struct {
		name    string
		refuse  map[string]int
		status  int
		traces  bool
		wantErr bool
	}{
		{name: "everything, traces on", traces: true},
		{name: "traces off by default"},
		{name: "429s are retried", refuse: map[string]int{"/api/v1/write": 5, "/loki/api/v1/push": 2}, status: http.StatusTooManyRequests, traces: true},
		{name: "a 400 is final", refuse: map[string]int{"/otlp/v1/traces": 1}, status: http.StatusBadRequest, traces: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Lanes advance block by block: no sample lags the newest by
			// more than a block and a scrape.
			rc := &receiver{last: map[string]int64{}, refuse: tc.refuse, status: tc.status, window: (5*time.Minute + 30*time.Second).Milliseconds()}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			rep, err := Replay(context.Background(), p, Target{URL: srv.URL, Headers: map[string]string{"X-Scope-OrgID": "team-a"}},
				ReplayOptions{Traces: tc.traces, RetryFor: 5 * time.Second})
			if tc.wantErr != errors.Is(err, ErrIncomplete) {
				t.Fatalf("Replay error %v, want incomplete %v", err, tc.wantErr)
			}
			if len(rc.disorder) > 0 {
				t.Errorf("out of order: %v", rc.disorder)
			}
			if rc.behind > 0 {
				t.Errorf("%d samples arrived more than a block behind the newest", rc.behind)
			}
			if !rc.seenHdr {
				t.Error("the target's headers were not sent")
			}
			if rc.samples != c.Samples+c.StaleMarkers || rc.stale != c.StaleMarkers || rep.Metrics.Sent != rc.samples || rep.Metrics.Stale != rc.stale {
				t.Errorf("samples: received %d (%d markers), reported %d, generated %d + %d markers", rc.samples, rc.stale, rep.Metrics.Sent, c.Samples, c.StaleMarkers)
			}
			if rc.lines != c.LokiLines || rep.Loki.Sent != rc.lines || rc.otlp != c.OTLPLines || rep.OTLPLogs.Sent != rc.otlp {
				t.Errorf("lines: Loki %d/%d (reported %d), OTLP %d/%d (reported %d)", rc.lines, c.LokiLines, rep.Loki.Sent, rc.otlp, c.OTLPLines, rep.OTLPLogs.Sent)
			}
			switch {
			case !tc.traces:
				if rc.spans != 0 || !rep.Traces.Skipped {
					t.Errorf("traces off, yet %d spans arrived", rc.spans)
				}
			case tc.wantErr:
				if rep.Traces.Rejected == 0 || rc.spans+rep.Traces.Rejected != c.Spans {
					t.Errorf("spans: %d arrived, %d rejected, %d generated", rc.spans, rep.Traces.Rejected, c.Spans)
				}
			default:
				if rc.spans != c.Spans || rep.Traces.Sent != c.Spans {
					t.Errorf("spans: %d arrived, %d reported, %d generated", rc.spans, rep.Traces.Sent, c.Spans)
				}
			}
			if tc.refuse != nil && tc.status == http.StatusTooManyRequests && rep.Metrics.Attempts != rep.Metrics.Requests+5 {
				t.Errorf("metrics: %d attempts for %d requests, want 5 retries", rep.Metrics.Attempts, rep.Metrics.Requests)
			}
		})
	}
}

// TestReplayCancel: a cancelled context stops the replay and counts what
// was not sent as rejected.
func TestReplayCancel(t *testing.T) {
	d := generated(t, "nvlink-stall")
	p, err := d.Encode(EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Replay(ctx, p, Target{URL: "http://127.0.0.1:1"}, ReplayOptions{})
	if !errors.Is(err, ErrIncomplete) || rep.Metrics.Sent != 0 || rep.Metrics.Rejected != d.Counts().Samples+d.Counts().StaleMarkers {
		t.Fatalf("cancelled replay: %v, %+v", err, rep.Metrics)
	}
}
