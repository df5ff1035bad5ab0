package push

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestSend(t *testing.T) {
	policy := Policy{RetryFor: 2 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, MaxRetryAfter: 10 * time.Millisecond}
	for _, tc := range []struct {
		name         string
		fail, status int
		retryAfter   string
		ok           bool
		attempts     int
	}{
		{name: "accepted", ok: true, attempts: 1},
		{name: "429 then accepted", fail: 3, status: http.StatusTooManyRequests, ok: true, attempts: 4},
		{name: "503 with Retry-After, capped", fail: 1, status: http.StatusServiceUnavailable, retryAfter: "30", ok: true, attempts: 2},
		{name: "400 is final", fail: 100, status: http.StatusBadRequest, attempts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Test") != "yes" {
					http.Error(w, "no header", http.StatusTeapot)
					return
				}
				if int(n.Add(1)) <= tc.fail {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					http.Error(w, "nope", tc.status)
					return
				}
				w.WriteHeader(http.StatusNoContent)
			}))
			defer srv.Close()
			s := Sender{Client: srv.Client(), URL: srv.URL, Header: http.Header{"X-Test": {"yes"}}, Policy: policy}
			attempts := 0
			began := time.Now()
			ok, last := s.Send(context.Background(), []byte("body"), func(a Attempt) { attempts++ })
			if ok != tc.ok || attempts != tc.attempts {
				t.Fatalf("ok %v after %d attempts (last %q), want %v after %d", ok, attempts, last, tc.ok, tc.attempts)
			}
			if tc.fail > 0 && last == "" {
				t.Error("no last error after a failed attempt")
			}
			if time.Since(began) > time.Second {
				t.Errorf("took %v: Retry-After not capped", time.Since(began))
			}
		})
	}
}

func TestSendGivesUp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	s := Sender{Client: srv.Client(), URL: srv.URL, Policy: Policy{RetryFor: 50 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxRetryAfter: time.Second}}
	if ok, last := s.Send(context.Background(), nil, nil); ok || last != "HTTP 503: down" {
		t.Fatalf("ok %v, last %q", ok, last)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, _ := s.Send(ctx, nil, nil); ok {
		t.Fatal("sent with a cancelled context")
	}
}
