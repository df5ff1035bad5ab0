package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestTracesPivots runs a program instrumented with the OpenTelemetry Go SDK
// (e2e/internal/otelapp) against the real weft: it emits one trace, a log
// line inside it and a latency histogram with the span as exemplar. The test
// then walks every pivot with the requests Grafana sends: metrics → trace
// (query_exemplars), trace by ID (v2 protobuf), trace → logs (the
// tracesToLogsV2 query with label_format and contains), logs → trace (the
// trace_id structured metadata a derived field reads), trace → metrics (span
// metrics under the labels $__tags expands to, with their own exemplars).
func TestTracesPivots(t *testing.T) {
	w := startTraceWeft(t, "weft", filepath.Join(t.TempDir(), "data"))
	const svc = "completions"
	start := time.Now().Add(-time.Minute)
	traceID := runOtelApp(t, w.httpAddr, svc)

	// Metrics → trace: Grafana's exemplar query on the app's histogram.
	ex := exemplarTraceIDs(t, w.base, `inference_latency_seconds_bucket{job="`+svc+`", run_id="r-otel"}`, start)
	if !contains(ex, traceID) {
		t.Fatalf("app histogram exemplars %v, want trace %s", ex, traceID)
	}

	// The trace, as Grafana fetches it.
	id, _ := parseHexTraceID(traceID)
	td := tempoTrace(t, w.base, id)
	if td.SpanCount() != 2 {
		t.Fatalf("trace %s: %d spans, want 2", traceID, td.SpanCount())
	}

	// Trace → logs: tracesToLogsV2 with tags service.name→service_name and
	// filterByTraceID (Grafana's query, the dynamic-links flag off).
	q := `{service_name="` + svc + `"} | label_format log_line_contains_trace_id=` + "`" + `{{ contains "` + traceID + `" __line__ }}` + "`" +
		` | log_line_contains_trace_id="true" or trace_id="` + traceID + `"`
	lines := lokiLines(t, w.base, q, start)
	if len(lines) != 1 || lines[0].line != "kv cache nearly full" {
		t.Fatalf("trace → logs %s: %+v", q, lines)
	}
	// Logs → trace: the derived field reads trace_id from the structured
	// metadata and opens the trace.
	if got := lines[0].md["trace_id"]; got != traceID {
		t.Fatalf("log line trace_id %q (metadata %v), want %s", got, lines[0].md, traceID)
	}
	if code, _ := httpGet(t, w.base+"/api/v2/traces/"+lines[0].md["trace_id"], "application/protobuf"); code != http.StatusOK {
		t.Fatalf("logs → trace: %d", code)
	}

	// Trace → metrics: span metrics, flushed every 15 s, under the labels
	// $__tags expands to (service.name → service, ai.run.id → run_id).
	sel := `traces_spanmetrics_calls_total{service="` + svc + `", run_id="r-otel", span_kind="SPAN_KIND_SERVER"}`
	deadline := time.Now().Add(45 * time.Second)
	for {
		v, ok := instantValue(t, w.base, sel)
		if ok && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v (present %v), want 1", sel, v, ok)
		}
		time.Sleep(time.Second)
	}
	ex = exemplarTraceIDs(t, w.base, `traces_spanmetrics_latency_bucket{service="`+svc+`"}`, start)
	if !contains(ex, traceID) {
		t.Fatalf("span-metric exemplars %v, want trace %s", ex, traceID)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// exemplarTraceIDs asks /api/v1/query_exemplars as Grafana's Prometheus
// datasource does and returns the trace_id labels.
func exemplarTraceIDs(tb testing.TB, base, query string, start time.Time) []string {
	tb.Helper()
	p := url.Values{"query": {query}, "start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)}}
	code, body := httpGet(tb, base+"/api/v1/query_exemplars?"+p.Encode(), "")
	if code != http.StatusOK {
		tb.Fatalf("query_exemplars %s: %d %s", query, code, body)
	}
	var resp struct {
		Data []struct {
			Exemplars []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, s := range resp.Data {
		for _, e := range s.Exemplars {
			out = append(out, e.Labels["trace_id"])
		}
	}
	return out
}

func instantValue(tb testing.TB, base, query string) (float64, bool) {
	tb.Helper()
	code, body := httpGet(tb, base+"/api/v1/query?"+url.Values{"query": {query}}.Encode(), "")
	if code != http.StatusOK {
		tb.Fatalf("query %s: %d %s", query, code, body)
	}
	var resp struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		tb.Fatal(err)
	}
	if len(resp.Data.Result) != 1 {
		return 0, false
	}
	v, err := strconv.ParseFloat(fmt.Sprint(resp.Data.Result[0].Value[1]), 64)
	return v, err == nil
}

type lokiLine struct {
	line string
	md   map[string]string
}

// lokiLines runs a Loki query_range as Grafana does (backward, with
// categorize-labels so structured metadata comes apart from stream labels).
func lokiLines(tb testing.TB, base, query string, start time.Time) []lokiLine {
	tb.Helper()
	p := url.Values{"query": {query}, "start": {strconv.FormatInt(start.UnixNano(), 10)},
		"end": {strconv.FormatInt(time.Now().Add(time.Minute).UnixNano(), 10)}, "limit": {"100"}, "direction": {"backward"}}
	req, _ := http.NewRequest(http.MethodGet, base+"/loki/api/v1/query_range?"+p.Encode(), nil)
	req.Header.Set("X-Loki-Response-Encoding-Flags", "categorize-labels")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Values [][]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("loki query %s: %d %v", query, resp.StatusCode, err)
	}
	var lines []lokiLine
	for _, s := range out.Data.Result {
		for _, v := range s.Values {
			l := lokiLine{md: map[string]string{}}
			if len(v) > 1 {
				_ = json.Unmarshal(v[1], &l.line)
			}
			if len(v) > 2 {
				var meta struct {
					StructuredMetadata map[string]string `json:"structuredMetadata"`
				}
				_ = json.Unmarshal(v[2], &meta)
				l.md = meta.StructuredMetadata
			}
			lines = append(lines, l)
		}
	}
	return lines
}
