// Package push posts request bodies the way a remote-write sender's queue
// does: retrying 429, 5xx and network errors with a doubling backoff (or the
// target's Retry-After) until a deadline, and giving up at once on other
// 4xx. bench's replayer, its log pusher and the scenario replayer share it.
package push

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy bounds the retries of one body.
type Policy struct {
	// RetryFor is how long a body is retried after its first attempt.
	RetryFor time.Duration
	// MinBackoff is the first wait; it doubles up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps a target's Retry-After.
	MaxRetryAfter time.Duration
}

// Attempt is one POST of a body.
type Attempt struct {
	Latency time.Duration
	// Code is the HTTP status (0 when the request failed); Err the
	// transport error; Msg the start of an error body.
	Code int
	Err  error
	Msg  string
}

// OK reports whether the attempt was acknowledged with a 2xx.
func (a Attempt) OK() bool { return a.Err == nil && a.Code/100 == 2 }

// Error describes a failed attempt.
func (a Attempt) Error() string {
	if a.Err != nil {
		return a.Err.Error()
	}
	return fmt.Sprintf("HTTP %d: %s", a.Code, a.Msg)
}

// Sender posts to one URL. Safe for concurrent use; its fields must not
// change while it sends.
type Sender struct {
	Client *http.Client
	URL    string
	Header http.Header // set on every request
	Policy Policy
}

// errBodyBytes is how much of an error response is kept for the report.
const errBodyBytes = 512

// Send posts body until it is acknowledged, refused for good, the policy
// gives up or ctx ends, calling each (when not nil) after every attempt.
// It returns whether the body was acknowledged and the last failure.
func (s *Sender) Send(ctx context.Context, body []byte, each func(Attempt)) (bool, string) {
	backoff := s.Policy.MinBackoff
	giveUp := time.Now().Add(s.Policy.RetryFor)
	last := ""
	for {
		a, retryAfter := s.post(ctx, body)
		if each != nil {
			each(a)
		}
		if a.OK() {
			return true, last
		}
		last = a.Error()
		wait := backoff
		if retryAfter > 0 {
			wait = min(retryAfter, s.Policy.MaxRetryAfter)
		}
		retryable := a.Err != nil || a.Code == http.StatusTooManyRequests || a.Code >= 500
		if !retryable || ctx.Err() != nil || time.Now().Add(wait).After(giveUp) {
			return false, last
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, s.Policy.MaxBackoff)
	}
}

// post sends body once and returns the attempt and the Retry-After delay.
func (s *Sender) post(ctx context.Context, body []byte) (Attempt, time.Duration) {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return Attempt{Err: fmt.Errorf("new request: %w", err)}, 0
	}
	for k, v := range s.Header {
		req.Header[k] = v
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return Attempt{Latency: time.Since(t0), Err: fmt.Errorf("post: %w", err)}, 0
	}
	defer resp.Body.Close()
	a := Attempt{Code: resp.StatusCode}
	var retryAfter time.Duration
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, errBodyBytes))
		a.Msg = strings.TrimSpace(string(msg))
		if sec, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && sec > 0 {
			retryAfter = time.Duration(sec) * time.Second
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	a.Latency = time.Since(t0)
	return a, retryAfter
}
