package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/weftdb/weft/cluster/record"
)

// checkClusterTail: an ingester's Loki tail sends the lines it applies
// from the log, of its own partition only; a querier's tail streams every
// partition from one of its ingesters (partition 0 has two: its lines come
// once), lines from both partitions, none twice.
func checkClusterTail(t *testing.T, c *scaleCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	in := c.ingesters[2] // partition 1's
	q := url.Values{"query": {`{job="scaleout"}`}}.Encode()
	readTail(ctx, t, "ws://"+in.addr+"/loki/api/v1/tail?"+q, 8, func(ls labels.Labels, _ [2]string) {
		if p := record.PartitionOf(ls, clusterPartitions); p != 1 {
			t.Fatalf("partition 1's ingester tailed %v, of partition %d", ls, p)
		}
	})

	q = url.Values{"query": {`{job="scaleout"}`}, "start": {fmt.Sprint(time.Now().UnixNano())}, "limit": {"1000"}}.Encode()
	seen := map[string]bool{}
	parts := map[int32]int{}
	readTail(ctx, t, "ws://"+strings.TrimPrefix(c.querier.url(), "http://")+"/loki/api/v1/tail?"+q, 40, func(ls labels.Labels, v [2]string) {
		k := ls.String() + " " + v[0] + " " + v[1]
		if seen[k] {
			t.Fatalf("the querier's tail sent %s twice", k)
		}
		seen[k] = true
		parts[record.PartitionOf(ls, clusterPartitions)]++
	})
	if len(parts) != clusterPartitions {
		t.Fatalf("the querier's tail sent lines of partitions %v, want all %d", parts, clusterPartitions)
	}
}

// readTail reads a tail connection until it sent n lines, calling f with
// each line's stream (as the distributor hashed it: tail shows structured
// metadata as labels, which the stream has none of) and [ts, line].
func readTail(ctx context.Context, t *testing.T, u string, n int, f func(ls labels.Labels, v [2]string)) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	lines := 0
	for lines < n {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("tail %s after %d lines: %v", u, lines, err)
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
			delete(s.Stream, "detected_level")
			ls := labels.FromMap(s.Stream)
			for _, v := range s.Values {
				f(ls, v)
			}
			lines += len(s.Values)
		}
	}
}
