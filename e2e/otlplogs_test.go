package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOTLPLogsTelemetrygen starts the real weft binary and drives its OTLP
// logs receiver with the pinned telemetrygen over gRPC (:4317-style port)
// and over HTTP (/v1/logs on the OTLP HTTP port), then checks through the
// Loki API that exactly the lines sent are stored, with the stream labels
// and structured metadata of the OTLP mapping.
func TestOTLPLogsTelemetrygen(t *testing.T) {
	bin := peerBinary(t, "telemetrygen")
	addr, grpcAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	p := startProcess(t, "weft", buildWeft(t),
		"-data-dir", filepath.Join(t.TempDir(), "data"),
		"-http-addr", addr,
		"-otlp-grpc-addr", grpcAddr,
		"-otlp-http-addr", httpAddr,
		"-log-level", "warn",
	)
	base := "http://" + addr
	waitReady(t, p, base+"/-/ready")

	const (
		n       = 25 // log records per run
		rate    = 200
		traceID = "5b8efff798038103d269b633813fc60c"
		spanID  = "eee19b7ec3c1b174"
	)
	for _, transport := range []string{"grpc", "http"} {
		t.Run(transport, func(t *testing.T) {
			svc := "tg-logs-" + transport
			args := []string{"logs", "--otlp-insecure", "--logs", strconv.Itoa(n), "--rate", strconv.Itoa(rate),
				"--workers", "1", "--service", svc, "--body", "step done " + transport,
				"--trace-id", traceID, "--span-id", spanID,
				"--severity-text", "Warn", "--severity-number", "13",
				"--otlp-attributes", `k8s.pod.name="trainer-0"`, "--otlp-attributes", `ai.run.id="r-` + transport + `"`,
				"--telemetry-attributes", `gpu.index="4"`}
			if transport == "grpc" {
				args = append(args, "--otlp-endpoint", grpcAddr)
			} else {
				args = append(args, "--otlp-http", "--otlp-endpoint", httpAddr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
			}

			lines := otlpLogsQuery(t, base, `{service_name="`+svc+`"}`)
			if len(lines) != n {
				t.Fatalf("%d lines stored for %s, want %d", len(lines), svc, n)
			}
			for _, l := range lines {
				switch {
				case l.line != "step done "+transport:
					t.Fatalf("line %q", l.line)
				case l.stream["pod"] != "trainer-0" || l.stream["run_id"] != "r-"+transport || l.stream["service_name"] != svc:
					t.Fatalf("stream labels %v: want pod, run_id, service_name", l.stream)
				case l.md["trace_id"] != traceID || l.md["span_id"] != spanID:
					t.Fatalf("metadata %v: want trace_id %s, span_id %s", l.md, traceID, spanID)
				case l.md["detected_level"] != "warn" || l.md["severity_text"] != "Warn" || l.md["severity_number"] != "13" || l.md["gpu_index"] != "4":
					t.Fatalf("metadata %v: want detected_level warn, severity, gpu_index", l.md)
				}
			}
			// The trace ID finds the lines with a line filter too.
			if got := otlpLogsQuery(t, base, `{service_name="`+svc+`"} | trace_id="`+traceID+`"`); len(got) != n {
				t.Fatalf("trace_id filter: %d lines, want %d", len(got), n)
			}
		})
	}
	// The main port serves /otlp/v1/logs as well.
	t.Run("main-port", func(t *testing.T) {
		svc := "tg-logs-main"
		args := []string{"logs", "--otlp-insecure", "--otlp-http", "--otlp-endpoint", addr,
			"--otlp-http-url-path", "/otlp/v1/logs", "--logs", "5", "--rate", strconv.Itoa(rate),
			"--workers", "1", "--service", svc, "--trace-id", traceID}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("telemetrygen %v: %v\n%s", args, err, out)
		}
		if got := otlpLogsQuery(t, base, `{service_name="`+svc+`"}`); len(got) != 5 {
			t.Fatalf("%d lines stored, want 5", len(got))
		}
	})
	// OTLP/JSON, gzip, with one record over the line limit: partial success,
	// the valid records stored.
	t.Run("json-partial", func(t *testing.T) {
		now := time.Now().UnixNano()
		body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"json-partial"}}]},` +
			`"scopeLogs":[{"logRecords":[` +
			`{"timeUnixNano":"` + strconv.FormatInt(now, 10) + `","body":{"stringValue":"ok one"},"traceId":"` + traceID + `"},` +
			`{"timeUnixNano":"` + strconv.FormatInt(now+1, 10) + `","body":{"kvlistValue":{"values":[{"key":"k","value":{"intValue":"7"}}]}}},` +
			`{"timeUnixNano":"` + strconv.FormatInt(now+2, 10) + `","body":{"stringValue":"` + strings.Repeat("x", 300<<10) + `"}}]}]}]}`
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write([]byte(body))
		_ = zw.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/otlp/v1/logs", &zb)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"rejectedLogRecords":"1"`) {
			t.Fatalf("answer %d %s, want 200 with rejectedLogRecords 1", res.StatusCode, b)
		}
		got := otlpLogsQuery(t, base, `{service_name="json-partial"}`)
		lines := map[string]string{}
		for _, l := range got {
			lines[l.line] = l.md["trace_id"]
		}
		if len(got) != 2 || lines["ok one"] != traceID || lines[`{"k":7}`] != "" {
			t.Fatalf("stored %v, want the two valid records", lines)
		}
	})
}

type otlpLogLine struct {
	stream map[string]string
	line   string
	md     map[string]string
}

// otlpLogsQuery returns the lines of a LogQL query over the last hour,
// with structured metadata apart (categorize-labels).
func otlpLogsQuery(tb testing.TB, base, q string) []otlpLogLine {
	tb.Helper()
	now := time.Now()
	params := url.Values{"query": {q}, "limit": {"5000"},
		"start": {strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10)},
		"end":   {strconv.FormatInt(now.Add(time.Minute).UnixNano(), 10)}}
	req, _ := http.NewRequest(http.MethodGet, base+"/loki/api/v1/query_range?"+params.Encode(), nil)
	req.Header.Set("X-Loki-Response-Encoding-Flags", "categorize-labels")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		tb.Fatalf("query_range %s: %d %s", q, res.StatusCode, b)
	}
	var out struct {
		Data struct {
			Result []struct {
				Stream map[string]string   `json:"stream"`
				Values [][]json.RawMessage `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("query_range answer %s: %v", b, err)
	}
	var lines []otlpLogLine
	for _, s := range out.Data.Result {
		for _, v := range s.Values {
			if len(v) != 3 {
				tb.Fatalf("entry %s: want [ts, line, {structuredMetadata}]", v)
			}
			l := otlpLogLine{stream: s.Stream}
			var md struct {
				SM map[string]string `json:"structuredMetadata"`
			}
			if err := json.Unmarshal(v[1], &l.line); err != nil {
				tb.Fatal(err)
			}
			if err := json.Unmarshal(v[2], &md); err != nil {
				tb.Fatal(err)
			}
			l.md = md.SM
			lines = append(lines, l)
		}
	}
	return lines
}
