package bench

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/weftdb/weft/bench/scenario"
	"github.com/weftdb/weft/proto/tempopb"
)

// maxTraceAnswer bounds a query answer the harness reads.
const maxTraceAnswer = 256 << 20

// getBody GETs u with accept and returns the body of a 200.
func getBody(ctx context.Context, c *http.Client, u, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTraceAnswer))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, trunc(strings.TrimSpace(string(b)), 200))
	}
	return b, nil
}

// parseTraceID reads a hex trace ID, leading zeros optional (Tempo trims
// them, Jaeger may print 16 digits for a 64-bit ID).
func parseTraceID(s string) (scenario.TraceID, error) {
	var id scenario.TraceID
	if len(s) > 32 {
		return id, fmt.Errorf("trace id %q: too long", s)
	}
	s = strings.Repeat("0", 32-len(s)) + s
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("trace id %q: %w", s, err)
	}
	return id, nil
}

// weftTraces is weft's Tempo API: /api/v2/traces/<id> as protobuf (what
// Grafana's Tempo datasource asks for) and the legacy tag search.
type weftTraces struct{}

// DurationOnAnySpan is false: the legacy search is the TraceQL spanset
// { .service.name = "<svc>" && duration >= <d> }, one span with both.
func (weftTraces) DurationOnAnySpan() bool { return false }

func (weftTraces) ByIDQuery() string { return "GET /api/v2/traces/<id> (Accept: application/protobuf)" }
func (weftTraces) SearchQuery() string {
	return "GET /api/search?tags=service.name=<svc>&minDuration=<d>&start=<s>&end=<s>&limit=<n>"
}

func (weftTraces) TraceSpans(ctx context.Context, c *http.Client, base string, id scenario.TraceID) (int, error) {
	b, err := getBody(ctx, c, base+"/api/v2/traces/"+hex.EncodeToString(id[:]), "application/protobuf")
	if err != nil {
		return 0, err
	}
	var r tempopb.TraceByIDResponse
	if err := proto.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("decode TraceByIDResponse: %w", err)
	}
	n := 0
	for _, rs := range r.GetTrace().GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	return n, nil
}

func (weftTraces) Search(ctx context.Context, c *http.Client, base string, s TraceSearch) ([]scenario.TraceID, error) {
	v := url.Values{
		"tags":        {"service.name=" + s.Service},
		"minDuration": {s.MinDuration.String()},
		"start":       {strconv.FormatInt(s.Start/1e9, 10)},
		"end":         {strconv.FormatInt((s.End+1e9-1)/1e9, 10)},
		"limit":       {strconv.Itoa(s.Limit)},
	}
	b, err := getBody(ctx, c, base+"/api/search?"+v.Encode(), "")
	if err != nil {
		return nil, err
	}
	var r struct {
		Traces []struct {
			TraceID string `json:"traceID"`
		} `json:"traces"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode search: %w", err)
	}
	out := make([]scenario.TraceID, 0, len(r.Traces))
	for _, t := range r.Traces {
		id, err := parseTraceID(t.TraceID)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

// jaegerTraces is Jaeger's query HTTP API (the one its UI uses).
type jaegerTraces struct{}

// DurationOnAnySpan is true: Badger's FindTraceIDs intersects the traces
// with a span of the service with those with a span of any service at
// least minDuration long (internal/storage/v1/badger/spanstore/reader.go).
func (jaegerTraces) DurationOnAnySpan() bool { return true }

func (jaegerTraces) ByIDQuery() string { return "GET /api/traces/<id>" }
func (jaegerTraces) SearchQuery() string {
	return "GET /api/traces?service=<svc>&minDuration=<d>&start=<us>&end=<us>&limit=<n>"
}

// jaegerAnswer is the part of Jaeger's structured response the harness reads.
type jaegerAnswer struct {
	Data []struct {
		TraceID string            `json:"traceID"`
		Spans   []json.RawMessage `json:"spans"`
	} `json:"data"`
}

func (jaegerTraces) TraceSpans(ctx context.Context, c *http.Client, base string, id scenario.TraceID) (int, error) {
	b, err := getBody(ctx, c, base+"/api/traces/"+hex.EncodeToString(id[:]), "")
	if err != nil {
		return 0, err
	}
	var r jaegerAnswer
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("decode trace: %w", err)
	}
	n := 0
	for _, t := range r.Data {
		n += len(t.Spans)
	}
	return n, nil
}

func (jaegerTraces) Search(ctx context.Context, c *http.Client, base string, s TraceSearch) ([]scenario.TraceID, error) {
	v := url.Values{
		"service":     {s.Service},
		"minDuration": {s.MinDuration.String()},
		"start":       {strconv.FormatInt(s.Start/1e3, 10)},
		"end":         {strconv.FormatInt(s.End/1e3, 10)},
		"limit":       {strconv.Itoa(s.Limit)},
	}
	b, err := getBody(ctx, c, base+"/api/traces?"+v.Encode(), "")
	if err != nil {
		return nil, err
	}
	var r jaegerAnswer
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode search: %w", err)
	}
	out := make([]scenario.TraceID, 0, len(r.Data))
	for _, t := range r.Data {
		id, err := parseTraceID(t.TraceID)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}
