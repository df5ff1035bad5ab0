package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"
	"go.uber.org/goleak"

	"github.com/weftdb/weft/ingest/redact"
)

// The secrets the redaction test pushes; none may be on disk afterwards.
const (
	secretEmail  = "alice.secret@example.com"
	secretBearer = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.Zm9vYmFyYmF6"
	secretAWS    = "AKIAZZZZ5EXAMPLE7Q2X"
	secretAPIKey = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	secretCard   = "4111-1111-1111-1111"
)

// TestRedactionNothingOnDisk pushes secrets through every ingest path (Loki
// push: lines, structured metadata and stream labels; OTLP logs; OTLP
// traces: span, event and resource attributes and the status message;
// remote write: label values), stops weft (flush and close), and reads
// every file of the data directory: no secret is anywhere, the redacted
// values are what the APIs answer, and each rule counted its work.
func TestRedactionNothingOnDisk(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	dir := t.TempDir()
	opts := testOptions(t, dir)
	opts.Security.Redaction = []redact.Rule{
		{Builtin: "email"}, {Builtin: "bearer_token"}, {Builtin: "aws_key"}, {Builtin: "api_key"},
		{Name: "card", Regex: `\b4111-\d{4}-\d{4}-\d{4}\b`, Replacement: "<card>", Targets: []redact.Target{redact.LogLines}},
	}
	a, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = a.Stop(ctx)
		}
	}()
	base := "http://" + a.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	now := time.Now().Truncate(time.Millisecond)
	ns := strconv.FormatInt(now.UnixNano(), 10)
	post := func(path, ct, body string, want int) {
		t.Helper()
		resp, err := client.Post(base+path, ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}

	// Loki push: secrets in the line, the structured metadata and a
	// stream label.
	post("/loki/api/v1/push", "application/json", `{"streams":[{"stream":{"job":"redact","owner":"`+secretEmail+`"},"values":[["`+ns+`",`+
		`"login user=`+secretEmail+` Authorization: Bearer `+secretBearer+` card `+secretCard+` key `+secretAPIKey+` canary-line-9c1f",`+
		`{"user":"`+secretEmail+`","aws":"`+secretAWS+`"}]]}]}`, http.StatusNoContent)
	// OTLP logs: the body and an attribute.
	post("/otlp/v1/logs", "application/json", `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"redact-otlp"}}]},`+
		`"scopeLogs":[{"logRecords":[{"timeUnixNano":"`+ns+`","body":{"stringValue":"aws access key `+secretAWS+` for `+secretEmail+` canary-otlp-log-5d2a"},`+
		`"attributes":[{"key":"auth","value":{"stringValue":"Bearer `+secretBearer+`"}}]}]}]}]}`, http.StatusOK)
	// OTLP traces: span, event and resource attributes, status message.
	start := strconv.FormatInt(now.Add(-time.Second).UnixNano(), 10)
	post("/otlp/v1/traces", "application/json", `{"resourceSpans":[{"resource":{"attributes":[`+
		`{"key":"service.name","value":{"stringValue":"redact-svc"}},{"key":"owner","value":{"stringValue":"`+secretEmail+`"}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"GET /login canary-span-77b0",`+
		`"kind":2,"startTimeUnixNano":"`+start+`","endTimeUnixNano":"`+ns+`",`+
		`"attributes":[{"key":"http.request.header.authorization","value":{"stringValue":"Bearer `+secretBearer+`"}},`+
		`{"key":"tags","value":{"arrayValue":{"values":[{"stringValue":"`+secretAPIKey+`"}]}}}],`+
		`"events":[{"timeUnixNano":"`+ns+`","name":"creds","attributes":[{"key":"k","value":{"stringValue":"`+secretAWS+`"}}]}],`+
		`"status":{"code":2,"message":"denied for `+secretEmail+`"}}]}]}]}`, http.StatusOK)
	// Remote write: label values.
	pushRW1(t, client, base, []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "redact_logins_total"}, {Name: "user", Value: secretEmail}, {Name: "key", Value: secretAWS}, {Name: "note", Value: "canary-series-e41c"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: now.UnixMilli()}},
	}})

	// What the APIs answer is the redacted data.
	code, body := getBody(t, client, base+"/loki/api/v1/query_range?"+url.Values{
		"query": {`{job="redact"}`}, "start": {strconv.FormatInt(now.Add(-time.Minute).UnixNano(), 10)},
		"end": {strconv.FormatInt(now.Add(time.Minute).UnixNano(), 10)},
	}.Encode())
	body = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(body)
	for _, want := range []string{"<redacted:email>", "Bearer <redacted:bearer_token>", "<card>", "<redacted:api_key>", "<redacted:aws_key>"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("loki query lacks %q: %d %s", want, code, body)
		}
	}
	code, body = getBody(t, client, base+"/api/v1/series?"+url.Values{"match[]": {"redact_logins_total"}}.Encode())
	if code != 200 || !strings.Contains(body, `"user":"<redacted:email>"`) || !strings.Contains(body, `"key":"<redacted:aws_key>"`) {
		t.Errorf("series: %d %s", code, body)
	}
	code, body = getBody(t, client, base+"/api/v2/traces/5b8efff798038103d269b633813fc60c")
	if code != 200 || !strings.Contains(body, "redacted:bearer_token") {
		t.Errorf("trace: %d %s", code, body)
	}
	_, metrics := getBody(t, client, base+"/metrics")
	for _, want := range []string{
		`weft_redactions_total{rule="email",target="log_lines"}`,
		`weft_redactions_total{rule="email",target="structured_metadata"}`,
		`weft_redactions_total{rule="email",target="label_values"}`,
		`weft_redactions_total{rule="bearer_token",target="span_attributes"}`,
		`weft_redactions_total{rule="aws_key",target="span_attributes"}`,
		`weft_redactions_total{rule="card",target="log_lines"} 1`,
	} {
		i := strings.Index(metrics, want)
		if i < 0 || strings.HasPrefix(metrics[i+len(want):], " 0\n") {
			t.Errorf("/metrics lacks a non-zero %s", want)
		}
	}

	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	secrets := []string{secretEmail, secretBearer, secretAWS, secretAPIKey, secretCard,
		"alice.secret", "c2VjcmV0LXBheWxvYWQ", "ZZZZ5EXAMPLE", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}
	texts := diskTexts(t, dir)
	var all [][]byte
	for where, b := range texts {
		all = append(all, b)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q", where, s)
			}
		}
	}
	// The search sees stored text: what was pushed beside the secrets is
	// found, for each signal.
	for _, canary := range []string{"canary-line-9c1f", "canary-otlp-log-5d2a", "canary-span-77b0", "canary-series-e41c"} {
		if !bytes.Contains(bytes.Join(all, nil), []byte(canary)) {
			t.Errorf("the data directory search does not find %q, stored beside the secrets", canary)
		}
	}
}
