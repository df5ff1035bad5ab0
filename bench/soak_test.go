package bench

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/prometheus/prometheus/prompb"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/weftdb/weft/bench/internal/push"
	"github.com/weftdb/weft/bench/scenario"
)

func TestSoakAccounting(t *testing.T) {
	var c soakCounter
	// A request refused twice with 429, then acknowledged.
	c.attempt(push.Attempt{Code: http.StatusTooManyRequests})
	c.attempt(push.Attempt{Code: http.StatusTooManyRequests})
	c.attempt(push.Attempt{Code: http.StatusOK})
	id := soakTraceID(7)
	c.done(true, 100, id, 300*time.Millisecond, "HTTP 429: over budget")
	for i := range 98 {
		c.attempt(push.Attempt{Code: http.StatusNoContent})
		c.done(true, 100, scenario.TraceID{}, time.Duration(i+1)*time.Millisecond, "")
	}
	c.attempt(push.Attempt{})
	c.done(false, 100, scenario.TraceID{}, time.Second, "post: connection refused")
	c.badDone(http.StatusBadRequest)
	c.badDone(http.StatusRequestEntityTooLarge)
	c.badDone(http.StatusInternalServerError)
	c.badDone(0)

	r := c.result("remote_write", 9_850, nil)
	want := SoakSignal{Path: "remote_write", Requests: 100, Acked: 99, AckedItems: 9_900, Stored: 9_850, Lost: 50,
		UnackedItems: 100, Status429: 2, BadRequests: 4, BadNot4xx: 2, AckP50Ms: 50, AckP99Ms: 98, LastError: "post: connection refused"}
	if r.Status[http.StatusTooManyRequests] != 2 || r.Status[0] != 1 || r.BadStatus[http.StatusBadRequest] != 1 || r.BadStatus[0] != 1 {
		t.Errorf("status %v, bad status %v", r.Status, r.BadStatus)
	}
	r.Status, r.BadStatus = nil, nil
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("result\n %+v\nwant\n %+v", r, want)
	}
	if len(c.ids) != 1 || c.ids[0] != id {
		t.Errorf("trace ids %v", c.ids)
	}
	// Not measured: nothing is called lost.
	if r := c.result("otlp_traces", -1, errors.New("weft exited")); r.Lost != 0 || r.StoredError != "weft exited" {
		t.Errorf("unmeasured %+v", r)
	}
	// More stored than acknowledged (a retry of a stored request): not lost.
	if r := c.result("otlp_traces", 20_000, nil); r.Lost != 0 {
		t.Errorf("over-stored %+v", r)
	}
}

func TestSoakMarkdown(t *testing.T) {
	r := &SoakReport{DurationS: 60, RatePerPath: 20, Signals: []SoakSignal{{Path: "loki_push", Acked: 3}},
		Queries: SoakQueries{Run: 10}, Cgroup: SoakCgroup{NotUsedWhy: "create cgroup: permission denied"}}
	md := SoakMarkdown(r)
	for _, s := range []string{"(short try)", "| loki_push |", "kept answering: true", "no memory cgroup (create cgroup: permission denied)"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	if (SoakQueries{Run: 10, Failed: 1}).KeptAnswering() || (SoakQueries{}).KeptAnswering() {
		t.Error("KeptAnswering with a failure or no query")
	}
}

// TestSoakRequests: the good requests decode and carry what they claim.
func TestSoakRequests(t *testing.T) {
	o := DefaultSoakOptions()
	o.ItemsPerRequest = 30
	paths := soakPaths(o, time.Unix(1_700_000_000, 0))
	byName := map[string]*soakPath{}
	for _, p := range paths {
		byName[p.name] = p
		if _, _, _, err := p.good(3); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	}
	body, items, _, _ := byName["remote_write"].good(3)
	raw, err := s2.Decode(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(raw); err != nil || len(wr.Timeseries) != 30 || items != 30 || wr.Timeseries[0].Samples[0].Timestamp != 1_700_000_000_003 {
		t.Fatalf("remote write %v: %d series, %d items", err, len(wr.Timeseries), items)
	}
	body, items, _, _ = byName["loki_push"].good(3)
	var push struct {
		Streams []struct {
			Values [][2]string `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(body, &push); err != nil || len(push.Streams) != 1 || len(push.Streams[0].Values) != 30 || items != 30 {
		t.Fatalf("loki push %v: %s", err, body)
	}
	body, items, id, _ := byName["otlp_traces"].good(3)
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil || req.Traces().SpanCount() != 30 || items != 30 || id != soakTraceID(3) {
		t.Fatalf("traces %v: %d spans", err, req.Traces().SpanCount())
	}
}
