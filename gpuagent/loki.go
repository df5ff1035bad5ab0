package gpuagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// LokiPusher sends GPU events as log lines to <base>/loki/api/v1/push (Loki's
// JSON push format). It is safe for concurrent use.
type LokiPusher struct {
	url    string
	client *http.Client
}

// NewLokiPusher returns a pusher for the Loki-compatible server at base.
func NewLokiPusher(base string, client *http.Client) *LokiPusher {
	if client == nil {
		client = &http.Client{Timeout: lokiPushTimeout}
	}
	return &LokiPusher{url: strings.TrimRight(base, "/") + "/loki/api/v1/push", client: client}
}

type lokiPush struct {
	Streams []lokiStream `json:"streams"`
}

type lokiStream struct {
	Stream map[string]string `json:"stream"`
	Values [][2]string       `json:"values"`
}

// EventLine is one event ready to push: its stream labels (the labels of the
// GPU's series, context included) and its line.
type EventLine struct {
	Labels []Label
	Time   time.Time
	Line   string
}

// lokiRetries is how often a push is retried; events are rare and matter, a
// short receiver restart must not lose one.
const lokiRetries = 5

// Push sends lines, retrying 5xx, 429 and network errors with backoff.
func (p *LokiPusher) Push(ctx context.Context, lines []EventLine) error {
	var body lokiPush
	for _, l := range lines {
		st := lokiStream{Stream: map[string]string{}}
		for _, lb := range l.Labels {
			st.Stream[promName(lb.Name)] = lb.Value
		}
		st.Values = [][2]string{{strconv.FormatInt(l.Time.UnixNano(), 10), l.Line}}
		body.Streams = append(body.Streams, st)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode loki push: %w", err)
	}
	wait := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		retry, err := p.post(ctx, data)
		if err == nil || !retry || attempt == lokiRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (p *LokiPusher) post(ctx context.Context, data []byte) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("build loki request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return true, fmt.Errorf("post loki push: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode/100 == 5
	return retry, fmt.Errorf("loki push: %s: %s", resp.Status, bytes.TrimSpace(msg))
}
