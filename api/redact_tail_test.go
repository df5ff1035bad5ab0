package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/weftdb/weft/ingest/redact"
)

// TestRedactionBeforeTail: a Loki tail sees what is stored, the redacted
// line, never the secret (the redactor runs before the broadcaster).
func TestRedactionBeforeTail(t *testing.T) {
	red, err := redact.New(redact.Options{Rules: []redact.Rule{{Builtin: "email"}}})
	if err != nil {
		t.Fatal(err)
	}
	bc := NewLogBroadcaster()
	e := newLokiEnvWith(t, func(o *LokiOptions) { o.Broadcaster, o.redact = bc, red })
	sub := bc.subscribe(context.Background(), nil, 100, 100)
	defer bc.unsubscribe(sub)
	push := `{"streams":[{"stream":{"app":"a"},"values":[["` + strconv.FormatInt(lokiNow.UnixNano(), 10) + `","login bob@corp.example ok"]]}]}`
	resp, err := http.Post(e.srv.URL+"/loki/api/v1/push", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("push: %d", resp.StatusCode)
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if len(sub.queue) != 1 || len(sub.queue[0].entries) != 1 {
		t.Fatalf("tail queue: %+v", sub.queue)
	}
	if got := sub.queue[0].entries[0].Line; got != "login <redacted:email> ok" {
		t.Fatalf("tail got %q", got)
	}
}
