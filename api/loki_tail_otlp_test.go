package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/weftdb/weft/api"
)

// OTLP logs over HTTP and gRPC reach a Loki tail connection through the
// broadcaster they share with the Loki API, as cmd/weft wires it; records
// of other services do not.
func TestLokiTailSeesOTLPLogs(t *testing.T) {
	env := newOTLPLogsEnv(t, api.DefaultOTLPLogsOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(env.url, "http") + "/loki/api/v1/tail?" + url.Values{"query": {`{service_name="tailed"}`}}.Encode()
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()

	read := func() []string {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read tail: %v", err)
		}
		var m struct {
			Streams []struct {
				Stream map[string]string `json:"stream"`
				Values [][2]string       `json:"values"`
			} `json:"streams"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("tail message %s: %v", b, err)
		}
		var out []string
		for _, s := range m.Streams {
			for _, v := range s.Values {
				out = append(out, s.Stream["service_name"]+"/"+v[1])
			}
		}
		return out
	}

	res := postLogs(t, env.url+"/v1/logs", "application/x-protobuf", "", logsBody(t, testLogs("other", 1, 0), "application/x-protobuf"))
	if res.code != 200 {
		t.Fatalf("export other: %d", res.code)
	}
	res = postLogs(t, env.url+"/v1/logs", "application/x-protobuf", "", logsBody(t, testLogs("tailed", 2, 0), "application/x-protobuf"))
	if res.code != 200 {
		t.Fatalf("export over HTTP: %d", res.code)
	}
	if got := strings.Join(read(), ","); got != "tailed/line 0,tailed/line 1" {
		t.Fatalf("tail after HTTP export: %q", got)
	}
	if _, err := plogotlp.NewGRPCClient(env.conn).Export(ctx, plogotlp.NewExportRequestFromLogs(testLogs("tailed", 1, 0))); err != nil {
		t.Fatalf("export over gRPC: %v", err)
	}
	if got := strings.Join(read(), ","); got != "tailed/line 0" {
		t.Fatalf("tail after gRPC export: %q", got)
	}
}
