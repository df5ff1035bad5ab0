package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// rwServer is a remote-write receiver that checks every series' samples
// arrive in time order and can be told to answer with an error status.
type rwServer struct {
	mu        sync.Mutex
	last      map[string]int64
	samples   int
	outOfOrd  int
	requests  int
	failFirst int // answer status to the first failFirst requests
	status    int
}

func (s *rwServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.requests <= s.failFirst {
		http.Error(w, "nope", s.status)
		return
	}
	raw, err := snappy.Decode(nil, body)
	var req prompb.WriteRequest
	if err == nil {
		err = req.Unmarshal(raw)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, ts := range req.Timeseries {
		key := ""
		for _, l := range ts.Labels {
			key += l.Name + "=" + l.Value + ","
		}
		for _, smp := range ts.Samples {
			if last, ok := s.last[key]; ok && smp.Timestamp <= last {
				s.outOfOrd++
			}
			s.last[key] = smp.Timestamp
			s.samples++
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func TestReplayer(t *testing.T) {
	o, w := tinyRW1(t)
	seg := w.Segments[0]
	tests := []struct {
		name        string
		failFirst   int
		status      int
		lim         Limits
		wantAccept  int
		wantReject  int
		wantLeftGT0 bool
	}{
		{name: "all in order", wantAccept: seg.Samples},
		{name: "paced", lim: Limits{Rate: 1e9}, wantAccept: seg.Samples},
		{name: "retry 429", failFirst: 3, status: http.StatusTooManyRequests, wantAccept: seg.Samples, wantReject: 3},
		{name: "retry 503", failFirst: 2, status: http.StatusServiceUnavailable, wantAccept: seg.Samples, wantReject: 2},
		{name: "400 is final", failFirst: 1 << 30, status: http.StatusBadRequest, wantReject: len(seg.Payloads)},
		{name: "sample budget", lim: Limits{MaxSamples: seg.Samples / 3}, wantLeftGT0: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &rwServer{last: map[string]int64{}, failFirst: tc.failFirst, status: tc.status}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			client := newClient(o.Workers)
			defer client.CloseIdleConnections()
			r := NewReplayer(client, hs.URL, seg, o.Workers)
			st := r.Run(context.Background(), tc.lim)
			if srv.outOfOrd != 0 {
				t.Errorf("%d samples arrived out of order", srv.outOfOrd)
			}
			if st.AcceptedSamples != srv.samples {
				t.Errorf("accepted %d, server stored %d", st.AcceptedSamples, srv.samples)
			}
			if tc.wantLeftGT0 {
				if r.Left() == 0 || st.AcceptedSamples < tc.lim.MaxSamples {
					t.Errorf("budget %d: accepted %d, %d payloads left", tc.lim.MaxSamples, st.AcceptedSamples, r.Left())
				}
				// The rest goes out on the next run, still in order.
				st2 := r.Run(context.Background(), Limits{})
				if st.AcceptedSamples+st2.AcceptedSamples != seg.Samples || srv.outOfOrd != 0 {
					t.Errorf("after resuming: %d+%d of %d samples, %d out of order", st.AcceptedSamples, st2.AcceptedSamples, seg.Samples, srv.outOfOrd)
				}
				return
			}
			if st.AcceptedSamples != tc.wantAccept || st.Rejections != tc.wantReject {
				t.Errorf("accepted %d rejections %d, want %d and %d (last error %q)", st.AcceptedSamples, st.Rejections, tc.wantAccept, tc.wantReject, st.LastError)
			}
			if tc.status == http.StatusBadRequest && st.RejectedSamples != seg.Samples {
				t.Errorf("rejected samples %d, want %d", st.RejectedSamples, seg.Samples)
			}
			if r.Left() != 0 {
				t.Errorf("%d payloads left", r.Left())
			}
		})
	}
}

func TestJudgeStep(t *testing.T) {
	so := StepOptions{StepDuration: 3 * time.Second, MaxLag: time.Second}
	const rate = 1_000_000
	for _, tc := range []struct {
		name              string
		st                SendStats
		sustained, counts bool
	}{
		{"kept up", SendStats{AcceptedSamples: 3_000_000, Wall: 3 * time.Second, Remaining: 5}, true, true},
		{"fell behind", SendStats{AcceptedSamples: 2_000_000, Wall: 3 * time.Second, Remaining: 5}, false, false},
		{"lagging", SendStats{AcceptedSamples: 3_000_000, Wall: 3 * time.Second, EndLag: 2 * time.Second, Remaining: 5}, false, false},
		{"refused", SendStats{AcceptedSamples: 3_000_000, Wall: 3 * time.Second, Rejections: 1, Remaining: 5}, false, false},
		// Ran out after 2.4 s having acknowledged 71% of the offer: the
		// lag had not reached 1 s yet, but the rate was not sustained.
		{"ran out behind", SendStats{AcceptedSamples: 1_700_000, Wall: 2400 * time.Millisecond, EndLag: 800 * time.Millisecond}, false, false},
		{"ran out keeping up", SendStats{AcceptedSamples: 2_400_000, Wall: 2400 * time.Millisecond}, true, true},
		// Ran out after 0.3 s: too short to tell either way.
		{"ran out at once", SendStats{AcceptedSamples: 100_000, Wall: 300 * time.Millisecond}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := judgeStep(tc.st, rate, so)
			if s != tc.sustained || c != tc.counts {
				t.Errorf("judgeStep = (%v, %v), want (%v, %v)", s, c, tc.sustained, tc.counts)
			}
		})
	}
}
