package gpuagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// received is one decoded series sample at the test receiver.
type received struct {
	proto  string // "v1" or "v2"
	labels map[string]string
	value  float64
	ts     int64
	typ    string
	help   string
}

// testReceiver decodes remote write 1.0 and 2.0 with the prompb types.
type testReceiver struct {
	mu       sync.Mutex
	got      []received
	rejectV2 bool // answer 415 to 2.0, as a 1.0-only receiver does
	status   int  // if set, answer this instead
}

func (r *testReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != 0 {
		http.Error(w, "forced", r.status)
		return
	}
	if req.Header.Get("Content-Encoding") != "snappy" {
		http.Error(w, "want snappy", 400)
		return
	}
	comp, _ := io.ReadAll(req.Body)
	body, err := s2.Decode(nil, comp)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	switch ct := req.Header.Get("Content-Type"); ct {
	case contentTypeRW2:
		if r.rejectV2 {
			http.Error(w, "unsupported", http.StatusUnsupportedMediaType)
			return
		}
		if req.Header.Get("X-Prometheus-Remote-Write-Version") != "2.0.0" {
			http.Error(w, "bad version", 400)
			return
		}
		var m writev2.Request
		if err := m.Unmarshal(body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, ts := range m.Timeseries {
			l := map[string]string{}
			for i := 0; i+1 < len(ts.LabelsRefs); i += 2 {
				l[m.Symbols[ts.LabelsRefs[i]]] = m.Symbols[ts.LabelsRefs[i+1]]
			}
			for _, s := range ts.Samples {
				r.got = append(r.got, received{"v2", l, s.Value, s.Timestamp, ts.Metadata.Type.String(), m.Symbols[ts.Metadata.HelpRef]})
			}
		}
	case contentTypeRW1:
		var m prompb.WriteRequest
		if err := m.Unmarshal(body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		help := map[string]prompb.MetricMetadata{}
		for _, md := range m.Metadata {
			help[md.MetricFamilyName] = md
		}
		for _, ts := range m.Timeseries {
			l := map[string]string{}
			for _, lb := range ts.Labels {
				l[lb.Name] = lb.Value
			}
			md := help[l["__name__"]]
			for _, s := range ts.Samples {
				r.got = append(r.got, received{"v1", l, s.Value, s.Timestamp, md.Type.String(), md.Help})
			}
		}
	default:
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *testReceiver) samples() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitFor polls cond; a generous deadline only guards against a hang.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func batch(i int) []Series {
	return []Series{{Name: "DCGM_FI_DEV_GPU_UTIL", Type: Gauge, Help: "GPU utilization (in %).", Unit: "%",
		Labels: []Label{{"UUID", "GPU-x"}, {"gpu", "0"}, {"run_id", "r1"}}, Value: float64(i)}}
}

func pushBatch(tb testing.TB, q *Queue, i int) {
	tb.Helper()
	data, err := EncodeRW2(batch(i), time.UnixMilli(int64(1000*i)))
	if err != nil {
		tb.Fatal(err)
	}
	if err := q.Push(data); err != nil {
		tb.Fatal(err)
	}
}

func startSender(tb testing.TB, q *Queue, url string) *Sender {
	tb.Helper()
	s := NewSender(q, SenderOptions{URL: url, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	return s
}

func TestRemoteWriteSurvivesReceiverRestart(t *testing.T) {
	rcv := &testReceiver{}
	srv := httptest.NewServer(rcv)
	addr := srv.Listener.Addr().String()
	q, err := OpenQueue(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s := startSender(t, q, srv.URL)
	for i := 1; i <= 5; i++ {
		pushBatch(t, q, i)
	}
	waitFor(t, "first five", func() bool { return len(rcv.samples()) == 5 })

	srv.Close() // the receiver goes away
	for i := 6; i <= 10; i++ {
		pushBatch(t, q, i)
	}
	waitFor(t, "a failed attempt", func() bool { return s.Failures() > 0 })
	if n, _, _, _ := q.Stats(); n == 0 {
		t.Fatal("queue empty while the receiver is down")
	}

	ln, err := net.Listen("tcp", addr) // the receiver comes back on the same address
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: rcv}}
	srv2.Start()
	defer srv2.Close()
	waitFor(t, "all ten", func() bool { return len(rcv.samples()) >= 10 })

	got := rcv.samples()
	if len(got) != 10 {
		t.Fatalf("received %d samples, want exactly 10 (no loss, no duplicates)", len(got))
	}
	for i, r := range got {
		if r.value != float64(i+1) || r.ts != int64(1000*(i+1)) || r.proto != "v2" {
			t.Errorf("sample %d = %+v, want value %d in order", i, r, i+1)
		}
		if r.labels["__name__"] != "DCGM_FI_DEV_GPU_UTIL" || r.labels["run_id"] != "r1" || r.typ != "METRIC_TYPE_GAUGE" || r.help == "" {
			t.Errorf("sample %d labels/metadata = %+v", i, r)
		}
	}
	waitFor(t, "queue drained", func() bool { n, _, _, _ := q.Stats(); return n == 0 })
}

func TestRemoteWriteFallsBackToV1On415(t *testing.T) {
	rcv := &testReceiver{rejectV2: true}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	q, _ := OpenQueue(t.TempDir(), 1<<20)
	s := startSender(t, q, srv.URL)
	pushBatch(t, q, 1)
	pushBatch(t, q, 2)
	waitFor(t, "two samples", func() bool { return len(rcv.samples()) == 2 })
	for _, r := range rcv.samples() {
		if r.proto != "v1" || r.labels["UUID"] != "GPU-x" || r.typ != "GAUGE" || r.help != "GPU utilization (in %)." {
			t.Errorf("v1 sample = %+v", r)
		}
	}
	if !s.UsingV1() {
		t.Error("sender did not record the fallback")
	}
}

func TestRemoteWriteDropsNonRetryable(t *testing.T) {
	rcv := &testReceiver{status: http.StatusBadRequest}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	q, _ := OpenQueue(t.TempDir(), 1<<20)
	startSender(t, q, srv.URL)
	pushBatch(t, q, 1)
	waitFor(t, "rejected request dropped", func() bool { n, _, _, _ := q.Stats(); return n == 0 })
	rcv.mu.Lock()
	rcv.status = 0
	rcv.mu.Unlock()
	pushBatch(t, q, 2)
	waitFor(t, "next request delivered", func() bool { return len(rcv.samples()) == 1 })
	if v := rcv.samples()[0].value; v != 2 {
		t.Errorf("delivered %v, want 2", v)
	}
}

func TestQueueBoundAndReopen(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := q.Push([]byte(strings.Repeat(fmt.Sprint(i), 30))); err != nil {
			t.Fatal(err)
		}
	}
	n, bytes, dseg, dbytes := q.Stats()
	if n != 3 || bytes != 90 || dseg != 2 || dbytes != 60 {
		t.Fatalf("stats = %d segs %d bytes, dropped %d segs %d bytes; want 3/90/2/60", n, bytes, dseg, dbytes)
	}
	if err := q.Push(make([]byte, 101)); err != ErrTooLarge {
		t.Errorf("oversized push err = %v", err)
	}
	// A leftover temporary file from a crash is discarded on open.
	os.WriteFile(dir+"/00000000000000000099.seg.tmp", []byte("partial"), 0o644)
	q2, err := OpenQueue(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	for want := 2; want <= 4; want++ {
		seq, data, ok, err := q2.Peek()
		if err != nil || !ok || data[0] != byte('0'+want) {
			t.Fatalf("peek after reopen: %q %v %v", data, ok, err)
		}
		q2.Ack(seq)
	}
	if _, _, ok, _ := q2.Peek(); ok {
		t.Error("queue not empty")
	}
	pushAfter := []byte("next")
	q2.Push(pushAfter)
	if _, data, _, _ := q2.Peek(); string(data) != "next" {
		t.Errorf("sequence reused after reopen: %q", data)
	}
	if _, err := os.Stat(dir + "/00000000000000000099.seg.tmp"); !os.IsNotExist(err) {
		t.Error("temporary file kept")
	}
}

func TestRW2ToRW1RoundTrip(t *testing.T) {
	data, err := EncodeRW2(append(batch(1), Series{Name: "x_total", Type: Counter, Labels: []Label{{"a", "b"}}, Value: 3}), time.UnixMilli(5))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := RW2ToRW1(data)
	if err != nil {
		t.Fatal(err)
	}
	var m prompb.WriteRequest
	if err := m.Unmarshal(v1); err != nil {
		t.Fatal(err)
	}
	if len(m.Timeseries) != 2 || m.Timeseries[1].Labels[0].Value != "x_total" || m.Timeseries[1].Samples[0].Value != 3 || len(m.Metadata) != 2 {
		t.Errorf("converted = %+v", m)
	}
	if _, err := RW2ToRW1([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage converted without error")
	}
}

func FuzzRW2ToRW1(f *testing.F) {
	data, _ := EncodeRW2(batch(1), time.UnixMilli(1))
	f.Add(data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		RW2ToRW1(b) // must not panic on any input
	})
}
