package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

// TestLokiTailServed: a Loki tail connection of the running server gets
// lines pushed through the Loki API and OTLP logs (main port), and ends
// when the server stops, leaving no goroutine behind.
func TestLokiTailServed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := New(ctx, testOptions(t, t.TempDir()))
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

	c, _, err := websocket.Dial(ctx, "ws://"+a.Addr().String()+"/loki/api/v1/tail?"+
		url.Values{"query": {`{service_name="tailed"}`}}.Encode(), &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() string {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read tail: %v", err)
		}
		var m struct {
			Streams []struct {
				Values [][2]string `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("tail message %s: %v", b, err)
		}
		var out []string
		for _, s := range m.Streams {
			for _, v := range s.Values {
				out = append(out, v[1])
			}
		}
		return strings.Join(out, ",")
	}
	post := func(path, ct, body string, want int) {
		t.Helper()
		resp, err := client.Post(base+path, ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("POST %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	post("/loki/api/v1/push", "application/json",
		`{"streams":[{"stream":{"service_name":"other"},"values":[["`+now+`","not this"]]},{"stream":{"service_name":"tailed"},"values":[["`+now+`","via loki"]]}]}`, http.StatusNoContent)
	if got := read(); got != "via loki" {
		t.Fatalf("tail after Loki push: %q", got)
	}
	post("/otlp/v1/logs", "application/json",
		`{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"tailed"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"`+now+`","body":{"stringValue":"via otlp"}}]}]}]}`, http.StatusOK)
	if got := read(); got != "via otlp" {
		t.Fatalf("tail after OTLP export: %q", got)
	}

	stopped = true
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err == nil {
		t.Fatal("tail connection open after Stop")
	}
}
