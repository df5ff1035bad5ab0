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
	// Values are [timestamp, line] or [timestamp, line, structured metadata].
	Values [][]any `json:"values"`
}

// lokiMaxStreamLabels is Loki's default max_label_names_per_series: a stream
// with more label names is refused whole, a 400 the pusher does not retry,
// so the event would be lost.
const lokiMaxStreamLabels = 15

// lokiMetadataLabels describe a GPU rather than select it (gpu_uuid,
// Hostname and gpu select it), or identify one container or pod incarnation
// (a new stream per restart): an event carries them as structured metadata,
// which keeps the stream's labels within the limit with room for the
// workload context.
var lokiMetadataLabels = map[string]bool{
	"UUID": true, "pci_bus_id": true, "device": true, "modelName": true, "DCGM_FI_DRIVER_VERSION": true,
	"hw.id": true, "hw.name": true, "hw.model": true, "hw.vendor": true, "hw.gpu.pci_bus_id": true,
	"container_id": true, "pod_uid": true,
}

// lokiStreamOf splits an event's labels into stream labels, in order and at
// most lokiMaxStreamLabels, and structured metadata: the GPU's descriptors
// and whatever the limit leaves over (still searchable with
// `| name="value"`).
func lokiStreamOf(l EventLine) lokiStream {
	st := lokiStream{Stream: map[string]string{}}
	md := map[string]string{}
	for _, lb := range l.Labels {
		name := promName(lb.Name)
		if lokiMetadataLabels[lb.Name] || len(st.Stream) >= lokiMaxStreamLabels {
			md[name] = lb.Value
			continue
		}
		st.Stream[name] = lb.Value
	}
	v := []any{strconv.FormatInt(l.Time.UnixNano(), 10), l.Line}
	if len(md) > 0 {
		v = append(v, md)
	}
	st.Values = [][]any{v}
	return st
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
		body.Streams = append(body.Streams, lokiStreamOf(l))
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
