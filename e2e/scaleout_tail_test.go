package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
)

// checkClusterTail: an ingester's Loki tail sends the lines it applies
// from the log, of its own partition only; a querier, which applies
// nothing, refuses tail with 501 instead of answering nothing.
func checkClusterTail(t *testing.T, c *scaleCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	in := c.ingesters[2] // partition 1's
	q := url.Values{"query": {`{job="scaleout"}`}}.Encode()
	ws, _, err := websocket.Dial(ctx, "ws://"+in.addr+"/loki/api/v1/tail?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	lines := 0
	for lines < 8 {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("tail of %s after %d lines: %v", in.name, lines, err)
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
		for _, s := range m.Streams {
			// Tail shows structured metadata as labels; the stream the
			// partition hash saw has none of it.
			delete(s.Stream, "detected_level")
			if p := record.PartitionOf(labels.FromMap(s.Stream), clusterPartitions); p != 1 {
				t.Fatalf("partition 1's ingester tailed %v, of partition %d", s.Stream, p)
			}
			lines += len(s.Values)
		}
	}
	resp, err := httpClient.Get(c.querier.url() + "/loki/api/v1/tail?" + q)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Fatalf("tail on the querier: %s, want 501", resp.Status)
	}
}
