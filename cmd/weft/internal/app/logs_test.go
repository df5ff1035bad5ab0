package app

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestLokiServed pushes a log line through the Loki API of the running
// server, finds it with a line filter and in label values, and finds it
// again after a restart. (That log streams and metric series share one
// index is tested in storage/logstore.)
func TestLokiServed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	dir := t.TempDir()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	now := time.Now().Truncate(time.Millisecond)

	start := func() (*App, string) {
		a, err := New(ctx, testOptions(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return a, "http://" + a.Addr().String()
	}
	a, base := start()

	push := `{"streams":[{"stream":{"job":"trainer","run_id":"r42"},"values":[["` +
		strconv.FormatInt(now.UnixNano(), 10) + `","step 100 loss=0.25 trace_id=4bf92f3577b34da6a3ce929d0e0e4736"]]}]}`
	resp, err := client.Post(base+"/loki/api/v1/push", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("loki push: %d", resp.StatusCode)
	}

	logQuery := func(base string) string {
		q := base + "/loki/api/v1/query_range?" + url.Values{
			"query": {`{run_id="r42"} |= "4bf92f3577b34da6a3ce929d0e0e4736"`},
			"start": {strconv.FormatInt(now.Add(-time.Minute).UnixNano(), 10)},
			"end":   {strconv.FormatInt(now.Add(time.Minute).UnixNano(), 10)},
		}.Encode()
		code, body := getBody(t, client, q)
		if code != 200 {
			t.Fatalf("loki query: %d %s", code, body)
		}
		return body
	}
	if body := logQuery(base); !strings.Contains(body, `"step 100 loss=0.25 trace_id=4bf92f3577b34da6a3ce929d0e0e4736"`) {
		t.Fatalf("loki query lacks the line: %s", body)
	}
	if code, body := getBody(t, client, base+"/loki/api/v1/label/run_id/values"); code != 200 || !strings.Contains(body, `"r42"`) {
		t.Fatalf("loki label values: %d %s", code, body)
	}
	if code, body := getBody(t, client, base+"/ready"); code != 200 {
		t.Fatalf("/ready: %d %s", code, body)
	}

	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	a, base = start()
	defer func() {
		if err := a.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	if body := logQuery(base); !strings.Contains(body, "step 100 loss=0.25") {
		t.Fatalf("after restart the line is gone: %s", body)
	}
}
